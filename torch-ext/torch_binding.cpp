// Op schemas and their registrations. Every op is an out-variant ("Tensor! out" first, returns
// nothing); the Python wrapper allocates `out`. The same adapter function serves the CPU and
// CUDA dispatch keys and routes on the tensors' device.
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  // y = x * rsqrt(mean(x^2, -1) + eps) * weight
  ops.def("rms_norm(Tensor! out, Tensor x, Tensor? weight, float eps) -> ()");
  ops.impl("rms_norm", c10::DeviceType::CPU, &rms_norm);
#ifdef LTX_KERNELS_WITH_CUDA
  ops.impl("rms_norm", c10::DeviceType::CUDA, &rms_norm);
#endif

  // ---- activation family
  // y = 0.5 x (1 + erf(x / sqrt(2)))
  ops.def("gelu(Tensor! out, Tensor x) -> ()");
  ops.impl("gelu", c10::DeviceType::CPU, &gelu);
  // y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  ops.def("gelu_tanh(Tensor! out, Tensor x) -> ()");
  ops.impl("gelu_tanh", c10::DeviceType::CPU, &gelu_tanh);
  // y = x sigmoid(x)
  ops.def("silu(Tensor! out, Tensor x) -> ()");
  ops.impl("silu", c10::DeviceType::CPU, &silu);
  // x [..., 2d] -> act(x[..., :d]) * x[..., d:] (act_first) or x[..., :d] * act(x[..., d:])
  ops.def("gelu_and_mul(Tensor! out, Tensor x, str approximate, bool act_first) -> ()");
  ops.impl("gelu_and_mul", c10::DeviceType::CPU, &gelu_and_mul);
  ops.def("silu_and_mul(Tensor! out, Tensor x, bool act_first) -> ()");
  ops.impl("silu_and_mul", c10::DeviceType::CPU, &silu_and_mul);
  // x [..., H*D] * 2 sigmoid(gate_logits [..., H]) per head
  ops.def("gated_attention(Tensor! out, Tensor x, Tensor gate_logits) -> ()");
  ops.impl("gated_attention", c10::DeviceType::CPU, &gated_attention);
#ifdef LTX_KERNELS_WITH_CUDA
  ops.impl("gelu", c10::DeviceType::CUDA, &gelu);
  ops.impl("gelu_tanh", c10::DeviceType::CUDA, &gelu_tanh);
  ops.impl("silu", c10::DeviceType::CUDA, &silu);
  ops.impl("gelu_and_mul", c10::DeviceType::CUDA, &gelu_and_mul);
  ops.impl("silu_and_mul", c10::DeviceType::CUDA, &silu_and_mul);
  ops.impl("gated_attention", c10::DeviceType::CUDA, &gated_attention);
#endif
  // @family:activation

  // ---- fused norm family
  // @family:fused_norm
  // residual_out = x + residual (rounded); out = rms_norm(residual_out) * weight
  ops.def("add_rms_norm(Tensor! out, Tensor! residual_out, Tensor x, Tensor residual, Tensor? weight, float eps) -> ()");
  ops.impl("add_rms_norm", c10::DeviceType::CPU, &add_rms_norm);
  // out = (x - mean) * rsqrt(var + eps) * weight + bias
  ops.def("layer_norm(Tensor! out, Tensor x, Tensor? weight, Tensor? bias, float eps) -> ()");
  ops.impl("layer_norm", c10::DeviceType::CPU, &layer_norm);
  // out = rms_norm(x, weight) * (1 + scale) + shift; scale/shift [B, C] or x.shape
  ops.def("adaln_rms_norm(Tensor! out, Tensor x, Tensor scale, Tensor shift, Tensor? weight, float eps) -> ()");
  ops.impl("adaln_rms_norm", c10::DeviceType::CPU, &adaln_rms_norm);
  // out = layer_norm(x, weight, bias) * (1 + scale) + shift
  ops.def("adaln_layer_norm(Tensor! out, Tensor x, Tensor scale, Tensor shift, Tensor? weight, Tensor? bias, float eps) -> ()");
  ops.impl("adaln_layer_norm", c10::DeviceType::CPU, &adaln_layer_norm);
  // h_out = h + y * gate (rounded); out = rms_norm(h_out, weight) * (1 + scale) + shift
  ops.def("gated_residual_adaln_rms_norm(Tensor! out, Tensor! h_out, Tensor h, Tensor y, Tensor gate, Tensor scale, Tensor shift, Tensor? weight, float eps) -> ()");
  ops.impl("gated_residual_adaln_rms_norm", c10::DeviceType::CPU, &gated_residual_adaln_rms_norm);
