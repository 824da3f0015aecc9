// CPU backend of the ops with FP8 E4M3 per-token-group output (semantics: quant/fused_fp8_params.h):
// each row's fp32 result y is computed like the plain CPU op (fp32 arithmetic, row sums in
// double) but not rounded, then quantized with the CPU FP8 quantizer's row routine (cpu/fp8.h,
// the one rule of common/fp8_util.h). Rows spread over `parallel_for`. No torch.
#pragma once

#include "ltx_kernels/cpu/parallel.h"
#include "ltx_kernels/quant/fused_fp8_params.h"

namespace ltx_kernels {
namespace cpu {

void rms_norm_fp8(const RmsNormFp8Params& p, const ParallelFor& parallel_for);
void adaln_rms_norm_fp8(const FusedNormFp8Params& p, const ParallelFor& parallel_for);
void gated_residual_adaln_rms_norm_fp8(const FusedNormFp8Params& p, const ParallelFor& parallel_for);
void silu_and_mul_fp8(const AndMulFp8Params& p, const ParallelFor& parallel_for);
void gelu_and_mul_fp8(const AndMulFp8Params& p, const ParallelFor& parallel_for);
void gelu_tanh_fp8(const ActivationFp8Params& p, const ParallelFor& parallel_for);
void gated_attention_fp8(const GatedAttentionFp8Params& p, const ParallelFor& parallel_for);
void rms_norm_rope_fp8(const RopeFp8Params& p, const ParallelFor& parallel_for);
void rms_norm_split_rope_fp8(const RopeFp8Params& p, const ParallelFor& parallel_for);

}  // namespace cpu
}  // namespace ltx_kernels
