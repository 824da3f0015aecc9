// FP8 operands for dense attention (quantize_attention_fp8, attention_values_fp8,
// attention_keys_fp8), CPU backend. Semantics, including the fixed order of the k mean's fp64
// sum: csrc/include/ltx_kernels/attention/attention_quant.h.
// Codes by fp8_util.h's element rule with formats.h's reference codec; the CUDA kernels match this
// file bit for bit.
// Work items: the (token, head) rows of q; the (batch, kv head) pairs of k and of v.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ltx_kernels/attention/attention_quant.h"
#include "ltx_kernels/common/fp8_util.h"
#include "ltx_kernels/common/host_types.h"
#include "ltx_kernels/cpu/shared_rows.h"

namespace ltx_kernels {
namespace cpu {
namespace {

constexpr int64_t kRowGrain = 64;  // q rows per task

template <typename T>
float load(const void* base, int64_t i) {
  return to_float(static_cast<const T*>(base)[i]);
}

uint8_t encode(float x, float s) { return fp8_quantize_value<E4M3, false>(x, s); }

template <typename T>
void q_rows(const AttnQuantParams& p, int64_t r0, int64_t r1) {
  const int64_t D = p.head_dim, H = p.heads, S = p.seqlen_q;
  for (int64_t r = r0; r < r1; ++r) {  // r = (b * Sq + i) * H + h: q_descale's order
    const int64_t h = r % H, i = (r / H) % S, b = r / (H * S);
    const int64_t xo = b * p.q_stride.b + i * p.q_stride.s + h * p.q_stride.h;
    const int64_t qo = b * p.q8_stride.b + i * p.q8_stride.s + h * p.q8_stride.h;
    float m = 0.f;
    for (int64_t c = 0; c < D; ++c) m = fp8_absmax(m, load<T>(p.q, xo + c));
    const float s = fp8_scale_from_amax<E4M3>(m);
    for (int64_t c = 0; c < D; ++c) p.q8[qo + c] = encode(load<T>(p.q, xo + c), s);
    p.q_descale[r] = s;
  }
}

// k of one (batch row, kv head): the mean of its first n keys (in the fixed order of the
// header), then the factors and codes of kc = float32(float32(k) - mean).
template <typename T>
void k_head(const AttnQuantParams& p, int64_t b, int64_t hk, std::vector<double>& part, std::vector<double>& total,
            std::vector<float>& mean) {
  const int64_t D = p.head_dim, S = p.seqlen_kv, Hk = p.heads_kv;
  const int64_t xb = b * p.k_stride.b + hk * p.k_stride.h;
  const int64_t ob = b * p.k8_stride.b + hk * p.k8_stride.h;
  std::fill(mean.begin(), mean.end(), 0.f);
  const int64_t n = attention_quant_mean_keys(p);  // the mean's keys: the first n
  if (n > 0) {
    std::fill(total.begin(), total.end(), 0.0);
    for (int64_t j0 = 0; j0 < n; j0 += kAttnQuantSumKeys) {
      std::fill(part.begin(), part.end(), 0.0);
      for (int64_t j = j0; j < std::min(n, j0 + kAttnQuantSumKeys); ++j)
        for (int64_t c = 0; c < D; ++c) part[size_t(c)] += double(load<T>(p.k, xb + j * p.k_stride.s + c));
      for (int64_t c = 0; c < D; ++c) total[size_t(c)] += part[size_t(c)];
    }
    for (int64_t c = 0; c < D; ++c) mean[size_t(c)] = float(total[size_t(c)] / double(n));
  }
  auto kc = [&](int64_t j, int64_t c) { return load<T>(p.k, xb + j * p.k_stride.s + c) - mean[size_t(c)]; };
  const int64_t blk = p.k_block;
  for (int64_t j0 = 0; j0 < S; j0 += blk) {
    const int64_t j1 = std::min(S, j0 + blk);
    float m = 0.f;
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t c = 0; c < D; ++c) m = fp8_absmax(m, kc(j, c));
    const float s = fp8_scale_from_amax<E4M3>(m);
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t c = 0; c < D; ++c) p.k8[ob + j * p.k8_stride.s + c] = encode(kc(j, c), s);
    p.k_descale[(b * ((S + blk - 1) / blk) + j0 / blk) * Hk + hk] = s;
  }
}

// v of one (batch row, kv head): per-channel factors over all keys, codes transposed with the
// keys of each 32-key block in fp8_v_key_order, zeros past Skv.
template <typename T>
void v_head(const AttnQuantParams& p, int64_t b, int64_t hk, std::vector<float>& scale) {
  const int64_t D = p.head_dim, S = p.seqlen_kv, P = p.v_keys_padded;
  const int64_t xb = b * p.v_stride.b + hk * p.v_stride.h;
  std::fill(scale.begin(), scale.end(), 0.f);
  for (int64_t j = 0; j < S; ++j)
    for (int64_t c = 0; c < D; ++c) scale[size_t(c)] = fp8_absmax(scale[size_t(c)], load<T>(p.v, xb + j * p.v_stride.s + c));
  float* vd = p.v_descale + (b * p.heads_kv + hk) * D;
  for (int64_t c = 0; c < D; ++c) vd[c] = scale[size_t(c)] = fp8_scale_from_amax<E4M3>(scale[size_t(c)]);
  uint8_t* out = p.v8 + (b * p.heads_kv + hk) * D * P;
  for (int64_t c = 0; c < D; ++c) {
    for (int64_t pos = 0; pos < P; ++pos) {
      const int64_t j = (pos / 32) * 32 + fp8_v_key_order(int(pos % 32));
      out[c * P + pos] = j < S ? encode(load<T>(p.v, xb + j * p.v_stride.s + c), scale[size_t(c)]) : uint8_t(0);
    }
  }
}

template <typename T>
void run(const AttnQuantParams& p, const ParallelFor& parallel_for) {
  if (p.q != nullptr)
    parallel_for(p.batch * p.seqlen_q * p.heads, kRowGrain, [&](int64_t r0, int64_t r1) { q_rows<T>(p, r0, r1); });
  // k and v heads as one range of 2 B Hkv items (k first, none without k), one item per task
  const int64_t pairs = p.batch * p.heads_kv, k_items = p.k != nullptr ? pairs : 0;
  parallel_for(k_items + pairs, 1, [&](int64_t i0, int64_t i1) {
    const size_t D = size_t(p.head_dim);
    std::vector<double> part(D), total(D);
    std::vector<float> buf(D);
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t bh = i < k_items ? i : i - k_items, b = bh / p.heads_kv, hk = bh % p.heads_kv;
      if (i < k_items) k_head<T>(p, b, hk, part, total, buf);
      else v_head<T>(p, b, hk, buf);
    }
  });
}

