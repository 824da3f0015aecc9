// The CPU backend's entry points, every family: each takes the same params struct as its CUDA
// twin in cuda/ops.h (semantics and layouts in <family>/*_params.h) and a ParallelFor to spread
// its rows (queries, tokens, groups) over. fp32 arithmetic with row sums in double (a sequential
// fp32 sum is noisier than the GPU's tree); elements float, half_t or bfloat16_t as the params'
// DType says. Plain C++, no torch; csrc/cpu/<family>/*.cpp.
#pragma once

#include "ltx_kernels/activation/activation_params.h"
#include "ltx_kernels/cpu/parallel.h"
#include "ltx_kernels/distributed/distributed_params.h"
#include "ltx_kernels/natten/natten_params.h"
#include "ltx_kernels/norm/fused_norm_params.h"
#include "ltx_kernels/norm/norm_params.h"
#include "ltx_kernels/quant/fp8_params.h"
#include "ltx_kernels/quant/fused_fp8_params.h"
#include "ltx_kernels/quant/lowbit_params.h"
#include "ltx_kernels/rope/rope_params.h"

namespace ltx_kernels {
namespace cpu {

// ---- norm
void rms_norm(const RmsNormParams& p, const ParallelFor& parallel_for);

// ---- activation (formulas shared with the FP8-output ops: cpu/activation_math.h)
void gelu(const ActivationParams& p, const ParallelFor& parallel_for);
void gelu_tanh(const ActivationParams& p, const ParallelFor& parallel_for);
void silu(const ActivationParams& p, const ParallelFor& parallel_for);
void gelu_and_mul(const AndMulParams& p, const ParallelFor& parallel_for);
void silu_and_mul(const AndMulParams& p, const ParallelFor& parallel_for);
void gated_attention(const GatedAttentionParams& p, const ParallelFor& parallel_for);

// ---- fused norm: one generic row routine (prologue, statistic, epilogue), as the CUDA Policy
void add_rms_norm(const FusedNormParams& p, const ParallelFor& parallel_for);
void layer_norm(const FusedNormParams& p, const ParallelFor& parallel_for);
void adaln_rms_norm(const FusedNormParams& p, const ParallelFor& parallel_for);
void adaln_layer_norm(const FusedNormParams& p, const ParallelFor& parallel_for);
void gated_residual_adaln_rms_norm(const FusedNormParams& p, const ParallelFor& parallel_for);

// ---- rope
void rms_norm_rope(const RopeParams& p, const ParallelFor& parallel_for);
void rms_norm_split_rope(const RopeParams& p, const ParallelFor& parallel_for);
void apply_rope(const RopeParams& p, const ParallelFor& parallel_for);

// ---- fp8 (the element rule of common/fp8_util.h with formats.h's reference codec)
void quantize_fp8_per_token_group(const Fp8QuantizeParams& p, const ParallelFor& parallel_for);
void quantize_fp8_block(const Fp8QuantizeParams& p, const ParallelFor& parallel_for);
void quantize_fp8_per_tensor(const Fp8QuantizeParams& p, const ParallelFor& parallel_for);
void dequantize_fp8_per_token_group(const Fp8DequantizeParams& p, const ParallelFor& parallel_for);
void dequantize_fp8_block(const Fp8DequantizeParams& p, const ParallelFor& parallel_for);
void dequantize_fp8_per_tensor(const Fp8DequantizeParams& p, const ParallelFor& parallel_for);

// ---- lowbit
void fp6_pack(const Fp6PackParams& p, const ParallelFor& parallel_for);
void fp6_unpack(const Fp6PackParams& p, const ParallelFor& parallel_for);
void quantize_fp6_block(const Fp6BlockParams& p, const ParallelFor& parallel_for);
void dequantize_fp6_block(const Fp6BlockParams& p, const ParallelFor& parallel_for);
void quantize_fp6(const Fp6Params& p, const ParallelFor& parallel_for);
void dequantize_fp6(const Fp6Params& p, const ParallelFor& parallel_for);
void quantize_nvfp4(const Nvfp4Params& p, const ParallelFor& parallel_for);
void dequantize_nvfp4(const Nvfp4Params& p, const ParallelFor& parallel_for);

// ---- fused_fp8: each row's y as the plain CPU op computes it, not rounded, then the FP8
// quantizer's row routine (cpu/shared_rows.h)
void rms_norm_fp8(const RmsNormFp8Params& p, const ParallelFor& parallel_for);
void adaln_rms_norm_fp8(const FusedNormFp8Params& p, const ParallelFor& parallel_for);
void gated_residual_adaln_rms_norm_fp8(const FusedNormFp8Params& p, const ParallelFor& parallel_for);
void silu_and_mul_fp8(const AndMulFp8Params& p, const ParallelFor& parallel_for);
void gelu_and_mul_fp8(const AndMulFp8Params& p, const ParallelFor& parallel_for);
void gelu_tanh_fp8(const ActivationFp8Params& p, const ParallelFor& parallel_for);
void gated_attention_fp8(const GatedAttentionFp8Params& p, const ParallelFor& parallel_for);
void rms_norm_rope_fp8(const RopeFp8Params& p, const ParallelFor& parallel_for);
void rms_norm_split_rope_fp8(const RopeFp8Params& p, const ParallelFor& parallel_for);

// ---- dense attention: cpu::attention_forward in attention/attention.h (a range of (batch, head)
// pairs); the GEMM's: cpu/gemm.h.

// ---- natten: one query at a time with its explicit window, fp32 scores, double softmax sums;
// any head dim
void natten_forward(const NattenParams& p, const ParallelFor& parallel_for);

// ---- distributed: bytes copied row by row with memcpy
void sp_pack_heads(const SpHeadsParams& p, const ParallelFor& parallel_for);
void sp_unpack_tokens(const SpHeadsParams& p, const ParallelFor& parallel_for);
void sp_pack_tokens(const SpTokensParams& p, const ParallelFor& parallel_for);
void sp_unpack_heads(const SpTokensParams& p, const ParallelFor& parallel_for);
void sp_unpack_gather(const SpTokensParams& p, const ParallelFor& parallel_for);

}  // namespace cpu
}  // namespace ltx_kernels
