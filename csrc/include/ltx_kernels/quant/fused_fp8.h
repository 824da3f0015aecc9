// Norms, activations and RoPE with FP8 E4M3 output and per-token-group scales, emitted in the
// same pass: CUDA entry points (semantics: quant/fused_fp8_params.h; kernels and byte counts:
// fused_fp8.cuh). fp32 arithmetic inside; inputs float, __half or __nv_bfloat16.
//
// CUDA path limits (the adapter checks them with the two functions below first, and copies
// inputs that are not aligned): group % V == 0 and group / V a power of two <= 32, where
// V = 16 / sizeof(T) (a group is then group / V consecutive lanes of a warp); every pointer
// 16-byte aligned and every row stride a multiple of V; cols / V <= 4096; RoPE tables with
// 16-byte aligned rows; the split RoPE needs head_dim % (2 V) == 0 (a 16-byte chunk never
// straddles a half-head). An entry point given a problem outside them returns
// cudaErrorInvalidValue / cudaErrorMisalignedAddress rather than launching.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/quant/fused_fp8_params.h"

namespace ltx_kernels {

// Why the CUDA path cannot take this problem, or nullptr when it can.
inline const char* fused_fp8_cuda_unsupported(int elem_size, int64_t cols, int64_t group) {
  const int64_t v = 16 / elem_size;
  if (group % v != 0) return "group_size must be a multiple of 16 bytes of the input dtype";
  const int64_t lanes = group / v;
  if (lanes > 32 || (lanes & (lanes - 1)) != 0)
    return "group_size / (16 / element size) must be a power of two <= 32";
  if (cols / v > 4096) return "rows wider than 4096 16-byte vectors are not supported";
  return nullptr;
}

// Why the split CUDA path cannot take head_dim, or nullptr.
inline const char* split_rope_fp8_cuda_unsupported(int elem_size, int64_t head_dim) {
  return head_dim % (2 * (16 / elem_size)) != 0
             ? "the head dim must be a multiple of 2 x (16 / element size) (16 for 16-bit x, 8 for float32)"
             : nullptr;
}

cudaError_t rms_norm_fp8(const RmsNormFp8Params& p, cudaStream_t stream);
cudaError_t adaln_rms_norm_fp8(const FusedNormFp8Params& p, cudaStream_t stream);
// op.residual_out (h_out) = round(h + y_in * gate) is written too; y from the rounded h_out.
cudaError_t gated_residual_adaln_rms_norm_fp8(const FusedNormFp8Params& p, cudaStream_t stream);
cudaError_t silu_and_mul_fp8(const AndMulFp8Params& p, cudaStream_t stream);
cudaError_t gelu_and_mul_fp8(const AndMulFp8Params& p, cudaStream_t stream);
cudaError_t gelu_tanh_fp8(const ActivationFp8Params& p, cudaStream_t stream);
cudaError_t gated_attention_fp8(const GatedAttentionFp8Params& p, cudaStream_t stream);
cudaError_t rms_norm_rope_fp8(const RopeFp8Params& p, cudaStream_t stream);
cudaError_t rms_norm_split_rope_fp8(const RopeFp8Params& p, cudaStream_t stream);

}  // namespace ltx_kernels
