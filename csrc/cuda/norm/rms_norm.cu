// rms_norm on the shared row-norm launcher (norm_launch.cuh): the fused norms' kernel with the
// plain policy (x loaded, RMS statistic, optional weight, no modulation), so one kernel and one
// launch-shape rule serve every row norm.
#include "norm_launch.cuh"
#include "ltx_kernels/cuda/ops.h"

namespace ltx_kernels {

using namespace fused_norm_detail;

cudaError_t rms_norm(const RmsNormParams& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    Args<T> a{};
    a.out = p.out.ptr<T>();
    a.out_stride = p.out.layout.stride;
    a.x = p.x.ptr<T>();
    a.x_stride = p.x.layout.stride;
    a.weight = static_cast<const T*>(p.weight);
    a.gate = a.scale = a.shift = ModTable<T>{nullptr, 0, 1};
    a.rows = p.x.layout.rows;
    a.eps = p.eps;
    return run<Policy<Prologue::kLoad, false, false>>(a, p.x.layout.cols, p.shape, stream);
  });
}

}  // namespace ltx_kernels
