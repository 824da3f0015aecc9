// Torch adapter for the ops with FP8 E4M3 per-token-group output (<op>_fp8): checks and row
// layouts, then one Fp8OutParams (quant/fused_fp8_params.h: the plain op's params and where q
// and the scales go) for the CPU backend (cpu/ops.h) or the CUDA core (cuda/ops.h).
// q is float8_e4m3fn of y's shape; scales fp32 [M, C / group_size] with whatever strides the
// caller gives (the wrapper allocates "row" or "mn_major"). The CUDA kernels read whole 16-byte
// vectors only: on CUDA, inputs that are not aligned for that are copied, and the CUDA impls
// check the remaining limits of quant/fused_fp8_params.h first.
#include <string>
#include <vector>

#include "common.h"
#include "rope_common.h"
#include "ltx_kernels/cpu/ops.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

void check_x(const at::Tensor& x, const char* op, const char* name, int64_t min_dim) {
  check_float_type(x, op, name);
  LTX_CHECK(x.dim() >= min_dim, op, name, " must have at least ", min_dim, " dimension(s) (got shape ",
            shape_str(x.sizes()), ")");
}

void check_eps(double eps, const char* op) { LTX_CHECK(eps >= 0.0, op, "eps must be >= 0 (got ", eps, ")"); }

void check_like(const at::Tensor& t, const at::Tensor& x, const char* op, const char* tn,
                const char* xn) {
  check_same_device(t, x, op, tn, xn);
  check_same_dtype(t, x, op, tn, xn);
  LTX_CHECK(t.sizes() == x.sizes(), op, tn, " must have the shape of ", xn, " (got ",
            shape_str(t.sizes()), " and ", shape_str(x.sizes()), ")");
}

// q: float8_e4m3fn of shape `ysh`; scales: fp32 [M, C / group] (any strides); group divides C.
void check_fp8_out(const at::Tensor& q, const at::Tensor& scales, const at::Tensor& x,
                   c10::IntArrayRef ysh, int64_t group, const char* op) {
  LTX_CHECK(q.scalar_type() == at::kFloat8_e4m3fn, op, "q must be float8_e4m3fn (got ", q.scalar_type(), ")");
  check_same_device(q, x, op, "q", "x");
  LTX_CHECK(scales.scalar_type() == at::kFloat, op, "scales must be float32 (got ", scales.scalar_type(), ")");
  check_same_device(scales, x, op, "scales", "x");
  LTX_CHECK(group > 0, op, "group_size must be > 0 (got ", group, ")");
  LTX_CHECK(q.sizes() == ysh, op, "q must have shape ", shape_str(ysh), " (got ", shape_str(q.sizes()), ")");
  const int64_t C = ysh.back();
  LTX_CHECK(C % group == 0, op, "the row width must be a multiple of group_size (got ", C,
            " and group_size ", group, ")");
  int64_t M = 1;
  for (size_t d = 0; d + 1 < ysh.size(); ++d) M *= ysh[d];
  LTX_CHECK(scales.dim() == 2 && scales.size(0) == M && scales.size(1) == C / group, op,
            "scales must have shape [M, C / group_size] = [", M, ", ", C / group, "] (got ",
            shape_str(scales.sizes()), ")");
}

// weight: 1-D with C elements, x's dtype.
void check_weight(const std::optional<at::Tensor>& t, const at::Tensor& x, const char* op) {
  if (!t.has_value()) return;
  const int64_t cols = x.size(-1);
  check_same_device(*t, x, op, "weight", "x");
  check_same_dtype(*t, x, op, "weight", "x");
  LTX_CHECK(t->dim() == 1 && t->size(0) == cols, op, "weight must be 1-D with x.shape[-1] = ", cols,
            " elements (got shape ", shape_str(t->sizes()), ")");
}

// Per-sample [B, C] (or [B, 1, .., 1, C]) or per-token (x.shape) modulation table.
void check_table_shape(const at::Tensor& t, const at::Tensor& x, const char* op, const char* name) {
  check_same_device(t, x, op, name, "x");
  check_same_dtype(t, x, op, name, "x");
  const int64_t B = x.size(0), C = x.size(-1);
  bool per_sample = t.dim() >= 2 && t.size(0) == B && t.size(-1) == C && (t.dim() == 2 || t.dim() == x.dim());
  for (int64_t d = 1; per_sample && d + 1 < t.dim(); ++d) per_sample = t.size(d) == 1;
  LTX_CHECK(per_sample || t.sizes() == x.sizes(), op, name,
            " must be [B, C] (per sample) or [B, S, C] = x.shape (per token), with B = x.shape[0] = ", B,
            " and C = x.shape[-1] = ", C, " (got ", name, " ", shape_str(t.sizes()), " for x ",
            shape_str(x.sizes()), ")");
}

