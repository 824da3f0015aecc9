// Torch adapter for the fused-norm family: checks (naming the op and the rule), row layouts and
// modulation tables, then one FusedNormParams (norm/fused_norm_params.h) for the CPU backend
// (cpu/ops.h) or the CUDA core (cuda/ops.h).
#include "common.h"
#include "norm_shape.h"
#include "ltx_kernels/cpu/ops.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

// x: float type, at least `min_dim` dimensions; eps >= 0.
void check_x(const at::Tensor& x, const char* op, const char* name, int64_t min_dim, double eps) {
  check_float_type(x, op, name);
  if (min_dim == 1) {
    LTX_CHECK(x.dim() >= 1, op, name, " must have at least one dimension (got a scalar)");
  } else {
    LTX_CHECK(x.dim() >= min_dim, op, name, " must have at least ", min_dim,
              " dimensions [B, ..., C] (got shape ", x.sizes(), ")");
  }
  LTX_CHECK(eps >= 0.0, op, "eps must be >= 0 (got ", eps, ")");
}

// A row input of the shape of x (residual, y): same dtype, device and shape.
void check_like(const at::Tensor& t, const at::Tensor& x, const char* op, const char* tn,
                const char* xn) {
  check_same_device(t, x, op, tn, xn);
  check_same_dtype(t, x, op, tn, xn);
  LTX_CHECK(t.sizes() == x.sizes(), op, tn, " must have the shape of ", xn, " (got ", t.sizes(),
            " and ", x.sizes(), ")");
}

// An output of the shape of x.
void check_out(const at::Tensor& out, const at::Tensor& x, const char* op, const char* on,
               const char* xn) {
  check_same_dtype(out, x, op, on, xn);
  check_same_device(out, x, op, on, xn);
  LTX_CHECK(out.sizes() == x.sizes(), op, on, " must have the shape of ", xn, " (got ",
            out.sizes(), " and ", x.sizes(), ")");
}

// The residual ops' inputs and outputs: x (at least min_dim dims), x2 and both outputs of x's
// shape, dtype and device.
void check_residual_op(const char* op, const at::Tensor& x, const char* xn, int64_t min_dim, double eps,
                       const at::Tensor& x2, const char* x2n, const at::Tensor& out, const at::Tensor& res_out,
                       const char* resn) {
  check_x(x, op, xn, min_dim, eps);
  check_like(x2, x, op, x2n, xn);
  check_out(out, x, op, "out", xn);
  check_out(res_out, x, op, resn, xn);
}

// weight / bias: 1-D with x.shape[-1] elements, x's dtype and device.
void check_vector(const std::optional<at::Tensor>& t, const at::Tensor& x, const char* op, const char* name) {
  if (!t.has_value()) return;
  const int64_t cols = x.size(-1);
  check_same_device(*t, x, op, name, "x");
  check_same_dtype(*t, x, op, name, "x");
  LTX_CHECK(t->dim() == 1 && t->size(0) == cols, op, name,
            " must be 1-D with x.shape[-1] = ", cols, " elements (got shape ", t->sizes(), ")");
}

// Two outputs written by one call must not share any byte.
void check_disjoint(const at::Tensor& a, const at::Tensor& b, const char* op, const char* an,
                    const char* bn) {
  LTX_CHECK(!bytes_overlap(a, b), op, an, " and ", bn, " must not overlap");
}

// A modulation table (scale, shift, gate) for x [B, ..., C]: per sample [B, C] (or [B, 1, ..,
// 1, C]) or per token (x.shape). Shapes are checked here; rows after the empty check.
void check_table_shape(const at::Tensor& t, const at::Tensor& x, const char* op,
                       const char* name) {
  check_same_device(t, x, op, name, "x");
  check_same_dtype(t, x, op, name, "x");
  const int64_t B = x.size(0), C = x.size(-1);
  bool per_sample = t.dim() >= 2 && t.size(0) == B && t.size(-1) == C &&
                    (t.dim() == 2 || t.dim() == x.dim());
  for (int64_t d = 1; per_sample && d + 1 < t.dim(); ++d) per_sample = t.size(d) == 1;
  const bool per_token = t.sizes() == x.sizes();
  LTX_CHECK(per_sample || per_token, op, name,
            " must be [B, C] (per sample) or [B, S, C] = x.shape (per token), with B = "
            "x.shape[0] = ",
            B, " and C = x.shape[-1] = ", C, " (got ", name, " ", t.sizes(), " for x ",
            x.sizes(), ")");
}

// The table's rows (a contiguous copy when they are not addressable); out may not partially
// overlap it. Returns the tensor read.
template <class P>
const at::Tensor& table_arg(Prepared<P>& pr, AnyModTable& tab, const at::Tensor& t, const at::Tensor& x,
                            const at::Tensor& out, const char* op, const char* name) {
  const at::Tensor& th = pr.rows_source(t);
  const int64_t rows = x.numel() / x.size(-1);
  const bool per_token = t.sizes() == x.sizes();
  tab = AnyModTable{th.data_ptr(), as_rows(th)->stride, per_token ? 1 : rows / x.size(0)};
  check_no_partial_overlap(out, th, op, name);
  return th;
}

