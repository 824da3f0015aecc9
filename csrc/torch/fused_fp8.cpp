// Torch adapter for the norm and RoPE ops with FP8 E4M3 per-token-group output (rms_norm_fp8,
// the AdaLN and gated-residual RMSNorms, rms_norm_rope_fp8, rms_norm_split_rope_fp8): checks and
// row layouts, then one Fp8OutParams (quant/fused_fp8_params.h: the plain op's params and where
// q and the scales go) for the CPU backend (cpu/ops.h) or the CUDA core (cuda/ops.h). q is
// float8_e4m3fn of x's shape; scales fp32 [M, C / group_size] with whatever strides the caller
// gives (the wrapper allocates "row" or "mn_major"). What the FP8-output adapters share (row
// inputs copied for the CUDA kernels' 16-byte vectors, the CUDA path's limits): fused_fp8.h.
#include "checks.h"
#include "fused_fp8.h"
#include "ltx_kernels/common/fused_norm_util.h"
#include "ltx_kernels/cpu/ops.h"
#include "prepared.h"
#include "rope_common.h"
#include "run.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

void check_eps(double eps, const char* op) { LTX_CHECK(eps >= 0.0, op, "eps must be >= 0 (got ", eps, ")"); }

void check_like(const at::Tensor& t, const at::Tensor& x, const char* op, const char* tn, const char* xn) {
  check_same_device(t, x, op, tn, xn);
  check_same_dtype(t, x, op, tn, xn);
  LTX_CHECK(t.sizes() == x.sizes(), op, tn, " must have the shape of ", xn, " (got ", shape_str(t.sizes()), " and ",
            shape_str(x.sizes()), ")");
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

// The checks every RMSNorm maker starts with: x (named `name`, >= min_dim dims), eps, q and the
// scales, weight.
void check_norm_fp8(const at::Tensor& x, const char* name, int64_t min_dim, double eps, const at::Tensor& q,
                    const at::Tensor& scales, int64_t group_size, const std::optional<at::Tensor>& weight,
                    const char* op) {
  check_x(x, op, name, min_dim);
  check_eps(eps, op);
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  check_weight(weight, x, op);
}

ModTableKind table_kind(const at::Tensor& t, const at::Tensor& x) {
  return mod_table_kind(t.dim(), t.sizes().data(), x.dim(), x.sizes().data());
}

// A modulation table (common/fused_norm_util.h's rule): per sample [B, C] (or [B, 1, .., 1, C])
// or per token (x.shape).
void check_table_shape(const at::Tensor& t, const at::Tensor& x, const char* op, const char* name) {
  check_same_device(t, x, op, name, "x");
  check_same_dtype(t, x, op, name, "x");
  LTX_CHECK(table_kind(t, x) != ModTableKind::kNone, op, name,
            " must be [B, C] (per sample) or [B, S, C] = x.shape (per token), with B = x.shape[0] = ", x.size(0),
            " and C = x.shape[-1] = ", x.size(-1), " (got ", name, " ", shape_str(t.sizes()), " for x ",
            shape_str(x.sizes()), ")");
}

// A modulation table as the kernels read it (rows_for's copies apply).
template <class P>
AnyModTable table_arg(Prepared<P>& pr, const at::Tensor& t, const at::Tensor& x) {
  const InRows l = in_rows(rows_for(pr, t));
  return mod_table(l.data, l.layout.rows, l.layout.stride, table_kind(t, x), x.numel() / x.size(-1), x.size(0));
}

// What every maker does once its inputs are checked: no params for an empty x (nullptr), else
// the params with the weight, eps, and x's rows and q / scales (set_fp8_rows) filled in.
template <class OpParams>
Fp8OutParams<OpParams>* emplace_fp8_params(Prepared<Fp8OutParams<OpParams>>& pr, const at::Tensor& x,
                                           const at::Tensor& q, const at::Tensor& scales,
                                           const std::optional<at::Tensor>& weight, double eps, int64_t group_size,
                                           const char* op) {
  if (x.numel() == 0) return nullptr;
  Fp8OutParams<OpParams>& p = pr.emplace();
  p.op.weight = weight_arg(pr, weight);
  set_fp8_rows(pr, p, x, q, scales, group_size, op);
  p.op.eps = float(eps);
  return &p;
}

Prepared<RmsNormFp8Params> make_rms_norm_fp8_params(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                                                    const std::optional<at::Tensor>& weight, double eps,
                                                    int64_t group_size) {
  constexpr const char* op = "rms_norm_fp8";
  check_norm_fp8(x, "x", 1, eps, q, scales, group_size, weight, op);
  Prepared<RmsNormFp8Params> pr;
  emplace_fp8_params(pr, x, q, scales, weight, eps, group_size, op);
  return pr;
}

Prepared<FusedNormFp8Params> make_adaln_rms_norm_fp8_params(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                                                            const at::Tensor& scale, const at::Tensor& shift,
                                                            const std::optional<at::Tensor>& weight, double eps,
                                                            int64_t group_size) {
  constexpr const char* op = "adaln_rms_norm_fp8";
  check_norm_fp8(x, "x", 2, eps, q, scales, group_size, weight, op);
  check_table_shape(scale, x, op, "scale");
  check_table_shape(shift, x, op, "shift");
  Prepared<FusedNormFp8Params> pr;
  if (FusedNormFp8Params* p = emplace_fp8_params(pr, x, q, scales, weight, eps, group_size, op)) {
    p->op.scale = table_arg(pr, scale, x);
    p->op.shift = table_arg(pr, shift, x);
  }
  return pr;
}

// h_out = h + gate * y (rows h_out may be exactly h), then the AdaLN RMSNorm of h_out into q.
Prepared<FusedNormFp8Params> make_gated_residual_fp8_params(at::Tensor& q, at::Tensor& scales, at::Tensor& h_out,
                                                            const at::Tensor& h, const at::Tensor& y,
                                                            const at::Tensor& gate, const at::Tensor& scale,
                                                            const at::Tensor& shift,
                                                            const std::optional<at::Tensor>& weight, double eps,
                                                            int64_t group_size) {
  constexpr const char* op = "gated_residual_adaln_rms_norm_fp8";
  check_norm_fp8(h, "h", 2, eps, q, scales, group_size, weight, op);
  check_like(y, h, op, "y", "h");
  check_like(h_out, h, op, "h_out", "h");
  check_table_shape(gate, h, op, "gate");
  check_table_shape(scale, h, op, "scale");
  check_table_shape(shift, h, op, "shift");
  Prepared<FusedNormFp8Params> pr;
  if (h.numel() == 0) return pr;
  const at::Tensor& hh = rows_for(pr, h);
  const at::Tensor& yh = rows_for(pr, y);
  check_no_partial_overlap(h_out, hh, op, "h");
  check_no_partial_overlap(h_out, yh, op, "y");
  for (const at::Tensor* t : {&gate, &scale, &shift})
    LTX_CHECK(t->numel() == 0 || !h_out.storage().is_alias_of(t->storage()), op,
              "h_out must not share memory with gate, scale or shift");
  FusedNormFp8Params& p = *emplace_fp8_params(pr, hh, q, scales, weight, eps, group_size, op);
  p.op.residual_out = out_rows(h_out, op);
  p.op.x2 = in_rows(yh);
  p.op.gate = table_arg(pr, gate, h);
  p.op.scale = table_arg(pr, scale, h);
  p.op.shift = table_arg(pr, shift, h);
  return pr;
}

// rms_norm_rope_fp8 / rms_norm_split_rope_fp8: x [B, S, C] and cos/sin as rope_common.h checks
// them (check_norm_rope / check_norm_split_rope give the shape).
Prepared<RopeFp8Params> make_norm_rope_fp8_params(const char* op, bool split, at::Tensor& q, at::Tensor& scales,
                                                  const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                                                  const std::optional<at::Tensor>& weight, double eps,
                                                  int64_t group_size) {
  check_float_type(x, op, "x");
  const RopeShape shape = split ? check_norm_split_rope(x, cos, sin, weight, eps, op)
                                : check_norm_rope(x, cos, sin, weight, eps, op);
  check_fp8_out(q, scales, x, x.sizes(), group_size, op);
  Prepared<RopeFp8Params> pr;
  RopeFp8Params* p = emplace_fp8_params(pr, x, q, scales, weight, eps, group_size, op);
  if (p == nullptr) return pr;
  const Table cs = fp8_table(cos, shape.split), sn = fp8_table(sin, shape.split);
  pr.keep(cs.t);
  pr.keep(sn.t);
  p->op.tables = rope_tables(cs, sn);
  p->op.shape = shape;
  return pr;
}

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

void rms_norm_rope_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& cos,
                           const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps,
                           int64_t group_size) {
  run_cpu(make_norm_rope_fp8_params("rms_norm_rope_fp8", false, q, scales, x, cos, sin, weight, eps, group_size),
          cpu::rms_norm_rope_fp8);
}