#ifdef LTX_KERNELS_WITH_CUDA
  ops.impl("add_rms_norm", c10::DeviceType::CUDA, &add_rms_norm);
  ops.impl("layer_norm", c10::DeviceType::CUDA, &layer_norm);
  ops.impl("adaln_rms_norm", c10::DeviceType::CUDA, &adaln_rms_norm);
  ops.impl("adaln_layer_norm", c10::DeviceType::CUDA, &adaln_layer_norm);
  ops.impl("gated_residual_adaln_rms_norm", c10::DeviceType::CUDA, &gated_residual_adaln_rms_norm);
#endif

  // ---- rope family
  // RMSNorm over the whole row [B, S, C], then interleaved RoPE; cos/sin [B or 1, S, C]
  ops.def("rms_norm_rope(Tensor! out, Tensor x, Tensor cos, Tensor sin, Tensor? weight, float eps) -> ()");
  ops.impl("rms_norm_rope", c10::DeviceType::CPU, &rms_norm_rope);
  // RMSNorm over the whole row [B, S, C], then split (half) RoPE per head; cos/sin [B or 1, H, S, d/2]
  ops.def("rms_norm_split_rope(Tensor! out, Tensor x, Tensor cos, Tensor sin, Tensor? weight, float eps) -> ()");
  ops.impl("rms_norm_split_rope", c10::DeviceType::CPU, &rms_norm_split_rope);
  // RoPE alone, interleaved or split; x [B, S, C] or [B, S, H, d]; out may be x
  ops.def("apply_rope(Tensor! out, Tensor x, Tensor cos, Tensor sin, bool interleaved) -> ()");
  ops.impl("apply_rope", c10::DeviceType::CPU, &apply_rope);
#ifdef LTX_KERNELS_WITH_CUDA
  ops.impl("rms_norm_rope", c10::DeviceType::CUDA, &rms_norm_rope);
  ops.impl("rms_norm_split_rope", c10::DeviceType::CUDA, &rms_norm_split_rope);
  ops.impl("apply_rope", c10::DeviceType::CUDA, &apply_rope);
#endif
  // @family:rope

  // ---- fp8 family
  // The fp8 and lowbit CUDA kernels compile but have not yet run on a GPU: their CUDA
  // registration is off unless the build sets LTX_KERNELS_EXPERIMENTAL_QUANT_CUDA
  // (scripts/gpu_check.sh does, to validate them). Without it a CUDA tensor gets PyTorch's
  // "could not run ... with arguments from the 'CUDA' backend" error, never an unchecked result.
  // @family:fp8
  // x [..., K] -> q (x's shape, float8 dtype of q), scales [M, K/group] fp32 = amax/fmax per group;
  // q = encode(x / s); scale_layout 'row' (strides (G, 1)) or 'mn_major' (strides (1, M_pad))
  ops.def("quantize_fp8_per_token_group(Tensor! q, Tensor! scales, Tensor x, int group_size, str scale_layout) -> ()");
  ops.impl("quantize_fp8_per_token_group", c10::DeviceType::CPU, &quantize_fp8_per_token_group);
  // w [N, K] -> q, scales [ceil(N/bn), ceil(K/bk)] fp32, one per (bn x bk) tile (ragged edges)
  ops.def("quantize_fp8_block(Tensor! q, Tensor! scales, Tensor w, int block_n, int block_k) -> ()");
  ops.impl("quantize_fp8_block", c10::DeviceType::CPU, &quantize_fp8_block);
  // x (any shape) -> q, scale (one fp32) = amax/fmax, or the given scale used as is
  ops.def("quantize_fp8_per_tensor(Tensor! q, Tensor! scale, Tensor x, Tensor? given_scale) -> ()");
  ops.impl("quantize_fp8_per_tensor", c10::DeviceType::CPU, &quantize_fp8_per_tensor);
  // out = decode(q) * s, one rounding to out's dtype; scales as the quantizers write them
  ops.def("dequantize_fp8_per_token_group(Tensor! out, Tensor q, Tensor scales, int group_size) -> ()");
  ops.impl("dequantize_fp8_per_token_group", c10::DeviceType::CPU, &dequantize_fp8_per_token_group);
  ops.def("dequantize_fp8_block(Tensor! out, Tensor q, Tensor scales, int block_n, int block_k) -> ()");
  ops.impl("dequantize_fp8_block", c10::DeviceType::CPU, &dequantize_fp8_block);
  ops.def("dequantize_fp8_per_tensor(Tensor! out, Tensor q, Tensor scale) -> ()");
  ops.impl("dequantize_fp8_per_tensor", c10::DeviceType::CPU, &dequantize_fp8_per_tensor);