// The inputs as the cores read them: x (and x2, the residual ops' second row input) as rows,
// weight and bias as contiguous copies; no output may partially overlap any of them. Returns the
// call's params (emplaced in pr) with p.x, p.x2, p.weight, p.bias and p.dtype filled.
FusedNormParams& read_inputs(Prepared<FusedNormParams>& pr, std::initializer_list<const at::Tensor*> outs,
                             const at::Tensor& x, const char* xn, const at::Tensor* x2, const char* x2n,
                             const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                             const char* op) {
  FusedNormParams& p = pr.emplace();
  const at::Tensor& xh = pr.rows_source(x);
  const at::Tensor* x2h = x2 != nullptr ? &pr.rows_source(*x2) : nullptr;
  const at::Tensor* wc = weight.has_value() ? &pr.keep(weight->contiguous()) : nullptr;
  const at::Tensor* bc = bias.has_value() ? &pr.keep(bias->contiguous()) : nullptr;
  for (const at::Tensor* o : outs) {
    check_no_partial_overlap(*o, xh, op, xn);
    if (x2h != nullptr) check_no_partial_overlap(*o, *x2h, op, x2n);
    if (wc != nullptr) check_no_partial_overlap(*o, *wc, op, "weight");
    if (bc != nullptr) check_no_partial_overlap(*o, *bc, op, "bias");
  }
  p.dtype = dtype_of(x);
  p.x = in_rows(xh);
  if (x2h != nullptr) p.x2 = in_rows(*x2h);
  p.weight = wc != nullptr ? wc->data_ptr() : nullptr;
  p.bias = bc != nullptr ? bc->data_ptr() : nullptr;
  p.shape = env_norm_shape(op);
  return p;
}

Prepared<FusedNormParams> make_add_rms_norm_params(at::Tensor& out, at::Tensor& residual_out, const at::Tensor& x,
                                                   const at::Tensor& residual,
                                                   const std::optional<at::Tensor>& weight, double eps) {
  constexpr const char* op = "add_rms_norm";
  check_residual_op(op, x, "x", 1, eps, residual, "residual", out, residual_out, "residual_out");
  check_vector(weight, x, op, "weight");
  Prepared<FusedNormParams> pr;
  if (x.numel() == 0) return pr;
  check_disjoint(out, residual_out, op, "out", "residual_out");
  FusedNormParams& p = read_inputs(pr, {&out, &residual_out}, x, "x", &residual, "residual", weight, std::nullopt, op);
  p.out = out_rows(out, op);
  p.residual_out = out_rows(residual_out, op);
  check_rows_fit(p.x.layout, op);
  p.eps = static_cast<float>(eps);
  return pr;
}

Prepared<FusedNormParams> make_layer_norm_params(at::Tensor& out, const at::Tensor& x,
                                                 const std::optional<at::Tensor>& weight,
                                                 const std::optional<at::Tensor>& bias, double eps) {
  constexpr const char* op = "layer_norm";
  check_x(x, op, "x", 1, eps);
  check_out(out, x, op, "out", "x");
  check_vector(weight, x, op, "weight");
  check_vector(bias, x, op, "bias");
  Prepared<FusedNormParams> pr;
  if (x.numel() == 0) return pr;
  FusedNormParams& p = read_inputs(pr, {&out}, x, "x", nullptr, nullptr, weight, bias, op);
  p.out = out_rows(out, op);
  check_rows_fit(p.x.layout, op);
  p.eps = static_cast<float>(eps);
  return pr;
}

// The modulation tables, in the order the ops check them.
void check_scale_shift(const at::Tensor& scale, const at::Tensor& shift, const at::Tensor& x, const char* op) {
  check_table_shape(scale, x, op, "scale");
  check_table_shape(shift, x, op, "shift");
}

// adaln_rms_norm and adaln_layer_norm share everything but the norm (bias: layer norm only).
Prepared<FusedNormParams> make_adaln_params(const char* op, at::Tensor& out, const at::Tensor& x,
                                            const at::Tensor& scale, const at::Tensor& shift,
                                            const std::optional<at::Tensor>& weight,
                                            const std::optional<at::Tensor>& bias, double eps) {
  check_x(x, op, "x", 2, eps);
  check_out(out, x, op, "out", "x");
  check_scale_shift(scale, shift, x, op);
  check_vector(weight, x, op, "weight");
  check_vector(bias, x, op, "bias");
  Prepared<FusedNormParams> pr;
  if (x.numel() == 0) return pr;
  FusedNormParams& p = read_inputs(pr, {&out}, x, "x", nullptr, nullptr, weight, bias, op);
  table_arg(pr, p.scale, scale, x, out, op, "scale");
  table_arg(pr, p.shift, shift, x, out, op, "shift");
  p.out = out_rows(out, op);
  check_rows_fit(p.x.layout, op);
  p.eps = static_cast<float>(eps);
  return pr;
}

