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
// fp8 family (csrc/torch/fp8.cpp)
void quantize_fp8_per_token_group(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                                  int64_t group_size, c10::string_view scale_layout);
void quantize_fp8_block(at::Tensor& q, at::Tensor& scales, const at::Tensor& w, int64_t block_n,
                        int64_t block_k);
void quantize_fp8_per_tensor(at::Tensor& q, at::Tensor& scale, const at::Tensor& x,
                             const std::optional<at::Tensor>& given_scale);
void dequantize_fp8_per_token_group(at::Tensor& out, const at::Tensor& q, const at::Tensor& scales,
                                    int64_t group_size);
void dequantize_fp8_block(at::Tensor& out, const at::Tensor& q, const at::Tensor& scales,
                          int64_t block_n, int64_t block_k);
void dequantize_fp8_per_tensor(at::Tensor& out, const at::Tensor& q, const at::Tensor& scale);

// @family:lowbit
// lowbit family (csrc/torch/lowbit.cpp)
void fp6_pack(at::Tensor& out, const at::Tensor& x);
void fp6_unpack(at::Tensor& out, const at::Tensor& packed);
void quantize_fp6_block(at::Tensor& packed, at::Tensor& scales, const at::Tensor& w,
                        int64_t block_rows, int64_t block_cols);
void dequantize_fp6_block(at::Tensor& out, const at::Tensor& packed, const at::Tensor& scales,
                          int64_t block_rows, int64_t block_cols);
void quantize_fp6(at::Tensor& out, const at::Tensor& x, c10::string_view fmt);
void dequantize_fp6(at::Tensor& out, const at::Tensor& codes, c10::string_view fmt);
void quantize_nvfp4(at::Tensor& packed, at::Tensor& block_scales, const at::Tensor& x,
                    const at::Tensor& per_tensor_scale, bool hi_first);
void dequantize_nvfp4(at::Tensor& out, const at::Tensor& packed, const at::Tensor& block_scales,
                      const at::Tensor& per_tensor_scale, bool hi_first);
