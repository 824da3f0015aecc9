// Torch adapter for the norm family (rms_norm): checks, then one RmsNormParams for the CPU
// backend (cpu/ops.h) or the CUDA core (cuda/ops.h).
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

constexpr const char* kRmsNorm = "rms_norm";

Prepared<RmsNormParams> make_rms_norm_params(at::Tensor& out, const at::Tensor& x,
                                             const std::optional<at::Tensor>& weight, double eps) {
  constexpr const char* op = kRmsNorm;
  check_float_type(x, op, "x");
  LTX_CHECK(x.dim() >= 1, op, "x must have at least one dimension (got a scalar)");
  check_same_dtype(out, x, op, "out", "x");
  check_same_device(out, x, op, "out", "x");
  LTX_CHECK(out.sizes() == x.sizes(), op, "out must have the shape of x (got ", shape_str(out.sizes()),
            " and ", shape_str(x.sizes()), ")");
  LTX_CHECK(eps >= 0.0, op, "eps must be >= 0 (got ", eps, ")");
  const int64_t cols = x.size(-1);
  if (weight.has_value()) {
    const at::Tensor& w = *weight;
    check_same_device(w, x, op, "weight", "x");
    check_same_dtype(w, x, op, "weight", "x");
    LTX_CHECK(w.dim() == 1 && w.size(0) == cols, op,
              "weight must be 1-D with x.shape[-1] = ", cols, " elements (got shape ", shape_str(w.sizes()),
              ")");
  }
  Prepared<RmsNormParams> pr;
  if (x.numel() == 0) return pr;
  RmsNormParams& p = pr.emplace();
  set_rows(pr, p, out, x, op);
  p.weight = nullptr;
  if (weight.has_value()) {
    const at::Tensor& wc = pr.keep(weight->contiguous());
    check_no_partial_overlap(out, wc, op, "weight");
    p.weight = wc.data_ptr();
  }
  p.eps = static_cast<float>(eps);
  p.shape = env_norm_shape(op);
  return pr;
}

}  // namespace

void rms_norm_cpu(at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps) {
  run_cpu(make_rms_norm_params(out, x, weight, eps), cpu::rms_norm);
}

#ifdef LTX_KERNELS_WITH_CUDA
void rms_norm_cuda(at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps) {
  run_norm_cuda(make_rms_norm_params(out, x, weight, eps), x, kRmsNorm, ltx_kernels::rms_norm);
}
#endif