Prepared<FusedNormParams> make_gated_residual_params(at::Tensor& out, at::Tensor& h_out, const at::Tensor& h,
                                                     const at::Tensor& y, const at::Tensor& gate,
                                                     const at::Tensor& scale, const at::Tensor& shift,
                                                     const std::optional<at::Tensor>& weight, double eps) {
  constexpr const char* op = "gated_residual_adaln_rms_norm";
  check_residual_op(op, h, "h", 2, eps, y, "y", out, h_out, "h_out");
  // Tables are checked against x = h (messages say "x.shape" for the activation's shape).
  check_table_shape(gate, h, op, "gate");
  check_scale_shift(scale, shift, h, op);
  check_vector(weight, h, op, "weight");
  Prepared<FusedNormParams> pr;
  if (h.numel() == 0) return pr;
  check_disjoint(out, h_out, op, "out", "h_out");
  FusedNormParams& p = read_inputs(pr, {&out, &h_out}, h, "h", &y, "y", weight, std::nullopt, op);
  const at::Tensor& gt = table_arg(pr, p.gate, gate, h, out, op, "gate");
  const at::Tensor& sc = table_arg(pr, p.scale, scale, h, out, op, "scale");
  const at::Tensor& sh = table_arg(pr, p.shift, shift, h, out, op, "shift");
  // h_out is written before scale / shift are read: it may not share bytes with any table.
  check_disjoint(h_out, gt, op, "h_out", "gate");
  check_disjoint(h_out, sc, op, "h_out", "scale");
  check_disjoint(h_out, sh, op, "h_out", "shift");
  p.out = out_rows(out, op);
  p.residual_out = out_rows(h_out, op);
  check_rows_fit(p.x.layout, op);
  p.eps = static_cast<float>(eps);
  return pr;
}

}  // namespace

void add_rms_norm_cpu(at::Tensor& out, at::Tensor& residual_out, const at::Tensor& x, const at::Tensor& residual,
                      const std::optional<at::Tensor>& weight, double eps) {
  run_cpu(make_add_rms_norm_params(out, residual_out, x, residual, weight, eps), cpu::add_rms_norm);
}

void layer_norm_cpu(at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight,
                    const std::optional<at::Tensor>& bias, double eps) {
  run_cpu(make_layer_norm_params(out, x, weight, bias, eps), cpu::layer_norm);
}

void adaln_rms_norm_cpu(at::Tensor& out, const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift,
                        const std::optional<at::Tensor>& weight, double eps) {
  run_cpu(make_adaln_params("adaln_rms_norm", out, x, scale, shift, weight, std::nullopt, eps),
          cpu::adaln_rms_norm);
}

void adaln_layer_norm_cpu(at::Tensor& out, const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift,
                          const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                          double eps) {
  run_cpu(make_adaln_params("adaln_layer_norm", out, x, scale, shift, weight, bias, eps), cpu::adaln_layer_norm);
}

void gated_residual_adaln_rms_norm_cpu(at::Tensor& out, at::Tensor& h_out, const at::Tensor& h, const at::Tensor& y,
                                       const at::Tensor& gate, const at::Tensor& scale, const at::Tensor& shift,
                                       const std::optional<at::Tensor>& weight, double eps) {
  run_cpu(make_gated_residual_params(out, h_out, h, y, gate, scale, shift, weight, eps),
          cpu::gated_residual_adaln_rms_norm);
}

#ifdef LTX_KERNELS_WITH_CUDA
void add_rms_norm_cuda(at::Tensor& out, at::Tensor& residual_out, const at::Tensor& x, const at::Tensor& residual,
                       const std::optional<at::Tensor>& weight, double eps) {
  run_norm_cuda(make_add_rms_norm_params(out, residual_out, x, residual, weight, eps), x, "add_rms_norm",
           ltx_kernels::add_rms_norm);
}

void layer_norm_cuda(at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight,
                     const std::optional<at::Tensor>& bias, double eps) {
  run_norm_cuda(make_layer_norm_params(out, x, weight, bias, eps), x, "layer_norm", ltx_kernels::layer_norm);
}

void adaln_rms_norm_cuda(at::Tensor& out, const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift,
                         const std::optional<at::Tensor>& weight, double eps) {
  run_norm_cuda(make_adaln_params("adaln_rms_norm", out, x, scale, shift, weight, std::nullopt, eps), x,
           "adaln_rms_norm", ltx_kernels::adaln_rms_norm);
}

void adaln_layer_norm_cuda(at::Tensor& out, const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift,
                           const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
                           double eps) {
  run_norm_cuda(make_adaln_params("adaln_layer_norm", out, x, scale, shift, weight, bias, eps), x, "adaln_layer_norm",
           ltx_kernels::adaln_layer_norm);
}

void gated_residual_adaln_rms_norm_cuda(at::Tensor& out, at::Tensor& h_out, const at::Tensor& h,
                                        const at::Tensor& y, const at::Tensor& gate, const at::Tensor& scale,
                                        const at::Tensor& shift, const std::optional<at::Tensor>& weight,
                                        double eps) {
  run_norm_cuda(make_gated_residual_params(out, h_out, h, y, gate, scale, shift, weight, eps), h,
           "gated_residual_adaln_rms_norm", ltx_kernels::gated_residual_adaln_rms_norm);
}
#endif