#if defined(LTX_KERNELS_WITH_CUDA) && defined(LTX_KERNELS_EXPERIMENTAL_QUANT_CUDA)
  ops.impl("quantize_fp8_per_token_group", c10::DeviceType::CUDA, &quantize_fp8_per_token_group);
  ops.impl("quantize_fp8_block", c10::DeviceType::CUDA, &quantize_fp8_block);
  ops.impl("quantize_fp8_per_tensor", c10::DeviceType::CUDA, &quantize_fp8_per_tensor);
  ops.impl("dequantize_fp8_per_token_group", c10::DeviceType::CUDA, &dequantize_fp8_per_token_group);
  ops.impl("dequantize_fp8_block", c10::DeviceType::CUDA, &dequantize_fp8_block);
  ops.impl("dequantize_fp8_per_tensor", c10::DeviceType::CUDA, &dequantize_fp8_per_tensor);
#endif

  // ---- lowbit (NVFP4, FP6) family
  // @family:lowbit
  // LTX-2 FP6: E4M3 [..., n] -> drop bits 6..5 -> 4 values in 3 bytes, big-endian -> uint8 [..., 3n/4]
  ops.def("fp6_pack(Tensor! out, Tensor x) -> ()");
  ops.impl("fp6_pack", c10::DeviceType::CPU, &fp6_pack);
  // uint8 [..., 3n/4] -> E4M3 [..., n] (zeros in bits 6..5); n = out.shape[-1]
  ops.def("fp6_unpack(Tensor! out, Tensor packed) -> ()");
  ops.impl("fp6_unpack", c10::DeviceType::CPU, &fp6_unpack);
  // w [N, K] -> packed [N, 3K/4], scales [ceil(N/br), ceil(K/bc)] = amax / 0.1171875
  ops.def("quantize_fp6_block(Tensor! packed, Tensor! scales, Tensor w, int block_rows, int block_cols) -> ()");
  ops.impl("quantize_fp6_block", c10::DeviceType::CPU, &quantize_fp6_block);
  // out [N, K] = e4m3(unpack(packed)) * scales[block]
  ops.def("dequantize_fp6_block(Tensor! out, Tensor packed, Tensor scales, int block_rows, int block_cols) -> ()");
  ops.impl("dequantize_fp6_block", c10::DeviceType::CPU, &dequantize_fp6_block);
  // OCP FP6 (fmt "e2m3" | "e3m2"), one code per byte, RNE, saturating, NaN -> +0
  ops.def("quantize_fp6(Tensor! out, Tensor x, str fmt) -> ()");
  ops.impl("quantize_fp6", c10::DeviceType::CPU, &quantize_fp6);
  ops.def("dequantize_fp6(Tensor! out, Tensor codes, str fmt) -> ()");
  ops.impl("dequantize_fp6", c10::DeviceType::CPU, &dequantize_fp6);
  // NVFP4: x [..., K] -> packed [..., K/2], block_scales (E4M3 bytes, cuBLASLt 128x4 swizzle)
  ops.def("quantize_nvfp4(Tensor! packed, Tensor! block_scales, Tensor x, Tensor per_tensor_scale, bool hi_first) -> ()");
  ops.impl("quantize_nvfp4", c10::DeviceType::CPU, &quantize_nvfp4);
  // out [..., K] = q * s_b * s_t
  ops.def("dequantize_nvfp4(Tensor! out, Tensor packed, Tensor block_scales, Tensor per_tensor_scale, bool hi_first) -> ()");
  ops.impl("dequantize_nvfp4", c10::DeviceType::CPU, &dequantize_nvfp4);
#if defined(LTX_KERNELS_WITH_CUDA) && defined(LTX_KERNELS_EXPERIMENTAL_QUANT_CUDA)
  ops.impl("fp6_pack", c10::DeviceType::CUDA, &fp6_pack);
  ops.impl("fp6_unpack", c10::DeviceType::CUDA, &fp6_unpack);
  ops.impl("quantize_fp6_block", c10::DeviceType::CUDA, &quantize_fp6_block);
  ops.impl("dequantize_fp6_block", c10::DeviceType::CUDA, &dequantize_fp6_block);
  ops.impl("quantize_fp6", c10::DeviceType::CUDA, &quantize_fp6);
  ops.impl("dequantize_fp6", c10::DeviceType::CUDA, &dequantize_fp6);
  ops.impl("quantize_nvfp4", c10::DeviceType::CUDA, &quantize_nvfp4);
  ops.impl("dequantize_nvfp4", c10::DeviceType::CUDA, &dequantize_nvfp4);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
