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
  // @family:fp8

  // ---- lowbit (NVFP4, FP6) family
  // @family:lowbit
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
