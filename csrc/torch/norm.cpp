// Torch adapter for the norm family: checks, row layouts, dtype dispatch, then the CPU
// backend or the CUDA core. One function per op, registered for both dispatch keys.
#include "common.h"
#include "ltx_kernels/cpu/norm.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/norm/rms_norm.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

constexpr int64_t kCpuGrain = 16;  // rows per CPU task
}  // namespace

void rms_norm(at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight,
              double eps) {
  constexpr const char* op = "rms_norm";
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
  if (x.numel() == 0) return;
  at::Tensor xh;
  const RowLayout xl = input_rows(x, xh);
  check_no_partial_overlap(out, xh, op, "x");
  const RowLayout ol = output_rows(out, op);
  check_rows_fit(xl, op);
  at::Tensor wc = weight.has_value() ? weight->contiguous() : at::Tensor();
  if (wc.defined()) check_no_partial_overlap(out, wc, op, "weight");
  const float feps = static_cast<float>(eps);

  if (x.is_cpu()) {
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* o = reinterpret_cast<scalar_t*>(out.data_ptr());
      auto* xp = reinterpret_cast<const scalar_t*>(xh.data_ptr());
      auto* wp = wc.defined() ? reinterpret_cast<const scalar_t*>(wc.data_ptr()) : nullptr;
      at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::rms_norm<scalar_t>(o, ol.stride, xp, xl.stride, wp, b, e, xl.cols, feps);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  const cudaStream_t stream = scope.stream;
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    auto* o = reinterpret_cast<cuda_t*>(out.data_ptr());
    auto* xp = reinterpret_cast<const cuda_t*>(xh.data_ptr());
    auto* wp = wc.defined() ? reinterpret_cast<const cuda_t*>(wc.data_ptr()) : nullptr;
    check_cuda(ltx_kernels::rms_norm<cuda_t>(o, ol.stride, xp, xl.stride, wp, xl.rows, xl.cols,
                                             feps, stream),
               op);
  });
#else
  no_cuda_backend(x, op);
#endif
}
