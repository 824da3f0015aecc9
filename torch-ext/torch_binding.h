// Every op's adapter entry point. The names match the schemas in torch_binding.cpp, the
// core functions in csrc/include/ltx_kernels/ and the Python API in ltx_kernels/__init__.py.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

// norm family (csrc/torch/norm.cpp)
void rms_norm(at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight,
              double eps);

// activation family (csrc/torch/activation.cpp)
void gelu(at::Tensor& out, const at::Tensor& x);
void gelu_tanh(at::Tensor& out, const at::Tensor& x);
void silu(at::Tensor& out, const at::Tensor& x);
void gelu_and_mul(at::Tensor& out, const at::Tensor& x, c10::string_view approximate,
                  bool act_first);
void silu_and_mul(at::Tensor& out, const at::Tensor& x, bool act_first);
void gated_attention(at::Tensor& out, const at::Tensor& x, const at::Tensor& gate_logits);
// @family:activation

// fused norm family (csrc/torch/fused_norm.cpp)
// @family:fused_norm
void add_rms_norm(at::Tensor& out, at::Tensor& residual_out, const at::Tensor& x,
                  const at::Tensor& residual, const std::optional<at::Tensor>& weight, double eps);
void layer_norm(at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight,
                const std::optional<at::Tensor>& bias, double eps);
void adaln_rms_norm(at::Tensor& out, const at::Tensor& x, const at::Tensor& scale,
                    const at::Tensor& shift, const std::optional<at::Tensor>& weight, double eps);
void adaln_layer_norm(at::Tensor& out, const at::Tensor& x, const at::Tensor& scale,
                      const at::Tensor& shift, const std::optional<at::Tensor>& weight,
                      const std::optional<at::Tensor>& bias, double eps);
void gated_residual_adaln_rms_norm(at::Tensor& out, at::Tensor& h_out, const at::Tensor& h,
                                   const at::Tensor& y, const at::Tensor& gate,
                                   const at::Tensor& scale, const at::Tensor& shift,
                                   const std::optional<at::Tensor>& weight, double eps);

// rope family (csrc/torch/rope.cpp)
void rms_norm_rope(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                   const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps);
void rms_norm_split_rope(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
                         const at::Tensor& sin, const std::optional<at::Tensor>& weight,
                         double eps);
void apply_rope(at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
                bool interleaved);
// @family:rope

// @family:fp8

// @family:lowbit
