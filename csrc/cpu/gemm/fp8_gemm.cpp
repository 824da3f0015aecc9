// CPU backend of the blockwise-scaled FP8 GEMM (see ltx_kernels/cpu/gemm.h for the contract).
//
// Blocking: kRowBlock rows of A and kColBlock rows of B are decoded to fp32 once (through a
// 256-entry table built from the format definition) and every (row, col) pair of the two blocks
// is computed from those buffers, so each byte is decoded N / kColBlock (resp. once per row
// block) times instead of once per product. The 128-wide dot product uses kLanes independent
// fp32 partial sums, which the compiler maps onto SIMD registers.
#include "ltx_kernels/cpu/gemm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <cstring>
#include <vector>

#include "ltx_kernels/common/formats.h"

namespace ltx_kernels {
namespace cpu {
namespace {

constexpr int64_t kGroup = 128;    // K block of the scaling recipe
constexpr int64_t kRowBlock = 16;  // rows of A decoded together
constexpr int64_t kColBlock = 16;  // rows of B (output columns) decoded together
constexpr int kLanes = 8;          // partial sums in one 128-wide dot product

struct E4m3Table {
  float v[256];
  E4m3Table() {
    for (int c = 0; c < 256; ++c) v[c] = minifloat_decode<E4M3>(uint8_t(c));
  }
};

const float* e4m3_table() {
  static const E4m3Table t;
  return t.v;
}

inline void decode_row(float* dst, const uint8_t* src, int64_t n, const float* table) {
  for (int64_t i = 0; i < n; ++i) dst[i] = table[src[i]];
}

// fp32 dot product of 128 values; every term x*y is exact (e4m3 x e4m3 has <= 8 significant
// bits), the sum is in fp32 in kLanes interleaved partial sums.
inline float dot128(const float* __restrict x, const float* __restrict y) {
  float acc[kLanes] = {};
  for (int64_t i = 0; i < kGroup; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l] * y[i + l];
  float s = 0.f;
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  return s;
}

}  // namespace

float round_to_odd_f32(double v) {
  const float f = static_cast<float>(v);  // round to nearest even
  if (std::isnan(v) || std::isinf(f) || static_cast<double>(f) == v) return f;
  // truncate toward zero, then set the sticky (last) bit: round to odd
  float t = f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) t = std::nextafter(f, 0.f);
  uint32_t u;
  std::memcpy(&u, &t, sizeof(u));
  u |= 1u;
  std::memcpy(&t, &u, sizeof(u));
  return t;
}

template <typename T>
void fp8_blockwise_gemm(T* d, int64_t ldd, const uint8_t* a, int64_t lda, const float* a_scales,
                        int64_t sa_m, int64_t sa_k, const uint8_t* b, int64_t ldb,
                        const float* b_scales, int64_t sb_n, int64_t sb_k, const float* bias,
                        int64_t row_begin, int64_t row_end, int64_t N, int64_t K) {
  if (row_end <= row_begin || N <= 0) return;
  const float* table = e4m3_table();
  const int64_t G = K / kGroup;
  std::vector<float> abuf(size_t(kRowBlock * K)), bbuf(size_t(kColBlock * K));
  std::vector<double> acc(size_t(kRowBlock * kColBlock));
  for (int64_t m0 = row_begin; m0 < row_end; m0 += kRowBlock) {
    const int64_t mb = std::min(kRowBlock, row_end - m0);
    for (int64_t i = 0; i < mb; ++i) decode_row(&abuf[size_t(i * K)], a + (m0 + i) * lda, K, table);
    for (int64_t n0 = 0; n0 < N; n0 += kColBlock) {
      const int64_t nb = std::min(kColBlock, N - n0);
      for (int64_t j = 0; j < nb; ++j) decode_row(&bbuf[size_t(j * K)], b + (n0 + j) * ldb, K, table);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t g = 0; g < G; ++g) {
        for (int64_t i = 0; i < mb; ++i) {
          const double sa = a_scales[(m0 + i) * sa_m + g * sa_k];
          const float* x = &abuf[size_t(i * K + g * kGroup)];
          for (int64_t j = 0; j < nb; ++j) {
            const double sb = b_scales[((n0 + j) / kGroup) * sb_n + g * sb_k];
            const float dot = dot128(x, &bbuf[size_t(j * K + g * kGroup)]);
            // (dot * sa) * sb: the order the kernels use (promote with the A scale, then B's)
            acc[size_t(i * kColBlock + j)] += double(dot) * sa * sb;
          }
        }
      }
      for (int64_t i = 0; i < mb; ++i) {
        T* row = d + (m0 + i) * ldd;
        for (int64_t j = 0; j < nb; ++j) {
          double v = acc[size_t(i * kColBlock + j)];
          if (bias) v += double(bias[n0 + j]);
          if constexpr (std::is_same<T, float>::value) {
            row[n0 + j] = static_cast<float>(v);  // fp32 out: one RNE
          } else {
            row[n0 + j] = from_float<T>(round_to_odd_f32(v));
          }
        }
      }
    }
  }
}

#define LTX_INSTANTIATE(T)                                                                       \
  template void fp8_blockwise_gemm<T>(T*, int64_t, const uint8_t*, int64_t, const float*,        \
                                      int64_t, int64_t, const uint8_t*, int64_t, const float*,   \
                                      int64_t, int64_t, const float*, int64_t, int64_t, int64_t, \
                                      int64_t);
LTX_INSTANTIATE(half_t)
LTX_INSTANTIATE(bfloat16_t)
LTX_INSTANTIATE(float)
#undef LTX_INSTANTIATE

}  // namespace cpu
}  // namespace ltx_kernels