// attention_keys_fp8: y of a row by the RoPE family's CPU arithmetic (rope_row_f32), the mean of
// the leading rows per batch row, then each 128-key block's rows, heads and codes.
template <typename T>
void keys_run(const AttnKeysParams& p, const ParallelFor& parallel_for) {
  const RopeParams& a = p.op;
  const RopeShape& sh = a.shape;
  const int64_t B = sh.batch, S = sh.seq, C = sh.cols, H = p.heads, D = C / H;
  const int64_t n = attention_keys_mean_keys(p), nb = (S + kAttnKeysBlock - 1) / kAttnKeysBlock;
  const T* x = a.x.ptr<T>();
  const T* w = static_cast<const T*>(a.weight);
  auto y_row = [&](float* y, float* scratch, int64_t r) {
    rope_row_f32<T>(y, scratch, x + r * a.x.layout.stride, r, w, true, a.eps, a.tables, sh);
  };
  std::vector<float> mean(size_t(B * C), 0.f);
  if (n > 0) {
    parallel_for(B, 1, [&](int64_t b0, int64_t b1) {
      std::vector<float> y(static_cast<size_t>(C)), scratch(static_cast<size_t>(C));
      std::vector<double> sum(static_cast<size_t>(C));
      for (int64_t b = b0; b < b1; ++b) {
        std::fill(sum.begin(), sum.end(), 0.0);
        for (int64_t j = 0; j < n; ++j) {
          y_row(y.data(), scratch.data(), b * S + j);
          for (int64_t c = 0; c < C; ++c) sum[size_t(c)] += double(y[size_t(c)]);
        }
        for (int64_t c = 0; c < C; ++c) mean[size_t(b * C + c)] = float(sum[size_t(c)] / double(n));
      }
    });
  }
  parallel_for(B * nb, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> kc(static_cast<size_t>(kAttnKeysBlock * C)), scratch(static_cast<size_t>(C));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t b = i / nb, j0 = (i % nb) * kAttnKeysBlock, rows = std::min(S - j0, kAttnKeysBlock);
      const float* mb = mean.data() + b * C;
      for (int64_t j = 0; j < rows; ++j) {
        float* y = kc.data() + j * C;
        y_row(y, scratch.data(), b * S + j0 + j);
        for (int64_t c = 0; c < C; ++c) y[c] = y[c] - mb[c];
      }
      for (int64_t h = 0; h < H; ++h) {
        float m = 0.f;
        for (int64_t j = 0; j < rows; ++j)
          for (int64_t c = h * D; c < (h + 1) * D; ++c) m = fp8_absmax(m, kc[size_t(j * C + c)]);
        const float s = fp8_scale_from_amax<E4M3>(m);
        for (int64_t j = 0; j < rows; ++j)
          for (int64_t c = h * D; c < (h + 1) * D; ++c)
            p.k8[(b * S + j0 + j) * C + c] = encode(kc[size_t(j * C + c)], s);
        p.k_descale[i * H + h] = s;
      }
    }
  });
}

}  // namespace

void attention_keys_fp8(const AttnKeysParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.op.dtype, [&](auto tag) { keys_run<type_of<decltype(tag)>>(p, parallel_for); });
}

void quantize_attention_fp8(const AttnQuantParams& p, const ParallelFor& parallel_for) {
  switch (p.dtype) {
    case AttnDtype::kBF16: return run<bfloat16_t>(p, parallel_for);
    case AttnDtype::kFP16: return run<half_t>(p, parallel_for);
    case AttnDtype::kFP32: return run<float>(p, parallel_for);
    case AttnDtype::kE4M3: return;  // not an input type (attention_quant_check)
  }
}

}  // namespace cpu
}  // namespace ltx_kernels