// Whole 16-byte vectors: a 16-byte aligned base and (beyond one row) a row stride of whole vectors.
bool vector_rows(const at::Tensor& t, const RowLayout& l) {
  const int64_t v = 16 / t.element_size();
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0 && (l.rows <= 1 || l.stride % v == 0);
}

// The tensor a row input is read from: t itself when row-addressable (on CUDA also
// vector_rows), else one (aligned) contiguous copy.
template <class P>
const at::Tensor& rows_for(Prepared<P>& pr, const at::Tensor& t) {
  const at::Tensor& h = pr.rows_source(t);
  if (h.is_cuda() && !vector_rows(h, *as_rows(h))) return pr.keep(t.clone(at::MemoryFormat::Contiguous));
  return h;
}

// A modulation table as the kernels read it (rows_for's copies apply).
template <class P>
AnyModTable table_arg(Prepared<P>& pr, const at::Tensor& t, const at::Tensor& x) {
  const InRows l = in_rows(rows_for(pr, t));
  const int64_t rows = x.numel() / x.size(-1);
  const bool per_token = t.sizes() == x.sizes();
  return AnyModTable{l.data, l.layout.rows <= 1 ? 0 : l.layout.stride, per_token ? 1 : rows / x.size(0)};
}

// weight, contiguous (and on CUDA 16-byte aligned), or nullptr.
template <class P>
const void* weight_arg(Prepared<P>& pr, const std::optional<at::Tensor>& t) {
  if (!t.has_value()) return nullptr;
  const at::Tensor& w = pr.keep(t->contiguous());
  if (!w.is_cuda() || reinterpret_cast<uintptr_t>(w.data_ptr()) % 16 == 0) return w.data_ptr();
  return pr.keep(w.clone(at::MemoryFormat::Contiguous)).data_ptr();
}

// q and the scales (checked by check_fp8_out); q must be row-addressable.
Fp8GroupOut fp8_out(const at::Tensor& q, const at::Tensor& scales, int64_t group, const char* op) {
  const RowLayout ql = output_rows(q, op);
  return Fp8GroupOut{static_cast<uint8_t*>(q.data_ptr()), ql.stride, scales.data_ptr<float>(), scales.stride(0),
                     scales.stride(1), group};
}

// The row input x (rows_for's copies apply) and the FP8 output of an <op>_fp8: fills p.op.x,
// p.op.dtype and p.q; q must be row-addressable, rows of at most 2^31-1 elements.
template <class P>
void set_fp8_rows(Prepared<Fp8OutParams<P>>& pr, Fp8OutParams<P>& p, const at::Tensor& x, const at::Tensor& q,
                  const at::Tensor& scales, int64_t group, const char* op) {
  p.op.x = in_rows(rows_for(pr, x));
  p.q = fp8_out(q, scales, group, op);
  check_rows_fit(p.op.x.layout, op);
  p.op.dtype = dtype_of(x);
}

Prepared<RmsNormFp8Params> make_rms_norm_fp8_params(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                                                    const std::optional<at::Tensor>& weight, double eps,
                                                    int64_t group_size) {
  constexpr const char* op = "rms_norm_fp8";
  check_x(x, op, "x", 1);
  check_eps(eps, op);
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  check_weight(weight, x, op);
  Prepared<RmsNormFp8Params> pr;
  if (x.numel() == 0) return pr;
  RmsNormFp8Params& p = pr.emplace();
  p.op.weight = weight_arg(pr, weight);
  set_fp8_rows(pr, p, x, q, scales, group_size, op);
  p.op.eps = float(eps);
  return pr;
}

