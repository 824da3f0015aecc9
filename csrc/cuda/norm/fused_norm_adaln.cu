// The AdaLN norms (RMS and layer) and the gated residual + AdaLN RMSNorm on the shared row-norm
// launcher (norm_launch.cuh), each with its Policy.
#include "norm_launch.cuh"
#include "ltx_kernels/cuda/ops.h"

namespace ltx_kernels {

using namespace fused_norm_detail;

cudaError_t adaln_rms_norm(const FusedNormParams& p, cudaStream_t stream) {
  return run_op<Policy<Prologue::kLoad, false, true>>(p, stream);
}

cudaError_t adaln_layer_norm(const FusedNormParams& p, cudaStream_t stream) {
  return run_op<Policy<Prologue::kLoad, true, true>>(p, stream);
}

cudaError_t gated_residual_adaln_rms_norm(const FusedNormParams& p, cudaStream_t stream) {
  return run_op<Policy<Prologue::kGatedAdd, false, true>>(p, stream);
}

}  // namespace ltx_kernels
