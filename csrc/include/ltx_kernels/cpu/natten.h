// CPU backend of neighborhood attention: the same params as the CUDA core
// (natten/natten_params.h), one query at a time with its explicit window, fp32 scores, double
// softmax sums; queries of every residue group spread over `parallel_for`. Any head dim;
// float, half_t or bfloat16_t. No torch.
#pragma once

#include "ltx_kernels/cpu/parallel.h"
#include "ltx_kernels/natten/natten_params.h"

namespace ltx_kernels {
namespace cpu {

void natten_forward(const NattenParams& p, const ParallelFor& parallel_for);

}  // namespace cpu
}  // namespace ltx_kernels