Prepared<FusedNormFp8Params> make_adaln_rms_norm_fp8_params(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                                                            const at::Tensor& scale, const at::Tensor& shift,
                                                            const std::optional<at::Tensor>& weight, double eps,
                                                            int64_t group_size) {
  constexpr const char* op = "adaln_rms_norm_fp8";
  check_x(x, op, "x", 2);
  check_eps(eps, op);
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  check_table_shape(scale, x, op, "scale");
  check_table_shape(shift, x, op, "shift");
  check_weight(weight, x, op);
  Prepared<FusedNormFp8Params> pr;
  if (x.numel() == 0) return pr;
  FusedNormFp8Params& p = pr.emplace();
  p.op.weight = weight_arg(pr, weight);
  set_fp8_rows(pr, p, x, q, scales, group_size, op);
  p.op.scale = table_arg(pr, scale, x);
  p.op.shift = table_arg(pr, shift, x);
  p.op.eps = float(eps);
  return pr;
}

Prepared<FusedNormFp8Params> make_gated_residual_fp8_params(at::Tensor& q, at::Tensor& scales, at::Tensor& h_out,
                                                            const at::Tensor& h, const at::Tensor& y,
                                                            const at::Tensor& gate, const at::Tensor& scale,
                                                            const at::Tensor& shift,
                                                            const std::optional<at::Tensor>& weight, double eps,
                                                            int64_t group_size) {
  constexpr const char* op = "gated_residual_adaln_rms_norm_fp8";
  check_x(h, op, "h", 2);
  check_eps(eps, op);
  check_like(y, h, op, "y", "h");
  check_like(h_out, h, op, "h_out", "h");
  check_fp8_out(q, scales, h, h.sizes(), group_size, op);
  check_table_shape(gate, h, op, "gate");
  check_table_shape(scale, h, op, "scale");
  check_table_shape(shift, h, op, "shift");
  check_weight(weight, h, op);
  Prepared<FusedNormFp8Params> pr;
  if (h.numel() == 0) return pr;
  FusedNormFp8Params& p = pr.emplace();
  p.op.weight = weight_arg(pr, weight);
  const at::Tensor& hh = rows_for(pr, h);
  const at::Tensor& yh = rows_for(pr, y);
  check_no_partial_overlap(h_out, hh, op, "h");
  check_no_partial_overlap(h_out, yh, op, "y");
  p.op.x = in_rows(hh);
  p.op.x2 = in_rows(yh);
  for (const at::Tensor* t : {&gate, &scale, &shift}) {
    if (t->numel() > 0 && h_out.storage().is_alias_of(t->storage()))
      LTX_CHECK(false, op, "h_out must not share memory with gate, scale or shift");
  }
  p.op.residual_out = out_rows(h_out, op);
  p.q = fp8_out(q, scales, group_size, op);
  check_rows_fit(p.op.x.layout, op);
  p.op.gate = table_arg(pr, gate, h);
  p.op.scale = table_arg(pr, scale, h);
  p.op.shift = table_arg(pr, shift, h);
  p.op.dtype = dtype_of(h);
  p.op.eps = float(eps);
  return pr;
}

// silu_and_mul_fp8 / gelu_and_mul_fp8: x [..., 2d] -> y [..., d].
Prepared<AndMulFp8Params> make_and_mul_fp8_params(const char* op, at::Tensor& q, at::Tensor& scales,
                                                  const at::Tensor& x, bool tanh_approx, bool act_first,
                                                  int64_t group_size) {
  check_x(x, op, "x", 1);
  LTX_CHECK(x.size(-1) % 2 == 0, op, "x.shape[-1] must be even (got ", x.size(-1), ")");
  std::vector<int64_t> ysh(x.sizes().begin(), x.sizes().end());
  ysh.back() /= 2;
  check_fp8_out(q, scales, x, ysh, group_size, op);
  Prepared<AndMulFp8Params> pr;
  if (q.numel() == 0) return pr;
  AndMulFp8Params& p = pr.emplace();
  set_fp8_rows(pr, p, x, q, scales, group_size, op);
  p.op.act_first = act_first;
  p.op.tanh_approx = tanh_approx;
  return pr;
}

bool gelu_tanh_approx(c10::string_view approximate, const char* op) {
  const std::string a(approximate.data(), approximate.size());
  LTX_CHECK(a == "none" || a == "tanh", op, "approximate must be 'none' or 'tanh' (got '", a, "')");
  return a == "tanh";
}

Prepared<ActivationFp8Params> make_gelu_tanh_fp8_params(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                                                        int64_t group_size) {
  constexpr const char* op = "gelu_tanh_fp8";
  check_x(x, op, "x", 1);
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  Prepared<ActivationFp8Params> pr;
  if (x.numel() == 0) return pr;
  ActivationFp8Params& p = pr.emplace();
  set_fp8_rows(pr, p, x, q, scales, group_size, op);
  return pr;
}

