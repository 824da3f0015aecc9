// Op schemas and their registrations. Every op is an out-variant ("Tensor! out" first, returns
// nothing); the Python wrapper allocates `out`. Each op registers its CPU impl (name_cpu) for
// the CPU dispatch key and, in a CUDA build, its CUDA impl (name_cuda) for the CUDA key.
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

// LTX_IMPL(ops, name): name_cpu for CPU and, in a CUDA build, name_cuda for CUDA.
#ifdef LTX_KERNELS_WITH_CUDA
#define LTX_IMPL(ops, name)                                 \
  ops.impl(#name, c10::DeviceType::CPU, &name##_cpu); \
  ops.impl(#name, c10::DeviceType::CUDA, &name##_cuda)
#else
#define LTX_IMPL(ops, name) ops.impl(#name, c10::DeviceType::CPU, &name##_cpu)
#endif

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  // ---- norm family
  // y = x * rsqrt(mean(x^2, -1) + eps) * weight
  ops.def("rms_norm(Tensor! out, Tensor x, Tensor? weight, float eps) -> ()");
  LTX_IMPL(ops, rms_norm);

  // ---- activation family
  // y = 0.5 x (1 + erf(x / sqrt(2)))
  ops.def("gelu(Tensor! out, Tensor x) -> ()");
  LTX_IMPL(ops, gelu);
  // y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  ops.def("gelu_tanh(Tensor! out, Tensor x) -> ()");
  LTX_IMPL(ops, gelu_tanh);
  // y = x sigmoid(x)
  ops.def("silu(Tensor! out, Tensor x) -> ()");
  LTX_IMPL(ops, silu);
  // x [..., 2d] -> act(x[..., :d]) * x[..., d:] (act_first) or x[..., :d] * act(x[..., d:])
  ops.def("gelu_and_mul(Tensor! out, Tensor x, str approximate, bool act_first) -> ()");
  LTX_IMPL(ops, gelu_and_mul);
  ops.def("silu_and_mul(Tensor! out, Tensor x, bool act_first) -> ()");
  LTX_IMPL(ops, silu_and_mul);
  // x [..., H*D] * 2 sigmoid(gate_logits [..., H]) per head
  ops.def("gated_attention(Tensor! out, Tensor x, Tensor gate_logits) -> ()");
  LTX_IMPL(ops, gated_attention);

  // ---- fused norm family
  // residual_out = x + residual (rounded); out = rms_norm(residual_out) * weight
  ops.def("add_rms_norm(Tensor! out, Tensor! residual_out, Tensor x, Tensor residual, Tensor? weight, float eps) -> ()");
  LTX_IMPL(ops, add_rms_norm);
  // out = (x - mean) * rsqrt(var + eps) * weight + bias
  ops.def("layer_norm(Tensor! out, Tensor x, Tensor? weight, Tensor? bias, float eps) -> ()");
  LTX_IMPL(ops, layer_norm);
  // out = rms_norm(x, weight) * (1 + scale) + shift; scale/shift [B, C] or x.shape
  ops.def("adaln_rms_norm(Tensor! out, Tensor x, Tensor scale, Tensor shift, Tensor? weight, float eps) -> ()");
  LTX_IMPL(ops, adaln_rms_norm);
  // out = layer_norm(x, weight, bias) * (1 + scale) + shift
  ops.def("adaln_layer_norm(Tensor! out, Tensor x, Tensor scale, Tensor shift, Tensor? weight, Tensor? bias, float eps) -> ()");
  LTX_IMPL(ops, adaln_layer_norm);
  // h_out = h + y * gate (rounded); out = rms_norm(h_out, weight) * (1 + scale) + shift
  ops.def("gated_residual_adaln_rms_norm(Tensor! out, Tensor! h_out, Tensor h, Tensor y, Tensor gate, Tensor scale, Tensor shift, Tensor? weight, float eps) -> ()");
  LTX_IMPL(ops, gated_residual_adaln_rms_norm);

  // ---- rope family
  // RMSNorm over the whole row [B, S, C], then interleaved RoPE; cos/sin [B or 1, S, C]
  ops.def("rms_norm_rope(Tensor! out, Tensor x, Tensor cos, Tensor sin, Tensor? weight, float eps) -> ()");
  LTX_IMPL(ops, rms_norm_rope);
  // RMSNorm over the whole row [B, S, C], then split (half) RoPE per head; cos/sin [B or 1, H, S, d/2]
  ops.def("rms_norm_split_rope(Tensor! out, Tensor x, Tensor cos, Tensor sin, Tensor? weight, float eps) -> ()");
  LTX_IMPL(ops, rms_norm_split_rope);
  // RoPE alone, interleaved or split; x [B, S, C] or [B, S, H, d]; out may be x
  ops.def("apply_rope(Tensor! out, Tensor x, Tensor cos, Tensor sin, bool interleaved) -> ()");
  LTX_IMPL(ops, apply_rope);

  // ---- fp8 family
  // x [..., K] -> q (x's shape, float8 dtype of q), scales [M, K/group] fp32 = amax/fmax per group;
  // q = encode(x / s); scale_layout 'row' (strides (G, 1)) or 'mn_major' (strides (1, M_pad))
  ops.def("quantize_fp8_per_token_group(Tensor! q, Tensor! scales, Tensor x, int group_size, str scale_layout) -> ()");
  LTX_IMPL(ops, quantize_fp8_per_token_group);
  // w [N, K] -> q, scales [ceil(N/bn), ceil(K/bk)] fp32, one per (bn x bk) tile (ragged edges)
  ops.def("quantize_fp8_block(Tensor! q, Tensor! scales, Tensor w, int block_n, int block_k) -> ()");
  LTX_IMPL(ops, quantize_fp8_block);
  // x (any shape) -> q, scale (one fp32) = amax/fmax, or the given scale used as is
  ops.def("quantize_fp8_per_tensor(Tensor! q, Tensor! scale, Tensor x, Tensor? given_scale) -> ()");
  LTX_IMPL(ops, quantize_fp8_per_tensor);
  // out = decode(q) * s, one rounding to out's dtype; scales as the quantizers write them
  ops.def("dequantize_fp8_per_token_group(Tensor! out, Tensor q, Tensor scales, int group_size) -> ()");
  LTX_IMPL(ops, dequantize_fp8_per_token_group);
  ops.def("dequantize_fp8_block(Tensor! out, Tensor q, Tensor scales, int block_n, int block_k) -> ()");
  LTX_IMPL(ops, dequantize_fp8_block);
  ops.def("dequantize_fp8_per_tensor(Tensor! out, Tensor q, Tensor scale) -> ()");
  LTX_IMPL(ops, dequantize_fp8_per_tensor);

  // ---- lowbit family (LTX-2 FP6, OCP FP6, NVFP4)
  // LTX-2 FP6: E4M3 [..., n] -> drop bits 6..5 -> 4 values in 3 bytes, big-endian -> uint8 [..., 3n/4]
  ops.def("fp6_pack(Tensor! out, Tensor x) -> ()");
  LTX_IMPL(ops, fp6_pack);
  // uint8 [..., 3n/4] -> E4M3 [..., n] (zeros in bits 6..5); n = out.shape[-1]
  ops.def("fp6_unpack(Tensor! out, Tensor packed) -> ()");
  LTX_IMPL(ops, fp6_unpack);
  // w [N, K] -> packed [N, 3K/4], scales [ceil(N/br), ceil(K/bc)] = amax / 0.1171875
  ops.def("quantize_fp6_block(Tensor! packed, Tensor! scales, Tensor w, int block_rows, int block_cols) -> ()");
  LTX_IMPL(ops, quantize_fp6_block);
  // out [N, K] = e4m3(unpack(packed)) * scales[block]
  ops.def("dequantize_fp6_block(Tensor! out, Tensor packed, Tensor scales, int block_rows, int block_cols) -> ()");
  LTX_IMPL(ops, dequantize_fp6_block);
  // OCP FP6 (fmt "e2m3" | "e3m2"), one code per byte, RNE, saturating, NaN -> +0
  ops.def("quantize_fp6(Tensor! out, Tensor x, str fmt) -> ()");
  LTX_IMPL(ops, quantize_fp6);
  ops.def("dequantize_fp6(Tensor! out, Tensor codes, str fmt) -> ()");
  LTX_IMPL(ops, dequantize_fp6);
  // NVFP4: x [..., K] -> packed [..., K/2], block_scales (E4M3 bytes, cuBLASLt 128x4 swizzle)
  ops.def("quantize_nvfp4(Tensor! packed, Tensor! block_scales, Tensor x, Tensor per_tensor_scale, bool hi_first) -> ()");
  LTX_IMPL(ops, quantize_nvfp4);
  // out [..., K] = q * s_b * s_t
  ops.def("dequantize_nvfp4(Tensor! out, Tensor packed, Tensor block_scales, Tensor per_tensor_scale, bool hi_first) -> ()");
  LTX_IMPL(ops, dequantize_nvfp4);

  // ---- fused_fp8 family: norms, activations and RoPE with FP8 E4M3 per-token-group output
  // op(...) in fp32, then per group of group_size columns: scales = amax / 448, q = e4m3(y / scale)
  // (q of y's shape, scales [M, C / group_size] with the caller's strides: "row" or "mn_major")
  ops.def("rms_norm_fp8(Tensor! q, Tensor! scales, Tensor x, Tensor? weight, float eps, int group_size) -> ()");
  LTX_IMPL(ops, rms_norm_fp8);
  ops.def("adaln_rms_norm_fp8(Tensor! q, Tensor! scales, Tensor x, Tensor scale, Tensor shift, Tensor? weight, float eps, int group_size) -> ()");
  LTX_IMPL(ops, adaln_rms_norm_fp8);
  // h_out = h + y * gate (rounded, written); q, scales from rms_norm(h_out) * (1 + scale) + shift
  ops.def("gated_residual_adaln_rms_norm_fp8(Tensor! q, Tensor! scales, Tensor! h_out, Tensor h, Tensor y, Tensor gate, Tensor scale, Tensor shift, Tensor? weight, float eps, int group_size) -> ()");
  LTX_IMPL(ops, gated_residual_adaln_rms_norm_fp8);
  ops.def("silu_and_mul_fp8(Tensor! q, Tensor! scales, Tensor x, bool act_first, int group_size) -> ()");
  LTX_IMPL(ops, silu_and_mul_fp8);
  ops.def("gelu_and_mul_fp8(Tensor! q, Tensor! scales, Tensor x, str approximate, bool act_first, int group_size) -> ()");
  LTX_IMPL(ops, gelu_and_mul_fp8);
  ops.def("gelu_tanh_fp8(Tensor! q, Tensor! scales, Tensor x, int group_size) -> ()");
  LTX_IMPL(ops, gelu_tanh_fp8);
  ops.def("gated_attention_fp8(Tensor! q, Tensor! scales, Tensor x, Tensor gate_logits, int group_size) -> ()");
  LTX_IMPL(ops, gated_attention_fp8);
  // whole-row RMSNorm, then interleaved (cos/sin [B or 1, S, C]) or split (cos/sin [B or 1, H, S, d/2]) RoPE
  ops.def("rms_norm_rope_fp8(Tensor! q, Tensor! scales, Tensor x, Tensor cos, Tensor sin, Tensor? weight, float eps, int group_size) -> ()");
  LTX_IMPL(ops, rms_norm_rope_fp8);
  ops.def("rms_norm_split_rope_fp8(Tensor! q, Tensor! scales, Tensor x, Tensor cos, Tensor sin, Tensor? weight, float eps, int group_size) -> ()");
  LTX_IMPL(ops, rms_norm_split_rope_fp8);

  // ---- dense attention family
  // out = softmax(scale q k^T + key_bias, masked past kv_lengths) v per (batch, head); layout
  // 'bshd' | 'bhsd'; float8_e4m3fn q/k with per-token factors, v transposed (quantize_attention_fp8)
  ops.def("attention(Tensor! out, Tensor q, Tensor k, Tensor v, float scale, Tensor? kv_lengths, Tensor? key_bias, Tensor? q_descale, Tensor? k_descale, Tensor? v_descale, int k_block, str layout, str backend) -> ()");
  ops.impl("attention", c10::DeviceType::CPU, &attention);
  // the name of the backend attention would run (attention/heuristics.h); raises what attention would raise
  ops.def("attention_backend(Tensor out, Tensor q, Tensor k, Tensor v, float scale, Tensor? kv_lengths, Tensor? key_bias, Tensor? q_descale, Tensor? k_descale, Tensor? v_descale, int k_block, str layout, str backend) -> str");
  ops.impl("attention_backend", c10::DeviceType::CPU, &attention_backend);
#if defined(LTX_KERNELS_WITH_CUDA)
  ops.impl("attention", c10::DeviceType::CUDA, &attention);
  ops.impl("attention_backend", c10::DeviceType::CUDA, &attention_backend);
#endif
  // attention's "torch" backend on arguments attention has checked (Skv > 0): implemented in
  // Python (torch-ext/ltx_kernels/attention.py registers it), called by attention
  ops.def("attention_torch(Tensor! out, Tensor q, Tensor k, Tensor v, float scale, Tensor? kv_lengths, Tensor? key_bias, Tensor? q_descale, Tensor? k_descale, Tensor? v_descale, int k_block, str layout) -> ()");
  // FP8 operands of attention: q and k codes per (token, head) (k: the mean of its keys, or of
  // the first smooth_keys, subtracted when smooth_k; a factor per key, k_block 1, or per 128
  // keys), v per channel stored transposed [B, Hkv, D, Skv_pad] in the kernel's key order;
  // code = e4m3(x / (amax / 448))
  ops.def("quantize_attention_fp8(Tensor! q8, Tensor! k8, Tensor! v8, Tensor! q_descale, Tensor! k_descale, Tensor! v_descale, Tensor q, Tensor k, Tensor v, str layout, bool smooth_k, int smooth_keys, int k_block) -> ()");
  LTX_IMPL(ops, quantize_attention_fp8);
  // v alone: quantize_attention_fp8's v operand (v8 [B, Hkv, D, Skv_pad], v_descale [B, Hkv, D])
  ops.def("attention_values_fp8(Tensor! v8, Tensor! v_descale, Tensor v, str layout) -> ()");
  LTX_IMPL(ops, attention_values_fp8);
  // k from the key projection's output x [B, S, C]: rms_norm_rope (split: rms_norm_split_rope) in
  // fp32, minus the mean of its first smooth_keys keys (0: none), codes per 128 keys and head:
  // k8 [B, S, C], k_descale [B, ceil(S / 128), heads] (quantize_attention_fp8's k_block 128 operand)
  ops.def("attention_keys_fp8(Tensor! k8, Tensor! k_descale, Tensor x, Tensor cos, Tensor sin, Tensor? weight, float eps, int heads, bool split, int smooth_keys) -> ()");
  LTX_IMPL(ops, attention_keys_fp8);

  // ---- natten family: neighborhood attention (NATTEN's na1d/na2d/na3d)
  // q, k, v, out [B, *spatial, heads, d], 1-3 spatial dims from q.dim(); softmax(scale q.k) v over
  // each query's window (inward-shifted at borders, [i - k + 1, i] on causal axes, residue groups
  // on dilated axes)
  ops.def("natten_forward(Tensor! out, Tensor q, Tensor k, Tensor v, int[] kernel_size, int[] dilation, bool[] is_causal, float scale) -> ()");
  LTX_IMPL(ops, natten_forward);

  // ---- distributed family (sequence parallel; bytes are copied, any 1/2/4/8-byte dtype)
  // x [B, T, H, D] -> out [W][B, T, H/W, D] (contiguous per destination rank)
  ops.def("sp_pack_heads(Tensor! out, Tensor x, int world) -> ()");
  LTX_IMPL(ops, sp_pack_heads);
  // recv = concat_s [B, tokens[s], Hl, D] -> out [B, sum(tokens), Hl, D], source s at prefix[s]
  ops.def("sp_unpack_heads(Tensor! out, Tensor recv, int[] tokens) -> ()");
  LTX_IMPL(ops, sp_unpack_heads);
  // y [B, sum(tokens), Hl, D] -> out = concat_s [B, tokens[s], Hl, D] (inverse of sp_unpack_heads)
  ops.def("sp_pack_tokens(Tensor! out, Tensor y, int[] tokens) -> ()");
  LTX_IMPL(ops, sp_pack_tokens);
  // recv [W][B, T, H/W, D] -> out [B, T, H, D] (inverse of sp_pack_heads)
  ops.def("sp_unpack_tokens(Tensor! out, Tensor recv, int world) -> ()");
  LTX_IMPL(ops, sp_unpack_tokens);
  // recv [W][B, max(tokens), ...] (padded all_gather) -> out [B, sum(tokens), ...]
  ops.def("sp_unpack_gather(Tensor! out, Tensor recv, int[] tokens) -> ()");
  LTX_IMPL(ops, sp_unpack_gather);
  // CUDA IPC buffers: create (writes the 64-byte cudaIpcMemHandle into handle, returns an id),
  // open every rank's handle ([W, 64] uint8), close. Host-side ops on CPU tensors.
  ops.def("sp_ipc_create(Tensor! handle, int device, int nbytes) -> int");
  ops.impl("sp_ipc_create", c10::DeviceType::CPU, &sp_ipc_create_host);
  ops.def("sp_ipc_open(Tensor handles, int id, int rank) -> ()");
  ops.impl("sp_ipc_open", c10::DeviceType::CPU, &sp_ipc_open_host);
  ops.def("sp_ipc_close(Tensor handle, int id) -> ()");
  ops.impl("sp_ipc_close", c10::DeviceType::CPU, &sp_ipc_close_host);
  // IPC ops: barrier, stores straight into the peers' buffers at the final layout, barrier, copy
  // out; a rank missing for timeout_s sets status = 1 + its rank (never traps, never hangs)
  ops.def("sp_ipc_send_recv_heads(Tensor! out, Tensor! status, Tensor x, int id, int[] tokens, float timeout_s) -> ()");
  ops.def("sp_ipc_gather_heads(Tensor! out, Tensor! status, Tensor y, int id, int[] tokens, float timeout_s) -> ()");
  ops.def("sp_ipc_all_gather(Tensor! out, Tensor! status, Tensor x, int id, int[] tokens, float timeout_s) -> ()");
#ifdef LTX_KERNELS_WITH_CUDA
  ops.impl("sp_ipc_send_recv_heads", c10::DeviceType::CUDA, &sp_ipc_send_recv_heads_cuda);
  ops.impl("sp_ipc_gather_heads", c10::DeviceType::CUDA, &sp_ipc_gather_heads_cuda);
  ops.impl("sp_ipc_all_gather", c10::DeviceType::CUDA, &sp_ipc_all_gather_cuda);
#endif

  // ---- gemm family (csrc/torch/gemm.cpp)
  // y = sum_kb (a_kb . b_kb) * a_scales[m, kb] * b_scales[n/128, kb] + bias, then the epilogue
  // ('none' | 'gelu_tanh' | 'gated_residual': out = residual + gate * y) into bf16 / fp16 out, or
  // quantized per 128 columns into an e4m3 out + out_scales; backend 'auto' | 'sm90' | 'skinny' |
  // 'sm89' | 'sm90_cutlass' | 'cublaslt' | 'torch' (fp32 dequant + matmul) | 'cpu'
  ops.def("fp8_blockwise_gemm(Tensor(a!) out, Tensor(b!)? out_scales, Tensor a, Tensor a_scales, Tensor b, Tensor b_scales, Tensor? bias, str epilogue, Tensor? residual, Tensor? gate, str backend) -> ()");
  ops.impl("fp8_blockwise_gemm", c10::DeviceType::CPU, &fp8_blockwise_gemm);
  // y = (a . b_n) * a_scales[m] * b_scales[n] + bias (one e4m3 scale per token and per output
  // channel, fp32 accumulation over all of K), then the same epilogues and outputs; backend
  // 'auto' | 'sm90' | 'torch' | 'cpu'
  ops.def("fp8_rowwise_gemm(Tensor(a!) out, Tensor(b!)? out_scales, Tensor a, Tensor a_scales, Tensor b, Tensor b_scales, Tensor? bias, str epilogue, Tensor? residual, Tensor? gate, str backend) -> ()");
  ops.impl("fp8_rowwise_gemm", c10::DeviceType::CPU, &fp8_rowwise_gemm);
  // the same for a [..., K] bf16 @ b [N, K]^T bf16 (fp32 accumulation); backend 'auto' | 'sm90' | 'torch' | 'cpu'
  ops.def("bf16_gemm(Tensor(a!) out, Tensor(b!)? out_scales, Tensor a, Tensor b, Tensor? bias, str epilogue, Tensor? residual, Tensor? gate, str backend) -> ()");
  ops.impl("bf16_gemm", c10::DeviceType::CPU, &bf16_gemm);
  // what op ('fp8_blockwise_gemm' | 'fp8_rowwise_gemm' | 'bf16_gemm') would run: [backend (an index of gemm_backends()),
  // bm, bn, cluster, group_m, sms]; raises as the op would
  ops.def("gemm_plan(str op, Tensor out, Tensor? out_scales, Tensor a, Tensor? a_scales, Tensor b, Tensor? b_scales, Tensor? bias, str epilogue, Tensor? residual, Tensor? gate, str backend) -> int[]");
  ops.impl("gemm_plan", c10::DeviceType::CPU, &gemm_plan);
  // the GEMM backends' names by index (the registry: ltx_kernels/gemm/backend.h)
  ops.def("gemm_backends() -> str[]", &gemm_backends);
  // the same with b as LTX-2 packed FP6 [N, 3K/4] uint8; backend 'auto' | 'sm89' | 'torch' | 'cpu'
  ops.def("fp6_blockwise_gemm(Tensor! out, Tensor a, Tensor a_scales, Tensor b_packed, Tensor b_scales, Tensor? bias, str backend) -> ()");
  ops.impl("fp6_blockwise_gemm", c10::DeviceType::CPU, &fp6_blockwise_gemm);
  // NVFP4 (quantize_nvfp4 operands): out = alpha * (q_a s_a) (q_b s_b)^T + bias, alpha = s_a * s_w on
  // the device; backend 'auto' | 'cublaslt' (cc >= 10.0) | 'torch' (dequantize + fp32 matmul) | 'cpu'
  ops.def("scaled_mm_nvfp4(Tensor! out, Tensor a_packed, Tensor b_packed, Tensor block_a, Tensor block_b, Tensor alpha, Tensor? bias, bool hi_first, str backend) -> ()");
  ops.impl("scaled_mm_nvfp4", c10::DeviceType::CPU, &scaled_mm_nvfp4);
  // backend 'torch' of the ops above (op: their name; alpha, hi_first: scaled_mm_nvfp4's), called by
  // them through the dispatcher; its kernel is Python, registered by ltx_kernels/gemm.py
  ops.def("gemm_exact(str op, Tensor(a!) out, Tensor(b!)? out_scales, Tensor a, Tensor? a_scales, Tensor b, Tensor? b_scales, Tensor? bias, str epilogue, Tensor? residual, Tensor? gate, Tensor? alpha, bool hi_first) -> ()");
#ifdef LTX_KERNELS_WITH_CUDA
  ops.impl("scaled_mm_nvfp4", c10::DeviceType::CUDA, &scaled_mm_nvfp4);
  ops.impl("fp8_blockwise_gemm", c10::DeviceType::CUDA, &fp8_blockwise_gemm);
  ops.impl("fp8_rowwise_gemm", c10::DeviceType::CUDA, &fp8_rowwise_gemm);
  ops.impl("bf16_gemm", c10::DeviceType::CUDA, &bf16_gemm);
  ops.impl("gemm_plan", c10::DeviceType::CUDA, &gemm_plan);
  ops.impl("fp6_blockwise_gemm", c10::DeviceType::CUDA, &fp6_blockwise_gemm);
#endif

  // ---- developer settings (ltx_kernels/common/dev_config.h): overrides of the kernels' own
  // choices for tests, sweeps and profiling, named as their environment variables (docs/knobs.md)
  ops.def("set_developer_setting(str name, str value) -> bool", &set_developer_setting);
  ops.def("developer_setting(str name) -> str", &developer_setting);
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
