// Every op's adapter entry points, with the C++ signature of its schema (torch_binding.cpp).
// An op `name` has two: name_cpu for the CPU dispatch key and, in a CUDA build, name_cuda for
// the CUDA key (the gemm family, attention, attention_backend and the IPC host ops: one function for both). The names match the schemas, the core functions in csrc/include/ltx_kernels/
// and the Python API in ltx_kernels/__init__.py.
#pragma once

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>

#include <optional>
#include <string>

// LTX_OP(ret, name, params...) declares name_cpu and, in a CUDA build, name_cuda.
#ifdef LTX_KERNELS_WITH_CUDA
#define LTX_OP(ret, name, ...) \
  ret name##_cpu(__VA_ARGS__);  \
  ret name##_cuda(__VA_ARGS__)
#else
#define LTX_OP(ret, name, ...) ret name##_cpu(__VA_ARGS__)
#endif

// norm family (csrc/torch/norm.cpp)
LTX_OP(void, rms_norm, at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight, double eps);

// activation family (csrc/torch/activation.cpp)
LTX_OP(void, gelu, at::Tensor& out, const at::Tensor& x);
LTX_OP(void, gelu_tanh, at::Tensor& out, const at::Tensor& x);
LTX_OP(void, silu, at::Tensor& out, const at::Tensor& x);
LTX_OP(void, gelu_and_mul, at::Tensor& out, const at::Tensor& x, c10::string_view approximate, bool act_first);
LTX_OP(void, silu_and_mul, at::Tensor& out, const at::Tensor& x, bool act_first);
LTX_OP(void, gated_attention, at::Tensor& out, const at::Tensor& x, const at::Tensor& gate_logits);

// fused norm family (csrc/torch/fused_norm.cpp)
LTX_OP(void, add_rms_norm, at::Tensor& out, at::Tensor& residual_out, const at::Tensor& x,
       const at::Tensor& residual, const std::optional<at::Tensor>& weight, double eps);
LTX_OP(void, layer_norm, at::Tensor& out, const at::Tensor& x, const std::optional<at::Tensor>& weight,
       const std::optional<at::Tensor>& bias, double eps);
LTX_OP(void, adaln_rms_norm, at::Tensor& out, const at::Tensor& x, const at::Tensor& scale,
       const at::Tensor& shift, const std::optional<at::Tensor>& weight, double eps);
LTX_OP(void, adaln_layer_norm, at::Tensor& out, const at::Tensor& x, const at::Tensor& scale,
       const at::Tensor& shift, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
       double eps);
LTX_OP(void, gated_residual_adaln_rms_norm, at::Tensor& out, at::Tensor& h_out, const at::Tensor& h,
       const at::Tensor& y, const at::Tensor& gate, const at::Tensor& scale, const at::Tensor& shift,
       const std::optional<at::Tensor>& weight, double eps);

// rope family (csrc/torch/rope.cpp)
LTX_OP(void, rms_norm_rope, at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
       const std::optional<at::Tensor>& weight, double eps);
LTX_OP(void, rms_norm_split_rope, at::Tensor& out, const at::Tensor& x, const at::Tensor& cos,
       const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps);
LTX_OP(void, apply_rope, at::Tensor& out, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin,
       bool interleaved);

// fp8 family (csrc/torch/fp8.cpp)
LTX_OP(void, quantize_fp8_per_token_group, at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
       int64_t group_size, c10::string_view scale_layout);
LTX_OP(void, quantize_fp8_block, at::Tensor& q, at::Tensor& scales, const at::Tensor& w, int64_t block_n,
       int64_t block_k);
LTX_OP(void, quantize_fp8_per_tensor, at::Tensor& q, at::Tensor& scale, const at::Tensor& x,
       const std::optional<at::Tensor>& given_scale);
LTX_OP(void, dequantize_fp8_per_token_group, at::Tensor& out, const at::Tensor& q, const at::Tensor& scales,
       int64_t group_size);
LTX_OP(void, dequantize_fp8_block, at::Tensor& out, const at::Tensor& q, const at::Tensor& scales, int64_t block_n,
       int64_t block_k);
LTX_OP(void, dequantize_fp8_per_tensor, at::Tensor& out, const at::Tensor& q, const at::Tensor& scale);

// lowbit family (csrc/torch/lowbit.cpp)
LTX_OP(void, fp6_pack, at::Tensor& out, const at::Tensor& x);
LTX_OP(void, fp6_unpack, at::Tensor& out, const at::Tensor& packed);
LTX_OP(void, quantize_fp6_block, at::Tensor& packed, at::Tensor& scales, const at::Tensor& w, int64_t block_rows,
       int64_t block_cols);
