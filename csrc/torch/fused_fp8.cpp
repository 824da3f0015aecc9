// Torch adapter for the ops with FP8 E4M3 per-token-group output (<op>_fp8): checks, row
// layouts, dtype dispatch, then the CPU backend (cpu/fused_fp8.h) or the CUDA core
// (quant/fused_fp8.h). q is float8_e4m3fn of y's shape; scales fp32 [M, C / group_size] with
// whatever strides the caller gives (the wrapper allocates "row" or "mn_major").
#include "common.h"
#include "rope_common.h"
#include "ltx_kernels/cpu/fused_fp8.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/quant/fused_fp8.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

constexpr int64_t kCpuGrain = 16;  // rows per CPU task

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
// Returns M.
int64_t check_fp8_out(const at::Tensor& q, const at::Tensor& scales, const at::Tensor& x,
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
  return M;
}

// weight: 1-D with C elements, x's dtype; contiguous copy.
at::Tensor vector_arg(const std::optional<at::Tensor>& t, const at::Tensor& x, const char* op) {
  if (!t.has_value()) return at::Tensor();
  const int64_t cols = x.size(-1);
  check_same_device(*t, x, op, "weight", "x");
  check_same_dtype(*t, x, op, "weight", "x");
  LTX_CHECK(t->dim() == 1 && t->size(0) == cols, op, "weight must be 1-D with x.shape[-1] = ", cols,
            " elements (got shape ", shape_str(t->sizes()), ")");
  return t->contiguous();
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

// Row-addressable input; on CUDA also 16-byte aligned with a row stride of whole 16-byte
// vectors (the fused kernels have only the vector path): otherwise one aligned copy.
RowLayout rows_for(const at::Tensor& t, at::Tensor& holder) {
  RowLayout l = input_rows(t, holder);
  if (holder.is_cuda()) {
    const int64_t v = 16 / holder.element_size();
    const bool ok = reinterpret_cast<uintptr_t>(holder.data_ptr()) % 16 == 0 && (l.rows <= 1 || l.stride % v == 0);
    if (!ok) {
      holder = t.clone(at::MemoryFormat::Contiguous);
      l = *as_rows(holder);
    }
  }
  return l;
}

template <typename U>
ModTable<U> table_arg(const at::Tensor& t, const at::Tensor& x, at::Tensor& holder) {
  const RowLayout l = rows_for(t, holder);
  const int64_t rows = x.numel() / x.size(-1);
  const bool per_token = t.sizes() == x.sizes();
  return ModTable<U>{reinterpret_cast<const U*>(holder.data_ptr()), l.rows <= 1 ? 0 : l.stride,
                     per_token ? 1 : rows / x.size(0)};
}

at::Tensor aligned_vector(const at::Tensor& w) {
  if (!w.defined() || !w.is_cuda() || reinterpret_cast<uintptr_t>(w.data_ptr()) % 16 == 0) return w;
  return w.clone(at::MemoryFormat::Contiguous);
}

template <typename U>
const U* ptr_or_null(const at::Tensor& t) {
  return t.defined() ? reinterpret_cast<const U*>(t.data_ptr()) : nullptr;
}

cpu::Fp8GroupOutCpu cpu_out(const at::Tensor& q, const RowLayout& ql, const at::Tensor& s, int64_t group) {
  return {reinterpret_cast<uint8_t*>(q.data_ptr()), ql.stride, s.data_ptr<float>(), s.stride(0), s.stride(1), group};
}

#ifdef LTX_KERNELS_WITH_CUDA
Fp8GroupOut cuda_out(const at::Tensor& q, const RowLayout& ql, const at::Tensor& s, int64_t group) {
  return {reinterpret_cast<uint8_t*>(q.data_ptr()), ql.stride, s.data_ptr<float>(), s.stride(0), s.stride(1), group};
}

void check_cuda_shape(const at::Tensor& x, const at::Tensor& q, const RowLayout& ql, int64_t cols,
                      int64_t group, const char* op) {
  const char* why = fused_fp8_cuda_unsupported(int(x.element_size()), cols, group);
  LTX_CHECK(why == nullptr, op, "on CUDA, ", why, " (got group_size ", group, ", row width ", cols,
            ", dtype ", x.scalar_type(), ")");
  LTX_CHECK(reinterpret_cast<uintptr_t>(q.data_ptr()) % 16 == 0 && (ql.rows <= 1 || ql.stride % (16 / x.element_size()) == 0),
            op, "on CUDA, q must be 16-byte aligned with a row stride of whole 16-byte vectors");
}
#endif

}  // namespace