void rms_norm_split_rope_fp8_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& cos,
                                 const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps,
                                 int64_t group_size) {
  run_cpu(make_norm_rope_fp8_params("rms_norm_split_rope_fp8", true, q, scales, x, cos, sin, weight, eps, group_size),
          cpu::rms_norm_split_rope_fp8);
}

#ifdef LTX_KERNELS_WITH_CUDA
void rms_norm_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const std::optional<at::Tensor>& weight,
                       double eps, int64_t group_size) {
  run_fp8_cuda(make_rms_norm_fp8_params(q, scales, x, weight, eps, group_size), x, "rms_norm_fp8",
               ltx_kernels::rms_norm_fp8);
}

void adaln_rms_norm_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& scale,
                             const at::Tensor& shift, const std::optional<at::Tensor>& weight, double eps,
                             int64_t group_size) {
  run_fp8_cuda(make_adaln_rms_norm_fp8_params(q, scales, x, scale, shift, weight, eps, group_size), x,
               "adaln_rms_norm_fp8", ltx_kernels::adaln_rms_norm_fp8);
}

void gated_residual_adaln_rms_norm_fp8_cuda(at::Tensor& q, at::Tensor& scales, at::Tensor& h_out, const at::Tensor& h,
                                            const at::Tensor& y, const at::Tensor& gate, const at::Tensor& scale,
                                            const at::Tensor& shift, const std::optional<at::Tensor>& weight,
                                            double eps, int64_t group_size) {
  run_fp8_cuda(make_gated_residual_fp8_params(q, scales, h_out, h, y, gate, scale, shift, weight, eps, group_size),
               h, "gated_residual_adaln_rms_norm_fp8", ltx_kernels::gated_residual_adaln_rms_norm_fp8);
}

void rms_norm_rope_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps,
                            int64_t group_size) {
  run_fp8_cuda(make_norm_rope_fp8_params("rms_norm_rope_fp8", false, q, scales, x, cos, sin, weight, eps, group_size),
               x, "rms_norm_rope_fp8", ltx_kernels::rms_norm_rope_fp8);
}

void rms_norm_split_rope_fp8_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& cos,
                                  const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps,
                                  int64_t group_size) {
  run_fp8_cuda(make_norm_rope_fp8_params("rms_norm_split_rope_fp8", true, q, scales, x, cos, sin, weight, eps,
                                         group_size),
               x, "rms_norm_split_rope_fp8", ltx_kernels::rms_norm_split_rope_fp8);
}
#endif