Prepared<GatedAttentionFp8Params> make_gated_attention_fp8_params(at::Tensor& q, at::Tensor& scales,
                                                                  const at::Tensor& x, const at::Tensor& gate_logits,
                                                                  int64_t group_size) {
  constexpr const char* op = "gated_attention_fp8";
  check_x(x, op, "x", 1);
  check_same_device(gate_logits, x, op, "gate_logits", "x");
  check_same_dtype(gate_logits, x, op, "gate_logits", "x");
  LTX_CHECK(gate_logits.dim() == x.dim() && gate_logits.size(-1) >= 1 &&
                gate_logits.sizes().slice(0, x.dim() - 1) == x.sizes().slice(0, x.dim() - 1) &&
                x.size(-1) % gate_logits.size(-1) == 0,
            op, "gate_logits must be [..., H] with x's leading shape and H dividing x.shape[-1] (got ",
            shape_str(gate_logits.sizes()), " for x ", shape_str(x.sizes()), ")");
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  Prepared<GatedAttentionFp8Params> pr;
  if (x.numel() == 0) return pr;
  GatedAttentionFp8Params& p = pr.emplace();
  p.op.heads = gate_logits.size(-1);
  p.op.head_dim = x.size(-1) / p.op.heads;
  set_fp8_rows(pr, p, x, q, scales, group_size, op);
  p.op.gate = in_rows(pr.rows_source(gate_logits));
  return pr;
}

// cos/sin with 16-byte aligned rows on CUDA (the kernels read whole vectors): copied when not.
Table fp8_table(const at::Tensor& t0, bool per_head) {
  Table t = table_of(t0, per_head);
  if (!t.t.is_cuda()) return t;
  const int64_t k = 16 / t.t.element_size();
  const bool ok = reinterpret_cast<uintptr_t>(t.t.data_ptr()) % 16 == 0 && t.st.b % k == 0 &&
                  t.st.h % k == 0 && t.st.s % k == 0;
  return ok ? t : table_of(t0.clone(at::MemoryFormat::Contiguous), per_head);
}

// rms_norm_rope_fp8 / rms_norm_split_rope_fp8, after the shape checks of rope_common.h.
Prepared<RopeFp8Params> make_norm_rope_fp8_params(const char* op, at::Tensor& q, at::Tensor& scales,
                                                  const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                                  const std::optional<at::Tensor>& weight, double eps,
                                                  int64_t group_size, const RopeShape& shape) {
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  Prepared<RopeFp8Params> pr;
  if (x.numel() == 0) return pr;
  RopeFp8Params& p = pr.emplace();
  p.op.weight = weight_arg(pr, weight);
  set_fp8_rows(pr, p, x, q, scales, group_size, op);
  const Table ct = fp8_table(cos, shape.split), sn = fp8_table(sin, shape.split);
  pr.keep(ct.t);
  pr.keep(sn.t);
  p.op.tables = rope_tables(ct, sn);
  p.op.shape = shape;
  p.op.eps = float(eps);
  return pr;
}

Prepared<RopeFp8Params> make_rms_norm_rope_fp8_params(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                                                      const at::Tensor& cos, const at::Tensor& sin,
                                                      const std::optional<at::Tensor>& weight, double eps,
                                                      int64_t group_size) {
  constexpr const char* op = "rms_norm_rope_fp8";
  check_float_type(x, op, "x");
  const RopeShape shape = check_norm_rope(x, cos, sin, weight, eps, op);
  return make_norm_rope_fp8_params(op, q, scales, x, cos, sin, weight, eps, group_size, shape);
}

Prepared<RopeFp8Params> make_rms_norm_split_rope_fp8_params(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                                                            const at::Tensor& cos, const at::Tensor& sin,
                                                            const std::optional<at::Tensor>& weight, double eps,
                                                            int64_t group_size) {
  constexpr const char* op = "rms_norm_split_rope_fp8";
  check_float_type(x, op, "x");
  const RopeShape shape = check_norm_split_rope(x, cos, sin, weight, eps, op);
  return make_norm_rope_fp8_params(op, q, scales, x, cos, sin, weight, eps, group_size, shape);
}