void rms_norm_fp8(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                  const std::optional<at::Tensor>& weight, double eps, int64_t group_size) {
  constexpr const char* op = "rms_norm_fp8";
  check_x(x, op, "x", 1);
  check_eps(eps, op);
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  at::Tensor wc = aligned_vector(vector_arg(weight, x, op));
  if (x.numel() == 0) return;
  at::Tensor xh;
  const RowLayout xl = rows_for(x, xh);
  const RowLayout ql = output_rows(q, op);
  check_rows_fit(xl, op);
  const float feps = float(eps);
  if (x.is_cpu()) {
    const auto o = cpu_out(q, ql, scales, group_size);
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* xp = ptr_or_null<scalar_t>(xh);
      auto* wp = ptr_or_null<scalar_t>(wc);
      at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::rms_norm_fp8<scalar_t>(o, xp, xl.stride, wp, b, e, xl.cols, feps);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  check_cuda_shape(x, q, ql, xl.cols, group_size, op);
  const auto o = cuda_out(q, ql, scales, group_size);
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    check_cuda(ltx_kernels::rms_norm_fp8<cuda_t>(o, ptr_or_null<cuda_t>(xh), xl.stride, ptr_or_null<cuda_t>(wc),
                                                 xl.rows, xl.cols, feps, scope.stream),
               op);
  });
#else
  no_cuda_backend(x, op);
#endif
}

void adaln_rms_norm_fp8(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& scale,
                        const at::Tensor& shift, const std::optional<at::Tensor>& weight, double eps,
                        int64_t group_size) {
  constexpr const char* op = "adaln_rms_norm_fp8";
  check_x(x, op, "x", 2);
  check_eps(eps, op);
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  check_table_shape(scale, x, op, "scale");
  check_table_shape(shift, x, op, "shift");
  at::Tensor wc = aligned_vector(vector_arg(weight, x, op));
  if (x.numel() == 0) return;
  at::Tensor xh, sch, shh;
  const RowLayout xl = rows_for(x, xh);
  const RowLayout ql = output_rows(q, op);
  check_rows_fit(xl, op);
  const float feps = float(eps);
  if (x.is_cpu()) {
    const auto o = cpu_out(q, ql, scales, group_size);
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      const auto st = table_arg<scalar_t>(scale, x, sch), ht = table_arg<scalar_t>(shift, x, shh);
      auto* xp = ptr_or_null<scalar_t>(xh);
      auto* wp = ptr_or_null<scalar_t>(wc);
      at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::adaln_rms_norm_fp8<scalar_t>(o, xp, xl.stride, st, ht, wp, b, e, xl.cols, feps);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  check_cuda_shape(x, q, ql, xl.cols, group_size, op);
  const auto o = cuda_out(q, ql, scales, group_size);
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    const auto st = table_arg<cuda_t>(scale, x, sch), ht = table_arg<cuda_t>(shift, x, shh);
    check_cuda(ltx_kernels::adaln_rms_norm_fp8<cuda_t>(o, ptr_or_null<cuda_t>(xh), xl.stride, st, ht,
                                                       ptr_or_null<cuda_t>(wc), xl.rows, xl.cols, feps,
                                                       scope.stream),
               op);
  });
#else
  no_cuda_backend(x, op);
#endif
}