LTX_OP(void, dequantize_fp6_block, at::Tensor& out, const at::Tensor& packed, const at::Tensor& scales,
       int64_t block_rows, int64_t block_cols);
LTX_OP(void, quantize_fp6, at::Tensor& out, const at::Tensor& x, c10::string_view fmt);
LTX_OP(void, dequantize_fp6, at::Tensor& out, const at::Tensor& codes, c10::string_view fmt);
LTX_OP(void, quantize_nvfp4, at::Tensor& packed, at::Tensor& block_scales, const at::Tensor& x,
       const at::Tensor& per_tensor_scale, bool hi_first);
LTX_OP(void, dequantize_nvfp4, at::Tensor& out, const at::Tensor& packed, const at::Tensor& block_scales,
       const at::Tensor& per_tensor_scale, bool hi_first);

// fused_fp8 family (csrc/torch/fused_fp8.cpp, fused_fp8_activation.cpp): FP8 E4M3 per-token-group output
LTX_OP(void, rms_norm_fp8, at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
       const std::optional<at::Tensor>& weight, double eps, int64_t group_size);
LTX_OP(void, adaln_rms_norm_fp8, at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& scale,
       const at::Tensor& shift, const std::optional<at::Tensor>& weight, double eps, int64_t group_size);
LTX_OP(void, gated_residual_adaln_rms_norm_fp8, at::Tensor& q, at::Tensor& scales, at::Tensor& h_out,
       const at::Tensor& h, const at::Tensor& y, const at::Tensor& gate, const at::Tensor& scale,
       const at::Tensor& shift, const std::optional<at::Tensor>& weight, double eps, int64_t group_size);
LTX_OP(void, silu_and_mul_fp8, at::Tensor& q, at::Tensor& scales, const at::Tensor& x, bool act_first,
       int64_t group_size);
LTX_OP(void, gelu_and_mul_fp8, at::Tensor& q, at::Tensor& scales, const at::Tensor& x, c10::string_view approximate,
       bool act_first, int64_t group_size);
LTX_OP(void, gelu_tanh_fp8, at::Tensor& q, at::Tensor& scales, const at::Tensor& x, int64_t group_size);
LTX_OP(void, gated_attention_fp8, at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
       const at::Tensor& gate_logits, int64_t group_size);
LTX_OP(void, rms_norm_rope_fp8, at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& cos,
       const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps, int64_t group_size);
LTX_OP(void, rms_norm_split_rope_fp8, at::Tensor& q, at::Tensor& scales, const at::Tensor& x, const at::Tensor& cos,
       const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps, int64_t group_size);

// dense attention family (csrc/torch/attention.cpp); attention and attention_backend serve both keys
void attention(at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
               const std::optional<at::Tensor>& kv_lengths, const std::optional<at::Tensor>& key_bias,
               const std::optional<at::Tensor>& q_descale, const std::optional<at::Tensor>& k_descale,
               const std::optional<at::Tensor>& v_descale, int64_t k_block, c10::string_view layout,
               c10::string_view backend);
std::string attention_backend(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              double scale, const std::optional<at::Tensor>& kv_lengths,
                              const std::optional<at::Tensor>& key_bias, const std::optional<at::Tensor>& q_descale,
                              const std::optional<at::Tensor>& k_descale, const std::optional<at::Tensor>& v_descale,
                              int64_t k_block, c10::string_view layout, c10::string_view backend);
// FP8 operands of attention (csrc/torch/attention_quant.cpp)
LTX_OP(void, quantize_attention_fp8, at::Tensor& q8, at::Tensor& k8, at::Tensor& v8, at::Tensor& q_descale,
       at::Tensor& k_descale, at::Tensor& v_descale, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
       c10::string_view layout, bool smooth_k, int64_t smooth_keys, int64_t k_block);
LTX_OP(void, attention_values_fp8, at::Tensor& v8, at::Tensor& v_descale, const at::Tensor& v, c10::string_view layout);
LTX_OP(void, attention_keys_fp8, at::Tensor& k8, at::Tensor& k_descale, const at::Tensor& x, const at::Tensor& cos,
       const at::Tensor& sin, const std::optional<at::Tensor>& weight, double eps, int64_t heads, bool split,
       int64_t smooth_keys);

