// The CUDA core's entry points, every family: each takes the family's params struct (built once
// by the torch adapter; semantics and layouts in <family>/*_params.h, where the CPU backend's
// twins in cpu/ops.h take the same struct) and the stream to launch on, and returns the launch's
// error. Empty problems return cudaSuccess; problems a kernel cannot take return
// cudaErrorInvalidValue (or cudaErrorMisalignedAddress) rather than launching. Elements are
// float, __half or __nv_bfloat16 as the params' DType says. No torch.
//
// The row-wise ops pick a 16-byte vector path when every pointer, stride and width allows it, a
// scalar path otherwise. Kernels and byte counts: the <family>/*.cuh headers; launch choices:
// csrc/cuda/<family>/*.cu.
#pragma once

#include <cuda_runtime.h>

#include "ltx_kernels/activation/activation_params.h"
#include "ltx_kernels/attention/attention_quant.h"
#include "ltx_kernels/distributed/distributed_params.h"
#include "ltx_kernels/natten/natten_params.h"
#include "ltx_kernels/norm/fused_norm_params.h"
#include "ltx_kernels/norm/norm_params.h"
#include "ltx_kernels/quant/fp8_params.h"
#include "ltx_kernels/quant/fused_fp8_params.h"
#include "ltx_kernels/quant/lowbit_params.h"
#include "ltx_kernels/rope/rope_params.h"

