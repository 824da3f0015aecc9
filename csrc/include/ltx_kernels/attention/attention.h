// Dense attention forward (inference, non-causal): the core API shared by the CPU backend and
// the CUDA kernels. No torch, no CUDA types: host code of every backend includes it.
//
//   out[b, i, h, :] = sum_j softmax_j(s_ij) v[b, j, hk, :],   hk = h / (H / Hkv)
//   s_ij = scale * <q[b, i, h, :], k[b, j, hk, :]> + bias[b, j]      for j < kv_len[b]
//   s_ij = -inf                                                       for j >= kv_len[b]
// A row whose every s_ij is -inf (kv_len 0, or every key masked by a -inf bias) gives 0, not NaN.
//
// Inputs are bf16/fp16 (`dtype`), or FP8 E4M3 (`fp8`) with dequantization factors:
//   q = q8 * q_descale[b, i, h], k = k8 * k_descale[b, j / k_block, hk],
//   v = v8 * v_descale[b, hk, c] (per channel c),
// where v8 is stored transposed, [B, Hkv, D, Skv_pad] with the keys of each 32-key block in the
// order `fp8_v_key_order` gives (the layout quantize_attention_fp8 writes: the order in which the
// kernel's FP8 P fragment holds the keys, so that P V needs no register shuffles).
// Every tensor is addressed by element strides; the innermost (head-dim, or key for FP8 V) stride
// is 1. The output is bf16/fp16 (`out_dtype`), [B, Sq, H, D] by strides.
#pragma once

#include <cstdint>

namespace ltx_kernels {

enum class AttnDtype : int { kBF16 = 0, kFP16 = 1, kE4M3 = 2, kFP32 = 3 };

struct AttnStrides {  // element strides of a [B, S, H, D]-indexed tensor (D stride is 1)
  int64_t b = 0, s = 0, h = 0;
};

struct AttentionParams {
  int64_t batch = 0, seqlen_q = 0, seqlen_kv = 0, heads = 0, heads_kv = 0, head_dim = 0;
  AttnDtype dtype = AttnDtype::kBF16;      // q, k, v element type
  AttnDtype out_dtype = AttnDtype::kBF16;  // bf16 / fp16 / fp32 (fp32: CPU only)
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  AttnStrides q_stride, k_stride, out_stride;
  // v: [B, Skv, Hkv, D] by v_stride for 16-bit inputs; for FP8, [B, Hkv, D, Skv_pad]:
  // v_stride.b / .h / .s are the batch, head and channel (row) strides, keys contiguous.
  AttnStrides v_stride;
  int64_t v_keys_padded = 0;        // FP8: keys per V^T row in memory (>= seqlen_kv, a multiple of 32)
  float scale = 0.f;                // softmax scale (> 0)
  const int32_t* kv_lengths = nullptr;  // [B] valid keys per batch row, or null (= seqlen_kv)
  const float* key_bias = nullptr;      // [B, Skv] additive bias per key (fp32), or null
  int64_t key_bias_stride_b = 0;        // key_bias[b * stride_b + j]
  // FP8 only. Strides in elements of fp32; q_descale[b, i, h], k_descale[b, j / k_block, hk],
  // v_descale[b, hk, c] (stride .s is the channel stride for v).
  const float* q_descale = nullptr;
  const float* k_descale = nullptr;
  const float* v_descale = nullptr;
  AttnStrides q_descale_stride, k_descale_stride, v_descale_stride;
  int64_t k_block = 1;  // keys per K dequantization factor: 1 (per token) or 128 (per block)
  int pingpong = -1;    // sm_90 kernel scheduling: -1 its default, 0 off, 1 on (tuning knob)
  int persistent = -1;  // sm_90 16-bit kernels: -1 by the heuristics, 0 per-tile CTAs, 1 persistent (tuning knob)
};

// The keys' order inside each 32-key block of an FP8 V^T row: position p holds key
// fp8_v_key_order(p) of the block (a permutation of 0..31, its own inverse is not assumed).
// It is the k index that wgmma's 8-bit A-operand fragment gives the P values a thread computes.
constexpr int fp8_v_key_order(int p) {
  return 16 * (p / 16) + 8 * ((p % 4) / 2) + 2 * ((p % 16) / 4) + (p % 2);
}

// Every backend takes a well-formed problem, which its caller establishes (the torch adapter's
// checks, csrc/torch/attention.cpp): sizes >= 0, heads a multiple of heads_kv > 0 (when heads >
// 0), scale finite and > 0; for FP8 the three factor tensors, k_block 1 or 128, and v_keys_padded
// >= seqlen_kv a multiple of 32.

namespace cpu {
// CPU backend: (batch, head) pairs [bh_begin, bh_end) in the order b * heads + h; fp32
// arithmetic, online softmax in key blocks. Any dtype (FP8 dequantized on the fly).
void attention_forward(const AttentionParams& p, int64_t bh_begin, int64_t bh_end);
}  // namespace cpu

}  // namespace ltx_kernels
