// CPU backend of the norm family: the same params as the CUDA core (norm/norm_params.h), fp32
// arithmetic with row sums in double, rows spread over `parallel_for`. No torch.
#pragma once

#include "ltx_kernels/cpu/parallel.h"
#include "ltx_kernels/norm/norm_params.h"

namespace ltx_kernels {
namespace cpu {

void rms_norm(const RmsNormParams& p, const ParallelFor& parallel_for);

}  // namespace cpu
}  // namespace ltx_kernels
