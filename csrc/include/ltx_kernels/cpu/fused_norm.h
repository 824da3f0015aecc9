// CPU backend of the fused norms: the same params as the CUDA core (norm/fused_norm_params.h),
// fp32 arithmetic with row sums in double, rows spread over `parallel_for`. No torch.
#pragma once

#include "ltx_kernels/cpu/parallel.h"
#include "ltx_kernels/norm/fused_norm_params.h"

namespace ltx_kernels {
namespace cpu {

void add_rms_norm(const FusedNormParams& p, const ParallelFor& parallel_for);
void layer_norm(const FusedNormParams& p, const ParallelFor& parallel_for);
void adaln_rms_norm(const FusedNormParams& p, const ParallelFor& parallel_for);
void adaln_layer_norm(const FusedNormParams& p, const ParallelFor& parallel_for);
void gated_residual_adaln_rms_norm(const FusedNormParams& p, const ParallelFor& parallel_for);

}  // namespace cpu
}  // namespace ltx_kernels
