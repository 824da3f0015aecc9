#include "ltx_kernels/cpu/fp8.h"

#include <algorithm>

namespace ltx_kernels {
namespace cpu {
namespace {

template <class F, typename T>
void group_rows(uint8_t* q, int64_t qs, float* sc, int64_t sr, int64_t scc, const T* x, int64_t xs,
                int64_t b, int64_t e, int64_t cols, int64_t group) {
  for (int64_t r = b; r < e; ++r) {
    const T* xr = x + r * xs;
    uint8_t* qr = q + r * qs;
    for (int64_t g = 0; g * group < cols; ++g) {
      const int64_t c0 = g * group;
      float m = 0.f;
      for (int64_t c = c0; c < c0 + group; ++c) m = fp8_absmax(m, to_float(xr[c]));
      const float s = fp8_scale_from_amax<F>(m);
      for (int64_t c = c0; c < c0 + group; ++c) qr[c] = fp8_quantize_value<F, false>(to_float(xr[c]), s);
      sc[r * sr + g * scc] = s;
    }
  }
}

template <class F, typename T>
void block_rows(uint8_t* q, int64_t qs, float* sc, int64_t sr, int64_t scc, const T* w, int64_t ws,
                int64_t tb0, int64_t tb1, int64_t rows, int64_t cols, int64_t bn, int64_t bk) {
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
      sc[tb * sr + tc * scc] = s;
    }
  }
}

template <class F, typename T>
void scaled_rows(uint8_t* q, int64_t qs, const T* x, int64_t xs, int64_t b, int64_t e, int64_t cols,
                 float s) {
  for (int64_t r = b; r < e; ++r)
    for (int64_t c = 0; c < cols; ++c) q[r * qs + c] = fp8_quantize_value<F, false>(to_float(x[r * xs + c]), s);
}

template <class F, typename T>
void dequant_rows(T* out, int64_t os, const uint8_t* q, int64_t qs, const float* sc, int64_t sr,
                  int64_t scc, int64_t b, int64_t e, int64_t cols, int64_t br, int64_t bc) {
  float table[256];
  for (int i = 0; i < 256; ++i) table[i] = minifloat_decode<F>(uint8_t(i));
  for (int64_t r = b; r < e; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[r * os + c] = from_float<T>(table[q[r * qs + c]] * sc[(r / br) * sr + (c / bc) * scc]);
}

}  // namespace

template <typename T>
void quantize_fp8_per_token_group(uint8_t* q, int64_t q_stride, float* scales, int64_t s_row,
                                  int64_t s_col, const T* x, int64_t x_stride, int64_t row_begin,
                                  int64_t row_end, int64_t cols, int64_t group, Fp8Format fmt) {
  if (fmt == Fp8Format::E5M2)
    group_rows<E5M2>(q, q_stride, scales, s_row, s_col, x, x_stride, row_begin, row_end, cols, group);
  else
    group_rows<E4M3>(q, q_stride, scales, s_row, s_col, x, x_stride, row_begin, row_end, cols, group);
}

template <typename T>
void quantize_fp8_block(uint8_t* q, int64_t q_stride, float* scales, int64_t s_row, int64_t s_col,
                        const T* w, int64_t w_stride, int64_t tile_row_begin, int64_t tile_row_end,
                        int64_t rows, int64_t cols, int64_t block_n, int64_t block_k, Fp8Format fmt) {
  if (fmt == Fp8Format::E5M2)
    block_rows<E5M2>(q, q_stride, scales, s_row, s_col, w, w_stride, tile_row_begin, tile_row_end,
                     rows, cols, block_n, block_k);
  else
    block_rows<E4M3>(q, q_stride, scales, s_row, s_col, w, w_stride, tile_row_begin, tile_row_end,
                     rows, cols, block_n, block_k);
}

template <typename T>
float fp8_amax(const T* x, int64_t x_stride, int64_t row_begin, int64_t row_end, int64_t cols) {
  float m = 0.f;
  for (int64_t r = row_begin; r < row_end; ++r)
    for (int64_t c = 0; c < cols; ++c) m = fp8_absmax(m, to_float(x[r * x_stride + c]));
  return m;
}

template <typename T>
void quantize_fp8_scaled(uint8_t* q, int64_t q_stride, const T* x, int64_t x_stride,
                         int64_t row_begin, int64_t row_end, int64_t cols, float scale,
                         Fp8Format fmt) {
  if (fmt == Fp8Format::E5M2)
    scaled_rows<E5M2>(q, q_stride, x, x_stride, row_begin, row_end, cols, scale);
  else
    scaled_rows<E4M3>(q, q_stride, x, x_stride, row_begin, row_end, cols, scale);
}

template <typename T>
void dequantize_fp8(T* out, int64_t out_stride, const uint8_t* q, int64_t q_stride,
                    const float* scales, int64_t s_row, int64_t s_col, int64_t row_begin,
                    int64_t row_end, int64_t cols, int64_t block_rows, int64_t block_cols,
                    Fp8Format fmt) {
  if (fmt == Fp8Format::E5M2)
    dequant_rows<E5M2>(out, out_stride, q, q_stride, scales, s_row, s_col, row_begin, row_end, cols,
                       block_rows, block_cols);
  else
    dequant_rows<E4M3>(out, out_stride, q, q_stride, scales, s_row, s_col, row_begin, row_end, cols,
                       block_rows, block_cols);
}

#define LTX_INSTANTIATE(T)                                                                         \
  template void quantize_fp8_per_token_group<T>(uint8_t*, int64_t, float*, int64_t, int64_t,       \
                                                const T*, int64_t, int64_t, int64_t, int64_t,      \
                                                int64_t, Fp8Format);                               \
  template void quantize_fp8_block<T>(uint8_t*, int64_t, float*, int64_t, int64_t, const T*,       \
                                      int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,        \
                                      int64_t, Fp8Format);                                         \
  template float fp8_amax<T>(const T*, int64_t, int64_t, int64_t, int64_t);                        \
  template void quantize_fp8_scaled<T>(uint8_t*, int64_t, const T*, int64_t, int64_t, int64_t,     \
                                       int64_t, float, Fp8Format);                                 \
  template void dequantize_fp8<T>(T*, int64_t, const uint8_t*, int64_t, const float*, int64_t,     \
                                  int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, Fp8Format);
LTX_INSTANTIATE(float)
LTX_INSTANTIATE(half_t)
LTX_INSTANTIATE(bfloat16_t)
#undef LTX_INSTANTIATE

}  // namespace cpu
}  // namespace ltx_kernels
