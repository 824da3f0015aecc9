#include "ltx_kernels/cpu/ops.h"
#include "ltx_kernels/cpu/shared_rows.h"

#include <algorithm>
#include <vector>

namespace ltx_kernels {
namespace cpu {
namespace {

constexpr int64_t kRowGrain = 16;         // rows per task
constexpr int64_t kTensorChunk = 4096;    // elements per task (per tensor)

template <class F, typename T>
void group_row(uint8_t* qr, float* sc, int64_t scc, const T* xr, int64_t cols, int64_t group) {
  for (int64_t g = 0; g * group < cols; ++g) {
    const int64_t c0 = g * group;
    float m = 0.f;
    for (int64_t c = c0; c < c0 + group; ++c) m = fp8_absmax(m, to_float(xr[c]));
    const float s = fp8_scale_from_amax<F>(m);
    for (int64_t c = c0; c < c0 + group; ++c) qr[c] = fp8_quantize_value<F, false>(to_float(xr[c]), s);
    sc[g * scc] = s;
  }
}

template <class F, typename T>
void block_rows(const Fp8QuantizeParams& p, int64_t tb0, int64_t tb1) {
  const T* w = p.x.ptr<T>();
  uint8_t* q = p.q.ptr<uint8_t>();
  const int64_t ws = p.x.layout.stride, qs = p.q.layout.stride;
  const int64_t rows = p.x.layout.rows, cols = p.x.layout.cols, bn = p.block_rows, bk = p.block_cols;
  for (int64_t tb = tb0; tb < tb1; ++tb) {
    const int64_t r0 = tb * bn, r1 = std::min(rows, r0 + bn);
    for (int64_t tc = 0; tc * bk < cols; ++tc) {
      const int64_t c0 = tc * bk, c1 = std::min(cols, c0 + bk);
      float m = 0.f;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) m = fp8_absmax(m, to_float(w[r * ws + c]));
      const float s = fp8_scale_from_amax<F>(m);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) q[r * qs + c] = fp8_quantize_value<F, false>(to_float(w[r * ws + c]), s);
      p.scales[tb * p.s_row + tc * p.s_col] = s;
    }
  }
}

template <class F, typename T>
void dequant_rows(const Fp8DequantizeParams& p, int64_t b, int64_t e) {
  float table[256];
  for (int i = 0; i < 256; ++i) table[i] = minifloat_decode<F>(uint8_t(i));
  const uint8_t* q = p.q.ptr<uint8_t>();
  T* out = p.out.ptr<T>();
  for (int64_t r = b; r < e; ++r)
    for (int64_t c = 0; c < p.q.layout.cols; ++c)
      out[r * p.out.layout.stride + c] = from_float<T>(
          table[q[r * p.q.layout.stride + c]] * p.scales[(r / p.block_rows) * p.s_row + (c / p.block_cols) * p.s_col]);
}

// fn(TypeTag<E4M3 or E5M2>{}) as the format says.
template <class Fn>
void dispatch_format(Fp8Format fmt, Fn&& fn) {
  if (fmt == Fp8Format::E5M2) fn(TypeTag<E5M2>{});
  else fn(TypeTag<E4M3>{});
}

void dequantize(const Fp8DequantizeParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    dispatch_format(p.format, [&](auto ftag) {
      using F = type_of<decltype(ftag)>;
      parallel_for(p.q.layout.rows, kRowGrain, [&](int64_t b, int64_t e) { dequant_rows<F, T>(p, b, e); });
    });
  });
}

}  // namespace

template <typename T>
void quantize_fp8_groups(uint8_t* q, float* scales, int64_t s_col, const T* x, int64_t cols, int64_t group,
                         Fp8Format fmt) {
  dispatch_format(fmt, [&](auto ftag) { group_row<type_of<decltype(ftag)>>(q, scales, s_col, x, cols, group); });
}

template void quantize_fp8_groups<float>(uint8_t*, float*, int64_t, const float*, int64_t, int64_t, Fp8Format);

void quantize_fp8_per_token_group(const Fp8QuantizeParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    parallel_for(p.x.layout.rows, kRowGrain, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        quantize_fp8_groups<T>(p.q.ptr<uint8_t>() + r * p.q.layout.stride, p.scales + r * p.s_row, p.s_col,
                               p.x.ptr<T>() + r * p.x.layout.stride, p.x.layout.cols, p.block_cols, p.format);
    });
  });
}

void quantize_fp8_block(const Fp8QuantizeParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    dispatch_format(p.format, [&](auto ftag) {
      using F = type_of<decltype(ftag)>;
      const int64_t tile_rows = (p.x.layout.rows + p.block_rows - 1) / p.block_rows;
      parallel_for(tile_rows, 1, [&](int64_t b, int64_t e) { block_rows<F, T>(p, b, e); });
    });
  });
}

void quantize_fp8_per_tensor(const Fp8QuantizeParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    dispatch_format(p.format, [&](auto ftag) {
      using F = type_of<decltype(ftag)>;
      const T* x = p.x.ptr<T>();
      uint8_t* q = p.q.ptr<uint8_t>();
      const int64_t n = p.x.layout.cols;
      const int64_t chunks = (n + kTensorChunk - 1) / kTensorChunk;
      float s;
      if (p.given_scale != nullptr) {
        s = p.given_scale[0];
      } else {  // amax per chunk, then over the chunks (max is exact in any order)
        std::vector<float> part(size_t(chunks), 0.f);
        parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
          for (int64_t k = b; k < e; ++k) {
            float m = 0.f;
            for (int64_t i = k * kTensorChunk; i < std::min(n, (k + 1) * kTensorChunk); ++i)
              m = fp8_absmax(m, to_float(x[i]));
            part[size_t(k)] = m;
          }
        });
        float amax = 0.f;
        for (float m : part) amax = std::max(amax, m);
        s = fp8_scale_from_amax<F>(amax);
      }
      parallel_for(n, kTensorChunk, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) q[i] = fp8_quantize_value<F, false>(to_float(x[i]), s);
      });
      p.scales[0] = s;
    });
  });
}

void dequantize_fp8_per_token_group(const Fp8DequantizeParams& p, const ParallelFor& parallel_for) {
  dequantize(p, parallel_for);
}
void dequantize_fp8_block(const Fp8DequantizeParams& p, const ParallelFor& parallel_for) {
  dequantize(p, parallel_for);
}
void dequantize_fp8_per_tensor(const Fp8DequantizeParams& p, const ParallelFor& parallel_for) {
  dequantize(p, parallel_for);
}

}  // namespace cpu
}  // namespace ltx_kernels