#ifdef LTX_KERNELS_WITH_CUDA
// The CUDA path's limits (cuda/ops.h) for a row of `cols` outputs, and q's alignment.
template <class P>
void check_cuda_path(const Prepared<Fp8OutParams<P>>& pr, const at::Tensor& x, int64_t cols, const char* op) {
  if (!pr.params) return;
  const Fp8GroupOut& o = pr.params->q;
  const int64_t group = o.group;
  const char* why = fused_fp8_cuda_unsupported(int(x.element_size()), cols, group);
  LTX_CHECK(why == nullptr, op, "on CUDA, ", why, " (got group_size ", group, ", row width ", cols,
            ", dtype ", x.scalar_type(), ")");
  const int64_t rows = pr.params->op.x.layout.rows;
  LTX_CHECK(reinterpret_cast<uintptr_t>(o.q) % 16 == 0 && (rows <= 1 || o.q_stride % (16 / x.element_size()) == 0),
            op, "on CUDA, q must be 16-byte aligned with a row stride of whole 16-byte vectors");
}

// <op>_cuda of an FP8-output op: the CUDA path's limits for rows of `cols` outputs, then the core.
template <class P>
void run_fp8_cuda(const Prepared<Fp8OutParams<P>>& pr, const at::Tensor& x, int64_t cols, const char* op,
                  cudaError_t (*core)(const Fp8OutParams<P>&, cudaStream_t)) {
  check_cuda_path(pr, x, cols, op);
  run_cuda(pr, x, op, core);
}
#endif

}  // namespace

void rms_norm_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const std::optional<at::Tensor>& weight,
                      double eps, int64_t group_size) {
  run_cpu(make_rms_norm_fp8_params(q, scales, x, weight, eps, group_size), cpu::rms_norm_fp8);
}

void adaln_rms_norm_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& scale,
                            const at::Tensor& shift, const std::optional<at::Tensor>& weight, double eps,
                            int64_t group_size) {
  run_cpu(make_adaln_rms_norm_fp8_params(q, scales, x, scale, shift, weight, eps, group_size),
          cpu::adaln_rms_norm_fp8);
}

void gated_residual_adaln_rms_norm_fp8_cpu(at::Tensor& q, at::Tensor& scales, at::Tensor& h_out, const at::Tensor& h,
                                           const at::Tensor& y, const at::Tensor& gate, const at::Tensor& scale,
                                           const at::Tensor& shift, const std::optional<at::Tensor>& weight,
                                           double eps, int64_t group_size) {
  run_cpu(make_gated_residual_fp8_params(q, scales, h_out, h, y, gate, scale, shift, weight, eps, group_size),
          cpu::gated_residual_adaln_rms_norm_fp8);
}

void silu_and_mul_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, bool act_first, int64_t group_size) {
  run_cpu(make_and_mul_fp8_params("silu_and_mul_fp8", q, scales, x, false, act_first, group_size),
          cpu::silu_and_mul_fp8);
}

void gelu_and_mul_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, c10::string_view approximate,
                          bool act_first, int64_t group_size) {
  const bool tanh_approx = gelu_tanh_approx(approximate, "gelu_and_mul_fp8");
  run_cpu(make_and_mul_fp8_params("gelu_and_mul_fp8", q, scales, x, tanh_approx, act_first, group_size),
          cpu::gelu_and_mul_fp8);
}

void gelu_tanh_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, int64_t group_size) {
  run_cpu(make_gelu_tanh_fp8_params(q, scales, x, group_size), cpu::gelu_tanh_fp8);
}

void gated_attention_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& gate_logits,
                             int64_t group_size) {
  run_cpu(make_gated_attention_fp8_params(q, scales, x, gate_logits, group_size), cpu::gated_attention_fp8);
}

void rms_norm_rope_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& cos,
                           const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps,
                           int64_t group_size) {
  run_cpu(make_rms_norm_rope_fp8_params(q, scales, x, cos, sin, weight, eps, group_size), cpu::rms_norm_rope_fp8);
}

void rms_norm_split_rope_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& cos,
                                 const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps,
                                 int64_t group_size) {
  run_cpu(make_rms_norm_split_rope_fp8_params(q, scales, x, cos, sin, weight, eps, group_size),
          cpu::rms_norm_split_rope_fp8);
}

