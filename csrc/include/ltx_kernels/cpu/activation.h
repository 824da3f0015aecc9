// CPU backend of the activation family: the same params as the CUDA core
// (activation/activation_params.h), fp32 arithmetic, rows spread over `parallel_for`. No torch.
#pragma once

#include "ltx_kernels/activation/activation_params.h"
#include "ltx_kernels/cpu/parallel.h"

namespace ltx_kernels {
namespace cpu {

void gelu(const ActivationParams& p, const ParallelFor& parallel_for);
void gelu_tanh(const ActivationParams& p, const ParallelFor& parallel_for);
void silu(const ActivationParams& p, const ParallelFor& parallel_for);
void gelu_and_mul(const AndMulParams& p, const ParallelFor& parallel_for);
void silu_and_mul(const AndMulParams& p, const ParallelFor& parallel_for);
void gated_attention(const GatedAttentionParams& p, const ParallelFor& parallel_for);

}  // namespace cpu
}  // namespace ltx_kernels