void gated_residual_adaln_rms_norm_fp8(at::Tensor& q, at::Tensor& scales, at::Tensor& h_out,
                                       const at::Tensor& h, const at::Tensor& y, const at::Tensor& gate,
                                       const at::Tensor& scale, const at::Tensor& shift,
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
  at::Tensor wc = aligned_vector(vector_arg(weight, h, op));
  if (h.numel() == 0) return;
  at::Tensor hh, yh, gh, sch, shh;
  const RowLayout hl = rows_for(h, hh);
  const RowLayout yl = rows_for(y, yh);
  check_no_partial_overlap(h_out, hh, op, "h");
  check_no_partial_overlap(h_out, yh, op, "y");
  for (const at::Tensor* t : {&gate, &scale, &shift}) {
    if (t->numel() > 0 && h_out.storage().is_alias_of(t->storage()))
      LTX_CHECK(false, op, "h_out must not share memory with gate, scale or shift");
  }
  const RowLayout hol = output_rows(h_out, op);
  const RowLayout ql = output_rows(q, op);
  check_rows_fit(hl, op);
  const float feps = float(eps);
  if (h.is_cpu()) {
    const auto o = cpu_out(q, ql, scales, group_size);
    LTX_DISPATCH_FLOAT(h.scalar_type(), op, {
      const auto gt = table_arg<scalar_t>(gate, h, gh), st = table_arg<scalar_t>(scale, h, sch),
                 ht = table_arg<scalar_t>(shift, h, shh);
      auto* ho = reinterpret_cast<scalar_t*>(h_out.data_ptr());
      auto* hp = ptr_or_null<scalar_t>(hh);
      auto* yp = ptr_or_null<scalar_t>(yh);
      auto* wp = ptr_or_null<scalar_t>(wc);
      at::parallel_for(0, hl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::gated_residual_adaln_rms_norm_fp8<scalar_t>(o, ho, hol.stride, hp, hl.stride, yp, yl.stride, gt, st,
                                                         ht, wp, b, e, hl.cols, feps);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(h, op);
  check_cuda_shape(h, q, ql, hl.cols, group_size, op);
  LTX_CHECK(reinterpret_cast<uintptr_t>(h_out.data_ptr()) % 16 == 0 &&
                (hol.rows <= 1 || hol.stride % (16 / h.element_size()) == 0),
            op, "on CUDA, h_out must be 16-byte aligned with a row stride of whole 16-byte vectors");
  const auto o = cuda_out(q, ql, scales, group_size);
  LTX_DISPATCH_FLOAT(h.scalar_type(), op, {
    const auto gt = table_arg<cuda_t>(gate, h, gh), st = table_arg<cuda_t>(scale, h, sch),
               ht = table_arg<cuda_t>(shift, h, shh);
    check_cuda(ltx_kernels::gated_residual_adaln_rms_norm_fp8<cuda_t>(
                   o, reinterpret_cast<cuda_t*>(h_out.data_ptr()), hol.stride, ptr_or_null<cuda_t>(hh),
                   hl.stride, ptr_or_null<cuda_t>(yh), yl.stride, gt, st, ht, ptr_or_null<cuda_t>(wc),
                   hl.rows, hl.cols, feps, scope.stream),
               op);
  });
#else
  no_cuda_backend(h, op);
#endif
}

namespace {
// silu_and_mul_fp8 / gelu_and_mul_fp8: x [..., 2d] -> y [..., d].
void and_mul_fp8(const char* op, at::Tensor& q, at::Tensor& scales, const at::Tensor& x, int act,
                 bool act_first, int64_t group_size) {
  check_x(x, op, "x", 1);
  LTX_CHECK(x.size(-1) % 2 == 0, op, "x.shape[-1] must be even (got ", x.size(-1), ")");
  std::vector<int64_t> ysh(x.sizes().begin(), x.sizes().end());
  ysh.back() /= 2;
  check_fp8_out(q, scales, x, ysh, group_size, op);
  if (q.numel() == 0) return;
  at::Tensor xh;
  const RowLayout xl = rows_for(x, xh);
  const RowLayout ql = output_rows(q, op);
  check_rows_fit(xl, op);
  const int64_t d = xl.cols / 2;
  if (x.is_cpu()) {
    const auto o = cpu_out(q, ql, scales, group_size);
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* xp = ptr_or_null<scalar_t>(xh);
      at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::act_and_mul_fp8<scalar_t>(o, xp, xl.stride, b, e, d, act, act_first);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  check_cuda_shape(x, q, ql, d, group_size, op);
  const auto o = cuda_out(q, ql, scales, group_size);
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    check_cuda(ltx_kernels::act_and_mul_fp8<cuda_t>(o, ptr_or_null<cuda_t>(xh), xl.stride, xl.rows, d,
                                                    static_cast<Fp8Act>(act), act_first, scope.stream),
               op);
  });
#else
  no_cuda_backend(x, op);
#endif
}
}  // namespace

void silu_and_mul_fp8(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, bool act_first,
                      int64_t group_size) {
  and_mul_fp8("silu_and_mul_fp8", q, scales, x, 0, act_first, group_size);
}

void gelu_and_mul_fp8(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, c10::string_view approximate,
                      bool act_first, int64_t group_size) {
  constexpr const char* op = "gelu_and_mul_fp8";
  const std::string a(approximate.data(), approximate.size());
  LTX_CHECK(a == "none" || a == "tanh", op, "approximate must be 'none' or 'tanh' (got '", a, "')");
  and_mul_fp8(op, q, scales, x, a == "tanh" ? 2 : 1, act_first, group_size);
}

void gelu_tanh_fp8(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, int64_t group_size) {
  constexpr const char* op = "gelu_tanh_fp8";
  check_x(x, op, "x", 1);
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  if (x.numel() == 0) return;
  at::Tensor xh;
  const RowLayout xl = rows_for(x, xh);
  const RowLayout ql = output_rows(q, op);
  check_rows_fit(xl, op);
  if (x.is_cpu()) {
    const auto o = cpu_out(q, ql, scales, group_size);
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* xp = ptr_or_null<scalar_t>(xh);
      at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::gelu_tanh_fp8<scalar_t>(o, xp, xl.stride, b, e, xl.cols);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  check_cuda_shape(x, q, ql, xl.cols, group_size, op);
  const auto o = cuda_out(q, ql, scales, group_size);
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    check_cuda(ltx_kernels::gelu_tanh_fp8<cuda_t>(o, ptr_or_null<cuda_t>(xh), xl.stride, xl.rows, xl.cols,
                                                  scope.stream),
               op);
  });
#else
  no_cuda_backend(x, op);
#endif
}

void gated_attention_fp8(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& gate_logits,
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
  if (x.numel() == 0) return;
  const int64_t heads = gate_logits.size(-1), head_dim = x.size(-1) / heads;
  at::Tensor xh, gh;
  const RowLayout xl = rows_for(x, xh);
  const RowLayout gl = input_rows(gate_logits, gh);
  const RowLayout ql = output_rows(q, op);
  check_rows_fit(xl, op);
  if (x.is_cpu()) {
    const auto o = cpu_out(q, ql, scales, group_size);
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* xp = ptr_or_null<scalar_t>(xh);
      auto* gp = ptr_or_null<scalar_t>(gh);
      at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::gated_attention_fp8<scalar_t>(o, xp, xl.stride, gp, gl.stride, b, e, heads, head_dim);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  check_cuda_shape(x, q, ql, xl.cols, group_size, op);
  const auto o = cuda_out(q, ql, scales, group_size);
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    check_cuda(ltx_kernels::gated_attention_fp8<cuda_t>(o, ptr_or_null<cuda_t>(xh), xl.stride,
                                                        ptr_or_null<cuda_t>(gh), gl.stride, xl.rows, heads,
                                                        head_dim, scope.stream),
               op);
  });
#else
  no_cuda_backend(x, op);
#endif
}

// ---- RMSNorm + RoPE with FP8 output (tables as rms_norm_rope / rms_norm_split_rope)
namespace {

// cos/sin with 16-byte aligned rows on CUDA (the kernels read whole vectors): copied when not.
Table fp8_table(const at::Tensor& t0, bool per_head) {
  Table t = table_of(t0, per_head);
  if (!t.t.is_cuda()) return t;
  const int64_t k = 16 / t.t.element_size();
  const bool ok = reinterpret_cast<uintptr_t>(t.t.data_ptr()) % 16 == 0 && t.st.b % k == 0 &&
                  t.st.h % k == 0 && t.st.s % k == 0;
  return ok ? t : table_of(t0.clone(at::MemoryFormat::Contiguous), per_head);
}

void norm_rope_fp8(const char* op, at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                   const at::Tensor& cos, const at::Tensor& sin,
                   const std::optional<at::Tensor>& weight, double eps, int64_t group_size,
                   const RopeShape& shape) {
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  at::Tensor wc = aligned_vector(vector_arg(weight, x, op));
  if (x.numel() == 0) return;
  at::Tensor xh;
  const RowLayout xl = rows_for(x, xh);
  const RowLayout ql = output_rows(q, op);
  check_rows_fit(xl, op);
  const bool split = shape.split;
  const Table ct = fp8_table(cos, split), sn = fp8_table(sin, split);
  const bool f32_table = ct.t.scalar_type() == at::kFloat;
  const float feps = float(eps);
  if (x.is_cpu()) {
    const auto o = cpu_out(q, ql, scales, group_size);
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto go = [&](auto* tab_tag) {
        using tab_t = std::remove_pointer_t<decltype(tab_tag)>;
        auto* cp = reinterpret_cast<const tab_t*>(ct.t.data_ptr());
        auto* sp = reinterpret_cast<const tab_t*>(sn.t.data_ptr());
        auto* xp = ptr_or_null<scalar_t>(xh);
        auto* wp = ptr_or_null<scalar_t>(wc);
        at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
          if (split)
            cpu::rms_norm_split_rope_fp8<scalar_t, tab_t>(o, xp, xl.stride, wp, cp, ct.st, sp, sn.st, shape, feps, b, e);
          else
            cpu::rms_norm_rope_fp8<scalar_t, tab_t>(o, xp, xl.stride, wp, cp, ct.st, sp, sn.st, shape, feps, b, e);
        });
      };
      if (f32_table) go(static_cast<float*>(nullptr));
      else go(static_cast<scalar_t*>(nullptr));
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  check_cuda_shape(x, q, ql, xl.cols, group_size, op);
  if (split) {
    const char* why = split_rope_fp8_cuda_unsupported(int(x.element_size()), shape.head_dim);
    LTX_CHECK(why == nullptr, op, "on CUDA, ", why, " (got head dim ", shape.head_dim, ", dtype ",
              x.scalar_type(), ")");
  }
  const auto o = cuda_out(q, ql, scales, group_size);
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    auto go = [&](auto* tab_tag) {
      using tab_t = std::remove_pointer_t<decltype(tab_tag)>;
      auto* cp = reinterpret_cast<const tab_t*>(ct.t.data_ptr());
      auto* sp = reinterpret_cast<const tab_t*>(sn.t.data_ptr());
      auto* xp = ptr_or_null<cuda_t>(xh);
      auto* wp = ptr_or_null<cuda_t>(wc);
      check_cuda(split ? ltx_kernels::rms_norm_split_rope_fp8<cuda_t, tab_t>(o, xp, xl.stride, wp, cp, ct.st, sp,
                                                                              sn.st, shape, feps, scope.stream)
                       : ltx_kernels::rms_norm_rope_fp8<cuda_t, tab_t>(o, xp, xl.stride, wp, cp, ct.st, sp, sn.st,
                                                                        shape, feps, scope.stream),
                 op);
    };
    if (f32_table) go(static_cast<float*>(nullptr));
    else go(static_cast<cuda_t*>(nullptr));
  });
#else
  no_cuda_backend(x, op);
#endif
}

}  // namespace

void rms_norm_rope_fp8(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& cos,
                       const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps,
                       int64_t group_size) {
  constexpr const char* op = "rms_norm_rope_fp8";
  check_float_type(x, op, "x");
  const RopeShape shape = check_norm_rope(x, cos, sin, weight, eps, op);
  norm_rope_fp8(op, q, scales, x, cos, sin, weight, eps, group_size, shape);
}

void rms_norm_split_rope_fp8(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                             const at::Tensor& cos, const at::Tensor& sin,
                             const std::optional<at::Tensor>& weight, double eps,
                             int64_t group_size) {
  constexpr const char* op = "rms_norm_split_rope_fp8";
  check_float_type(x, op, "x");
  const RopeShape shape = check_norm_split_rope(x, cos, sin, weight, eps, op);
  norm_rope_fp8(op, q, scales, x, cos, sin, weight, eps, group_size, shape);
}