// natten family (csrc/torch/natten.cpp)
LTX_OP(void, natten_forward, at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
       c10::IntArrayRef kernel_size, c10::IntArrayRef dilation, const c10::List<bool>& is_causal, double scale);

// distributed family (csrc/torch/distributed.cpp): sequence-parallel pack/unpack and the CUDA IPC
// transport (its create / open / close are host ops on CPU tensors, in every build; its exchanges
// CUDA only)
LTX_OP(void, sp_pack_heads, at::Tensor& out, const at::Tensor& x, int64_t world);
LTX_OP(void, sp_unpack_heads, at::Tensor& out, const at::Tensor& recv, c10::IntArrayRef tokens);
LTX_OP(void, sp_pack_tokens, at::Tensor& out, const at::Tensor& y, c10::IntArrayRef tokens);
LTX_OP(void, sp_unpack_tokens, at::Tensor& out, const at::Tensor& recv, int64_t world);
LTX_OP(void, sp_unpack_gather, at::Tensor& out, const at::Tensor& recv, c10::IntArrayRef tokens);
int64_t sp_ipc_create_host(at::Tensor& handle, int64_t device, int64_t nbytes);
void sp_ipc_open_host(const at::Tensor& handles, int64_t id, int64_t rank);
void sp_ipc_close_host(const at::Tensor& handle, int64_t id);
#ifdef LTX_KERNELS_WITH_CUDA
void sp_ipc_send_recv_heads_cuda(at::Tensor& out, at::Tensor& status, const at::Tensor& x, int64_t id,
                                 c10::IntArrayRef tokens, double timeout_s);
void sp_ipc_gather_heads_cuda(at::Tensor& out, at::Tensor& status, const at::Tensor& y, int64_t id,
                              c10::IntArrayRef tokens, double timeout_s);
void sp_ipc_all_gather_cuda(at::Tensor& out, at::Tensor& status, const at::Tensor& x, int64_t id,
                            c10::IntArrayRef tokens, double timeout_s);
#endif

// gemm family (csrc/torch/gemm.cpp)
void fp8_blockwise_gemm(at::Tensor& out, const std::optional<at::Tensor>& out_scales, const at::Tensor& a,
                        const at::Tensor& a_scales, const at::Tensor& b, const at::Tensor& b_scales,
                        const std::optional<at::Tensor>& bias, c10::string_view epilogue,
                        const std::optional<at::Tensor>& residual, const std::optional<at::Tensor>& gate,
                        c10::string_view backend);
void fp8_rowwise_gemm(at::Tensor& out, const std::optional<at::Tensor>& out_scales, const at::Tensor& a,
                      const at::Tensor& a_scales, const at::Tensor& b, const at::Tensor& b_scales,
                      const std::optional<at::Tensor>& bias, c10::string_view epilogue,
                      const std::optional<at::Tensor>& residual, const std::optional<at::Tensor>& gate,
                      c10::string_view backend);
void bf16_gemm(at::Tensor& out, const std::optional<at::Tensor>& out_scales, const at::Tensor& a, const at::Tensor& b,
               const std::optional<at::Tensor>& bias, c10::string_view epilogue,
               const std::optional<at::Tensor>& residual, const std::optional<at::Tensor>& gate,
               c10::string_view backend);
std::vector<int64_t> gemm_plan(c10::string_view op_name, const at::Tensor& out,
                               const std::optional<at::Tensor>& out_scales, const at::Tensor& a,
                               const std::optional<at::Tensor>& a_scales, const at::Tensor& b,
                               const std::optional<at::Tensor>& b_scales, const std::optional<at::Tensor>& bias,
                               c10::string_view epilogue, const std::optional<at::Tensor>& residual,
                               const std::optional<at::Tensor>& gate, c10::string_view backend);
void fp6_blockwise_gemm(at::Tensor& out, const at::Tensor& a, const at::Tensor& a_scales, const at::Tensor& b_packed,
                        const at::Tensor& b_scales, const std::optional<at::Tensor>& bias,
                        c10::string_view backend);
void scaled_mm_nvfp4(at::Tensor& out, const at::Tensor& a_packed, const at::Tensor& b_packed, const at::Tensor& block_a,
                     const at::Tensor& block_b, const at::Tensor& alpha, const std::optional<at::Tensor>& bias,
                     bool hi_first, c10::string_view backend);
std::vector<std::string> gemm_backends();

// ---- developer settings (csrc/torch/developer.cpp; docs/knobs.md)
bool set_developer_setting(c10::string_view name, c10::string_view value);
std::string developer_setting(c10::string_view name);
