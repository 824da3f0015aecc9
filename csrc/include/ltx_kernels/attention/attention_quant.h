// FP8 E4M3 operands for the dense attention kernel (quantize_attention_fp8): the core API shared
// by the CPU backend (csrc/cpu/attention/attention_quant.cpp) and the CUDA kernels
// (csrc/cuda/attention/attention_quant.cu). No torch, no CUDA types.
//
// Inputs q [B, Sq, H, D], k and v [B, Skv, Hkv, D] (addressed by (b, s, h) element strides, the
// head-dim stride 1; "bshd" and "bhsd" differ only in the strides), bf16 / fp16 / fp32, H a
// multiple of Hkv, D a multiple of 8 in [8, 256]. Every code follows one rule (common/fp8_util.h):
//   s    = amax / 448                       (fp32 division; amax = max |x| over the group)
//   code = e4m3(x / s)                      (a true fp32 division, round to nearest even,
//                                            saturating: a quotient that rounds above 448, e.g.
//                                            448.00003, gives 448)
//   code = e4m3(x)   where s == 0           (an all-zero group: x is +-0 there and keeps its sign,
//                                            -0.0 -> 0x80)
// The groups:
//   q: one factor per (token, head) over its D values: q_descale[b, i, h], q8 in q's shape.
//   k: when smooth_k (and Skv > 0) a per-channel mean of the keys is subtracted first,
//        mean[b, hk, d] = float32(S / n),  S = the fp64 sum of float64(k[b, j, hk, d]) over the
//        first n keys, divided in fp64 and rounded once to fp32;  kc = float32(float32(k) - mean).
//        n = Skv (smooth_keys 0: the exact mean) or min(smooth_keys, Skv) (smooth_keys a positive
//        multiple of kAttnQuantSumKeys: the mean of the leading keys). Softmax is invariant to
//        any vector subtracted from every key of a row, so either choice leaves the attention
//        unchanged in real arithmetic; the mean only decides how much of the keys' shared offset
//        leaves the quantization range. The leading keys' mean needs no pass over all of k.
//      S is summed in one fixed order that both backends follow (deterministic and identical
//      across them): within each chunk of kAttnQuantSumKeys consecutive keys (of the first n),
//      sequentially in key order starting from +0.0; then the chunk sums, sequentially in chunk
//      order starting from +0.0. (For bf16 / fp16 inputs of any realistic range every partial sum is exact, so S does
//      not depend on the order at all.) Without smoothing kc = float32(k).
//      Factors over kc: k_block 1, one per key over its D values (k_descale [B, Skv, Hkv]);
//      k_block 128, one per 128 keys and head over the block's valid keys (j < Skv) and all D
//      channels (k_descale [B, ceil(Skv / 128), Hkv]). k8 in k's shape.
//   v: one factor per channel over all keys, v_descale[b, hk, d] (0 when Skv == 0); codes stored
//      transposed, v8[b, hk, d, p] for p < Skv_pad = 32 ceil(max(Skv, 1) / 32): position p holds
//      key 32 (p / 32) + fp8_v_key_order(p % 32) (attention.h), and keys >= Skv give code 0.
// Outputs are contiguous: q8 / k8 in their inputs' logical layout, v8 [B, Hkv, D, Skv_pad],
// q_descale [B, Sq, H], k_descale as above, v_descale [B, Hkv, D], all factors fp32.
// q == nullptr: no q operand is written (q8, q_descale unused); k == nullptr: no k operand (k8,
// k_descale unused, no mean). attention_values_fp8 is v alone; the q and k operands then come
// from the passes that produce q and k (rms_norm_rope's FP8 output, attention_keys_fp8 below).
// Non-finite inputs follow fp8_util.h per element (NaN stays NaN, +-Inf saturates, amax ignores
// NaN); they are outside the bit-for-bit contract with reference.quantize_attention_fp8.
#pragma once

#include <cstdint>

#include "ltx_kernels/attention/attention.h"
#include "ltx_kernels/cpu/parallel.h"
#include "ltx_kernels/rope/rope_params.h"