#ifdef LTX_KERNELS_WITH_CUDA
void rms_norm_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const std::optional<at::Tensor>& weight,
                       double eps, int64_t group_size) {
  run_fp8_cuda(make_rms_norm_fp8_params(q, scales, x, weight, eps, group_size),
               x, x.size(-1), "rms_norm_fp8", ltx_kernels::rms_norm_fp8);
}

void adaln_rms_norm_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& scale,
                             const at::Tensor& shift, const std::optional<at::Tensor>& weight, double eps,
                             int64_t group_size) {
  run_fp8_cuda(make_adaln_rms_norm_fp8_params(q, scales, x, scale, shift, weight, eps, group_size),
               x, x.size(-1), "adaln_rms_norm_fp8", ltx_kernels::adaln_rms_norm_fp8);
}

void gated_residual_adaln_rms_norm_fp8_cuda(at::Tensor& q, at::Tensor& scales, at::Tensor& h_out, const at::Tensor& h,
                                            const at::Tensor& y, const at::Tensor& gate, const at::Tensor& scale,
                                            const at::Tensor& shift, const std::optional<at::Tensor>& weight,
                                            double eps, int64_t group_size) {
  constexpr const char* op = "gated_residual_adaln_rms_norm_fp8";
  const auto pr = make_gated_residual_fp8_params(q, scales, h_out, h, y, gate, scale, shift, weight, eps, group_size);
  check_cuda_path(pr, h, h.size(-1), op);
  if (pr.params) {
    const OutRows& ho = pr.params->op.residual_out;
    LTX_CHECK(reinterpret_cast<uintptr_t>(ho.data) % 16 == 0 &&
                  (ho.layout.rows <= 1 || ho.layout.stride % (16 / h.element_size()) == 0),
              op, "on CUDA, h_out must be 16-byte aligned with a row stride of whole 16-byte vectors");
  }
  run_cuda(pr, h, op, ltx_kernels::gated_residual_adaln_rms_norm_fp8);
}

void silu_and_mul_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, bool act_first,
                           int64_t group_size) {
  run_fp8_cuda(make_and_mul_fp8_params("silu_and_mul_fp8", q, scales, x, false, act_first, group_size),
               x, x.size(-1) / 2, "silu_and_mul_fp8", ltx_kernels::silu_and_mul_fp8);
}

void gelu_and_mul_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, c10::string_view approximate,
                           bool act_first, int64_t group_size) {
  constexpr const char* op = "gelu_and_mul_fp8";
  const bool tanh_approx = gelu_tanh_approx(approximate, op);
  const auto pr = make_and_mul_fp8_params(op, q, scales, x, tanh_approx, act_first, group_size);
  check_cuda_path(pr, x, x.size(-1) / 2, op);
  run_cuda(pr, x, op, ltx_kernels::gelu_and_mul_fp8);
}

void gelu_tanh_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, int64_t group_size) {
  run_fp8_cuda(make_gelu_tanh_fp8_params(q, scales, x, group_size),
               x, x.size(-1), "gelu_tanh_fp8", ltx_kernels::gelu_tanh_fp8);
}

void gated_attention_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& gate_logits,
                              int64_t group_size) {
  run_fp8_cuda(make_gated_attention_fp8_params(q, scales, x, gate_logits, group_size),
               x, x.size(-1), "gated_attention_fp8", ltx_kernels::gated_attention_fp8);
}

void rms_norm_rope_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps,
                            int64_t group_size) {
  run_fp8_cuda(make_rms_norm_rope_fp8_params(q, scales, x, cos, sin, weight, eps, group_size),
               x, x.size(-1), "rms_norm_rope_fp8", ltx_kernels::rms_norm_rope_fp8);
}

void rms_norm_split_rope_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& cos,
                                  const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps,
                                  int64_t group_size) {
  constexpr const char* op = "rms_norm_split_rope_fp8";
  const auto pr = make_rms_norm_split_rope_fp8_params(q, scales, x, cos, sin, weight, eps, group_size);
  check_cuda_path(pr, x, x.size(-1), op);
  if (pr.params) {
    const int64_t head_dim = pr.params->op.shape.head_dim;
    const char* why = split_rope_fp8_cuda_unsupported(int(x.element_size()), head_dim);
    LTX_CHECK(why == nullptr, op, "on CUDA, ", why, " (got head dim ", head_dim, ", dtype ", x.scalar_type(), ")");
  }
  run_cuda(pr, x, op, ltx_kernels::rms_norm_split_rope_fp8);
}
#endif