namespace ltx_kernels {

// ---- norm (csrc/cuda/norm/rms_norm.cu)
cudaError_t rms_norm(const RmsNormParams& p, cudaStream_t stream);

// ---- activation (csrc/cuda/activation/activation.cu); gelu / gelu_tanh / silu treat dense
// operands (stride == cols, or one row) as one flat array
cudaError_t gelu(const ActivationParams& p, cudaStream_t stream);
cudaError_t gelu_tanh(const ActivationParams& p, cudaStream_t stream);
cudaError_t silu(const ActivationParams& p, cudaStream_t stream);
cudaError_t gelu_and_mul(const AndMulParams& p, cudaStream_t stream);
cudaError_t silu_and_mul(const AndMulParams& p, cudaStream_t stream);
cudaError_t gated_attention(const GatedAttentionParams& p, cudaStream_t stream);

// ---- fused norm (csrc/cuda/norm/fused_norm.cu)
cudaError_t add_rms_norm(const FusedNormParams& p, cudaStream_t stream);
cudaError_t layer_norm(const FusedNormParams& p, cudaStream_t stream);
cudaError_t adaln_rms_norm(const FusedNormParams& p, cudaStream_t stream);
cudaError_t adaln_layer_norm(const FusedNormParams& p, cudaStream_t stream);
cudaError_t gated_residual_adaln_rms_norm(const FusedNormParams& p, cudaStream_t stream);

// ---- rope (csrc/cuda/rope/rope.cu); tables float32 or the elements' type
cudaError_t rms_norm_rope(const RopeParams& p, cudaStream_t stream);
cudaError_t rms_norm_split_rope(const RopeParams& p, cudaStream_t stream);
cudaError_t apply_rope(const RopeParams& p, cudaStream_t stream);

// ---- fp8 (csrc/cuda/quant/fp8.cu); the per-tensor quantizer writes the scale first (amax /
// fmax, or the given scale copied), then the codes
cudaError_t quantize_fp8_per_token_group(const Fp8QuantizeParams& p, cudaStream_t stream);
cudaError_t quantize_fp8_block(const Fp8QuantizeParams& p, cudaStream_t stream);
cudaError_t quantize_fp8_per_tensor(const Fp8QuantizeParams& p, cudaStream_t stream);
cudaError_t dequantize_fp8_per_token_group(const Fp8DequantizeParams& p, cudaStream_t stream);
cudaError_t dequantize_fp8_block(const Fp8DequantizeParams& p, cudaStream_t stream);
cudaError_t dequantize_fp8_per_tensor(const Fp8DequantizeParams& p, cudaStream_t stream);

// ---- lowbit (csrc/cuda/quant/lowbit.cu)
cudaError_t fp6_pack(const Fp6PackParams& p, cudaStream_t stream);
cudaError_t fp6_unpack(const Fp6PackParams& p, cudaStream_t stream);
cudaError_t quantize_fp6_block(const Fp6BlockParams& p, cudaStream_t stream);
cudaError_t dequantize_fp6_block(const Fp6BlockParams& p, cudaStream_t stream);
cudaError_t quantize_fp6(const Fp6Params& p, cudaStream_t stream);
cudaError_t dequantize_fp6(const Fp6Params& p, cudaStream_t stream);
cudaError_t quantize_nvfp4(const Nvfp4Params& p, cudaStream_t stream);
cudaError_t dequantize_nvfp4(const Nvfp4Params& p, cudaStream_t stream);

// ---- fused_fp8 (csrc/cuda/quant/fused_fp8.cu, fused_fp8_rope.cu): the CUDA path's limits are
// fused_fp8_params.h's fused_fp8_cuda_unsupported / split_rope_fp8_cuda_unsupported; the
// gated residual writes op.residual_out (h_out) too
cudaError_t rms_norm_fp8(const RmsNormFp8Params& p, cudaStream_t stream);
cudaError_t adaln_rms_norm_fp8(const FusedNormFp8Params& p, cudaStream_t stream);
cudaError_t gated_residual_adaln_rms_norm_fp8(const FusedNormFp8Params& p, cudaStream_t stream);
cudaError_t silu_and_mul_fp8(const AndMulFp8Params& p, cudaStream_t stream);
cudaError_t gelu_and_mul_fp8(const AndMulFp8Params& p, cudaStream_t stream);
cudaError_t gelu_tanh_fp8(const ActivationFp8Params& p, cudaStream_t stream);
cudaError_t gated_attention_fp8(const GatedAttentionFp8Params& p, cudaStream_t stream);
cudaError_t rms_norm_rope_fp8(const RopeFp8Params& p, cudaStream_t stream);
cudaError_t rms_norm_split_rope_fp8(const RopeFp8Params& p, cudaStream_t stream);

// ---- dense attention: its own entry header, attention/attention_cuda.h (the sm_90a kernel and
// why it cannot run a problem); the GEMM's: gemm/gemm.h.

// ---- FP8 attention operands (csrc/cuda/attention/attention_quant.cu), every architecture: three
// launches (partial k sums / v maxima with the q rows, their reduction, the k rows and v tiles).
// p.workspace holds attention_quant_workspace_bytes(p) bytes of device memory; inputs 16-byte
// aligned (base and strides: the adapter copies otherwise), outputs contiguous.
cudaError_t quantize_attention_fp8(const AttnQuantParams& p, cudaStream_t stream);
// (csrc/cuda/attention/attention_keys.cu), every architecture: rstd per row (and y of the mean's
// rows), the mean, the codes per (batch row, 128-key block, head). p.workspace holds
// attention_keys_workspace_bytes(p) bytes; x, weight and table rows 16-byte aligned, k8 contiguous.
cudaError_t attention_keys_fp8(const AttnKeysParams& p, cudaStream_t stream);

// ---- natten (csrc/cuda/natten/natten.cu): every residue group on the kernel
// natten_heuristics.h chooses (the sm_90 kernel first where it applies, else or when it refuses
// the problem the portable one). Head dim 32, 64 or 128; every pointer 16-byte aligned and every
// stride a multiple of 8 elements (the adapter copies otherwise). cudaErrorNotSupported: p.tile
// forces the sm_90 kernel and it does not take the problem.
cudaError_t natten_forward(const NattenParams& p, cudaStream_t stream);

// ---- distributed (csrc/cuda/distributed/distributed.cu); the IPC transport: distributed/sp_ipc.h
cudaError_t sp_pack_heads(const SpHeadsParams& p, cudaStream_t stream);
cudaError_t sp_unpack_tokens(const SpHeadsParams& p, cudaStream_t stream);
cudaError_t sp_pack_tokens(const SpTokensParams& p, cudaStream_t stream);
cudaError_t sp_unpack_heads(const SpTokensParams& p, cudaStream_t stream);
cudaError_t sp_unpack_gather(const SpTokensParams& p, cudaStream_t stream);

}  // namespace ltx_kernels
