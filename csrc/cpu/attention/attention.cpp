// Dense attention forward, CPU backend.
// fp32 arithmetic: per (batch, head) and query row, an online softmax over blocks of 64 keys
// (running max and sum, the output accumulated in fp32), FP8 inputs decoded on the fly with
// their dequantization factors. Semantics: csrc/include/ltx_kernels/attention/attention.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ltx_kernels/attention/attention.h"
#include "ltx_kernels/common/formats.h"
#include "ltx_kernels/common/host_types.h"

namespace ltx_kernels {

namespace cpu {
namespace {

template <AttnDtype T>
struct Load;
template <>
struct Load<AttnDtype::kBF16> {
  static float at(const void* base, int64_t i) { return to_float(static_cast<const bfloat16_t*>(base)[i]); }
};
template <>
struct Load<AttnDtype::kFP16> {
  static float at(const void* base, int64_t i) { return to_float(static_cast<const half_t*>(base)[i]); }
};
template <>
struct Load<AttnDtype::kFP32> {
  static float at(const void* base, int64_t i) { return static_cast<const float*>(base)[i]; }
};
template <>
struct Load<AttnDtype::kE4M3> {
  static float at(const void* base, int64_t i) {
    return minifloat_decode<E4M3>(static_cast<const uint8_t*>(base)[i]);
  }
};

void store(const AttentionParams& p, int64_t i, float v) {
  switch (p.out_dtype) {
    case AttnDtype::kBF16: static_cast<bfloat16_t*>(p.out)[i] = bfloat16_from_float(v); break;
    case AttnDtype::kFP16: static_cast<half_t*>(p.out)[i] = half_from_float(v); break;
    default: static_cast<float*>(p.out)[i] = v; break;
  }
}

// Position of key j (within its 32-key block) in an FP8 V^T row: the inverse of fp8_v_key_order.
struct KeyPos {
  int pos[32];
  KeyPos() {
    for (int i = 0; i < 32; ++i) pos[fp8_v_key_order(i)] = i;
  }
};

template <AttnDtype T>
void run(const AttentionParams& p, int64_t bh_begin, int64_t bh_end) {
  constexpr bool kFp8 = T == AttnDtype::kE4M3;
  constexpr int64_t kBlock = 64;
  static const KeyPos key_pos;
  const int64_t D = p.head_dim, group = p.heads / p.heads_kv;
  std::vector<float> q(D), k(size_t(kBlock) * D), v(size_t(kBlock) * D), o(D), s(kBlock);
  for (int64_t bh = bh_begin; bh < bh_end; ++bh) {
    const int64_t b = bh / p.heads, h = bh % p.heads, hk = h / group;
    int64_t kv_len = p.seqlen_kv;
    if (p.kv_lengths != nullptr) kv_len = std::clamp<int64_t>(p.kv_lengths[b], 0, p.seqlen_kv);
    for (int64_t i = 0; i < p.seqlen_q; ++i) {
      const int64_t qo = b * p.q_stride.b + i * p.q_stride.s + h * p.q_stride.h;
      const float qf = kFp8 ? p.q_descale[b * p.q_descale_stride.b + i * p.q_descale_stride.s +
                                          h * p.q_descale_stride.h]
                            : 1.f;
      for (int64_t c = 0; c < D; ++c) q[c] = Load<T>::at(p.q, qo + c) * qf;
      float m = -INFINITY, l = 0.f;
      std::fill(o.begin(), o.end(), 0.f);
      for (int64_t j0 = 0; j0 < kv_len; j0 += kBlock) {
        const int64_t n = std::min(kBlock, kv_len - j0);
        float mb = -INFINITY;
        for (int64_t t = 0; t < n; ++t) {
          const int64_t j = j0 + t;
          const int64_t ko = b * p.k_stride.b + j * p.k_stride.s + hk * p.k_stride.h;
          const float kf = kFp8 ? p.k_descale[b * p.k_descale_stride.b + (j / p.k_block) * p.k_descale_stride.s +
                                              hk * p.k_descale_stride.h]
                                : 1.f;
          float dot = 0.f;
          for (int64_t c = 0; c < D; ++c) dot += q[c] * (Load<T>::at(p.k, ko + c) * kf);
          float sc = dot * p.scale;
          if (p.key_bias != nullptr) sc += p.key_bias[b * p.key_bias_stride_b + j];
          s[t] = sc;
          mb = std::max(mb, sc);
          for (int64_t c = 0; c < D; ++c) {
            float vv;
            if constexpr (kFp8) {
              const int64_t pos = (j / 32) * 32 + key_pos.pos[j % 32];
              vv = Load<T>::at(p.v, b * p.v_stride.b + hk * p.v_stride.h + c * p.v_stride.s + pos) *
                   p.v_descale[b * p.v_descale_stride.b + hk * p.v_descale_stride.h + c * p.v_descale_stride.s];
            } else {
              vv = Load<T>::at(p.v, b * p.v_stride.b + j * p.v_stride.s + hk * p.v_stride.h + c);
            }
            v[size_t(t) * D + c] = vv;
          }
        }
        const float m_new = std::max(m, mb);
        if (m_new == -INFINITY) continue;  // every key so far masked
        const float alpha = std::exp(m - m_new);  // m = -inf -> 0
        l *= alpha;
        for (int64_t c = 0; c < D; ++c) o[c] *= alpha;
        for (int64_t t = 0; t < n; ++t) {
          const float pr = std::exp(s[t] - m_new);
          l += pr;
          for (int64_t c = 0; c < D; ++c) o[c] += pr * v[size_t(t) * D + c];
        }
        m = m_new;
      }
      const float inv = l > 0.f ? 1.f / l : 0.f;
      const int64_t oo = b * p.out_stride.b + i * p.out_stride.s + h * p.out_stride.h;
      for (int64_t c = 0; c < D; ++c) store(p, oo + c, o[c] * inv);
    }
  }
}

}  // namespace

void attention_forward(const AttentionParams& p, int64_t bh_begin, int64_t bh_end) {
  switch (p.dtype) {
    case AttnDtype::kBF16: return run<AttnDtype::kBF16>(p, bh_begin, bh_end);
    case AttnDtype::kFP16: return run<AttnDtype::kFP16>(p, bh_begin, bh_end);
    case AttnDtype::kFP32: return run<AttnDtype::kFP32>(p, bh_begin, bh_end);
    case AttnDtype::kE4M3: return run<AttnDtype::kE4M3>(p, bh_begin, bh_end);
  }
}

}  // namespace cpu
}  // namespace ltx_kernels
