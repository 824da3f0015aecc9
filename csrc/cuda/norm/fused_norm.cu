// add_rms_norm and layer_norm on the shared row-norm launcher (norm_launch.cuh), each with its
// Policy. The AdaLN norms and the gated residual are in fused_norm_adaln.cu and rms_norm in
// rms_norm.cu: one translation unit each, so that they compile in parallel.
#include "norm_launch.cuh"
#include "ltx_kernels/cuda/ops.h"

namespace ltx_kernels {

using namespace fused_norm_detail;

cudaError_t add_rms_norm(const FusedNormParams& p, cudaStream_t stream) {
  return run_op<Policy<Prologue::kAdd, false, false>>(p, stream);
}

cudaError_t layer_norm(const FusedNormParams& p, cudaStream_t stream) {
  return run_op<Policy<Prologue::kLoad, true, false>>(p, stream);
}

}  // namespace ltx_kernels