namespace ltx_kernels {

// Keys per partial sum of the k mean (the order above). The CUDA kernel's first pass gives each
// thread one such chunk of keys for a few channels.
constexpr int64_t kAttnQuantSumKeys = 64;
constexpr int64_t kAttnQuantMaxHeadDim = 256;

struct AttnQuantParams {
  int64_t batch = 0, seqlen_q = 0, seqlen_kv = 0, heads = 0, heads_kv = 0, head_dim = 0;
  AttnDtype dtype = AttnDtype::kBF16;  // q, k, v: kBF16 / kFP16 / kFP32
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  AttnStrides q_stride, k_stride, v_stride;  // element strides (b, s, h); head-dim stride 1
  uint8_t* q8 = nullptr;                     // E4M3 codes, q's shape
  uint8_t* k8 = nullptr;                     // k's shape
  uint8_t* v8 = nullptr;                     // [B, Hkv, D, v_keys_padded], contiguous
  AttnStrides q8_stride, k8_stride;          // (b, s, h) strides of the codes (head-dim stride 1)
  int64_t v_keys_padded = 0;                 // 32 ceil(max(Skv, 1) / 32)
  float* q_descale = nullptr;                // [B, Sq, H], contiguous
  float* k_descale = nullptr;                // [B, Skv or ceil(Skv / 128), Hkv], contiguous
  float* v_descale = nullptr;                // [B, Hkv, D], contiguous
  bool smooth_k = true;
  int64_t smooth_keys = 0;                   // 0: the mean of all keys; else of the first min(n, Skv)
  int64_t k_block = 128;                     // 1 or 128
  // CUDA only: attention_quant_workspace_bytes(p) bytes of device memory (the partial sums and
  // maxima of the first pass and the means), 16-byte aligned; may be null when that is 0.
  void* workspace = nullptr;
};

// Keys per V^T row in memory for Skv keys.
constexpr int64_t attention_quant_keys_padded(int64_t skv) { return ((skv > 0 ? skv : 1) + 31) / 32 * 32; }

// Chunks of kAttnQuantSumKeys keys over Skv keys.
constexpr int64_t attention_quant_chunks(int64_t skv) { return (skv + kAttnQuantSumKeys - 1) / kAttnQuantSumKeys; }

// Keys the k mean is taken over (0 without smoothing).
inline int64_t attention_quant_mean_keys(const AttnQuantParams& p) {
  if (!p.smooth_k || p.k == nullptr) return 0;
  return p.smooth_keys > 0 && p.smooth_keys < p.seqlen_kv ? p.smooth_keys : p.seqlen_kv;
}

// Device workspace of the CUDA kernels: per batch row, chunk (of the mean's keys) and channel an
// fp64 partial sum of k (smooth_k only), per batch row, chunk and channel an fp32 partial amax of
// v, then per batch row and channel the fp32 mean.
inline int64_t attention_quant_workspace_bytes(const AttnQuantParams& p) {
  const bool smooth = p.smooth_k && p.k != nullptr;
  const int64_t ch = p.batch * p.heads_kv * p.head_dim;
  const int64_t sums = smooth ? ch * attention_quant_chunks(attention_quant_mean_keys(p)) * 8 : 0;
  const int64_t amax = (ch * attention_quant_chunks(p.seqlen_kv) * 4 + 15) / 16 * 16;
  const int64_t mean = smooth ? ch * 4 : 0;
  return sums + amax + mean;
}

// nullptr when the problem is well formed, else the rule broken. The torch adapter's checks
// (csrc/torch/attention_quant.cpp) establish it for every backend; the CUDA entry refuses a
// problem that fails it (inline: the CUDA core needs no CPU code).
inline const char* attention_quant_check(const AttnQuantParams& p) {
  if (p.batch < 0 || p.seqlen_q < 0 || p.seqlen_kv < 0 || p.heads < 0 || p.heads_kv < 0)
    return "sizes must be >= 0";
  if (p.heads > 0 && (p.heads_kv <= 0 || p.heads % p.heads_kv != 0))
    return "the query heads must be a multiple of the key/value heads";
  if (p.head_dim < 8 || p.head_dim > kAttnQuantMaxHeadDim || p.head_dim % 8 != 0)
    return "the head dim must be a multiple of 8 in [8, 256]";
  if (p.dtype != AttnDtype::kBF16 && p.dtype != AttnDtype::kFP16 && p.dtype != AttnDtype::kFP32)
    return "q, k and v must be bfloat16, float16 or float32";
  if (p.k_block != 1 && p.k_block != 128) return "k_block must be 1 or 128";
  if (p.smooth_keys < 0 || p.smooth_keys % kAttnQuantSumKeys != 0)
    return "smooth_keys must be 0 (all keys) or a positive multiple of 64";
  if (p.v_keys_padded != attention_quant_keys_padded(p.seqlen_kv))
    return "v8 must have 32 ceil(max(Skv, 1) / 32) keys per row";
  return nullptr;
}

// ---- The k operand from the pass that produces k (attention_keys_fp8) ------------------------
// x [B, S, C] (C = H * D, rows of C contiguous elements), bf16 / fp16 / fp32, with the
// rms_norm_rope (interleaved, whole row) or rms_norm_split_rope (per head; its head dim is D)
// arithmetic of rope/rope_params.h, gives y in fp32, NOT rounded to x's type (as rms_norm_rope's
// FP8 output). Then per batch row, with n = min(smooth_keys, S):
//   mean[b, c] = float32(Y / n), Y = the fp64 sum of float64(y[b, j, c]) over j < n, sequential
//                in key order from +0.0 (mean = 0 when smooth_keys is 0: no smoothing)
//   kc = float32(y - mean)
// and per 128 keys and head the rule above over the block's valid keys and the head's D channels:
// k_descale[b, j / 128, h] = amax / 448, k8 = e4m3(kc / s). k8 [B, S, C] (= [B, S, H, D]) and
// k_descale [B, ceil(S / 128), H] contiguous: quantize_attention_fp8's k operand with k_block 128
// (with the mean of the leading keys of y instead of k's), without y ever stored in 16 bits.
// The mean needs keys before any block's codes; the producer has only the leading ones, which
// is why the smoothing vector is their mean (softmax's invariance makes any shared vector exact).
constexpr int64_t kAttnKeysBlock = 128;

struct AttnKeysParams {
  RopeParams op;            // x, weight, cos / sin tables, shape, eps (op.out unused)
  int64_t heads = 0;        // H (D = C / H)
  int64_t smooth_keys = 0;  // 0 (no mean) or a positive multiple of kAttnQuantSumKeys
  uint8_t* k8 = nullptr;    // [B, S, C] codes, contiguous
  float* k_descale = nullptr;  // [B, ceil(S / 128), H], contiguous
  // CUDA only: attention_keys_workspace_bytes(p) bytes of device memory, 16-byte aligned
  void* workspace = nullptr;
};

inline int64_t attention_keys_mean_keys(const AttnKeysParams& p) {
  return p.smooth_keys < p.op.shape.seq ? p.smooth_keys : p.op.shape.seq;
}

// The CUDA kernels' workspace: rstd per row (fp32 [B * S]), then with a mean the y of the mean's
// rows (fp32 [B, n, C]) and the mean (fp32 [B, C]); byte offsets, each 16-byte aligned (-1: none).
struct AttnKeysWorkspace {
  int64_t rstd = 0, y = -1, mean = -1, bytes = 0;
};

inline AttnKeysWorkspace attention_keys_workspace(const AttnKeysParams& p) {
  auto al = [](int64_t b) { return (b + 15) / 16 * 16; };
  const RopeShape& s = p.op.shape;
  const int64_t n = attention_keys_mean_keys(p);
  AttnKeysWorkspace w;
  w.bytes = al(s.batch * s.seq * 4);
  if (n > 0) {
    w.y = w.bytes;
    w.mean = w.y + al(s.batch * n * s.cols * 4);
    w.bytes = w.mean + al(s.batch * s.cols * 4);
  }
  return w;
}

inline int64_t attention_keys_workspace_bytes(const AttnKeysParams& p) { return attention_keys_workspace(p).bytes; }

// nullptr when the problem is well formed (beyond what the RoPE family's own checks establish),
// else the rule broken.
inline const char* attention_keys_check(const AttnKeysParams& p) {
  const RopeShape& s = p.op.shape;
  if (p.heads <= 0 || s.cols % p.heads != 0) return "heads must be positive and divide the row width";
  const int64_t d = s.cols / p.heads;
  if (d < 8 || d > kAttnQuantMaxHeadDim || d % 8 != 0) return "the head dim must be a multiple of 8 in [8, 256]";
  if (s.split && s.head_dim != d) return "the split RoPE's head dim must be the attention head dim";
  if (p.smooth_keys < 0 || p.smooth_keys % kAttnQuantSumKeys != 0)
    return "smooth_keys must be 0 (no smoothing) or a positive multiple of 64";
  return nullptr;
}

namespace cpu {
// CPU backend: the whole problem; the (token, head) rows of q and the (batch, kv head) pairs of
// k and v spread over parallel_for.
void quantize_attention_fp8(const AttnQuantParams& p, const ParallelFor& parallel_for);
// The means per batch row, then the (batch row, 128-key block) pairs over parallel_for.
void attention_keys_fp8(const AttnKeysParams& p, const ParallelFor& parallel_for);
}  // namespace cpu

}  // namespace ltx_kernels
