// CPU backend of the GEMM family (see ltx_kernels/cpu/gemm.h for the contract).
//
// Blocking: kRowBlock rows of A and kColBlock rows of B are decoded to fp32 once (FP8 through a
// 256-entry table built from the format definition) and every (row, col) pair of the two blocks
// is computed from those buffers, so each byte is decoded N / kColBlock (resp. once per row
// block) times instead of once per product. The 128-wide dot products use kLanes independent
// fp32 partial sums, which the compiler maps onto SIMD registers. The epilogue then runs on the
// kRowBlock x N block of double results.
#include "ltx_kernels/cpu/gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ltx_kernels/common/formats.h"
#include "ltx_kernels/cpu/activation_math.h"
#include "ltx_kernels/cpu/shared_rows.h"

namespace ltx_kernels {
namespace cpu {
namespace {

using gemm::Epilogue;
using gemm::GateKind;
using gemm::GemmParams;
using gemm::Operands;
using gemm::OutKind;

constexpr int64_t kGroup = 128;    // K block of the scaling recipe (and of the bf16 dot products)
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

// Row of K operand values as fp32 (FP8 codes or bf16).
inline void decode_row(float* dst, const void* src, int64_t n, bool fp8, const float* table) {
  if (fp8) {
    const auto* s = static_cast<const uint8_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = table[s[i]];
  } else {
    const auto* s = static_cast<const bfloat16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = to_float(s[i]);
  }
}

// fp32 dot product of len <= 128 values in kLanes interleaved partial sums.
inline float dot_block(const float* __restrict x, const float* __restrict y, int64_t len) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= len; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += x[i + l] * y[i + l];
  for (int l = 0; i < len; ++i, ++l) acc[l] += x[i] * y[i];
  float s = 0.f;
  for (int l = 0; l < kLanes; ++l) s += acc[l];
  return s;
}

double load_16bit(const void* p, int64_t i, OutKind t) {
  const uint16_t bits = static_cast<const uint16_t*>(p)[i];
  return t == OutKind::kFP16 ? double(to_float(half_t{bits})) : double(to_float(bfloat16_t{bits}));
}

void store_16bit(void* p, int64_t i, double v, OutKind t) {
  const float f = round_to_odd_f32(v);
  uint16_t bits = t == OutKind::kFP16 ? from_float<half_t>(f).bits : from_float<bfloat16_t>(f).bits;
  static_cast<uint16_t*>(p)[i] = bits;
}

// y[i * N + n] (rows m0 .. m0 + mb - 1) = sum + bias, in double.
void accumulate(const GemmParams& p, int64_t m0, int64_t mb, std::vector<float>& abuf, std::vector<float>& bbuf,
                std::vector<double>& y) {
  const bool fp8 = e4m3_operands(p.operands), blockwise = p.operands == Operands::kFp8Blockwise;
  const int64_t N = p.N, K = p.K;
  const int64_t G = (K + kGroup - 1) / kGroup;
  const float* table = e4m3_table();
  const int64_t in_bytes = fp8 ? 1 : 2;
  for (int64_t i = 0; i < mb; ++i)
    decode_row(&abuf[size_t(i * K)], static_cast<const uint8_t*>(p.a) + (m0 + i) * p.lda * in_bytes, K, fp8, table);
  for (int64_t n0 = 0; n0 < N; n0 += kColBlock) {
    const int64_t nb = std::min(kColBlock, N - n0);
    for (int64_t j = 0; j < nb; ++j)
      decode_row(&bbuf[size_t(j * K)], static_cast<const uint8_t*>(p.b) + (n0 + j) * p.ldb * in_bytes, K, fp8, table);
    for (int64_t i = 0; i < mb; ++i) {
      for (int64_t j = 0; j < nb; ++j) {
        double acc = 0.0;
        for (int64_t g = 0; g < G; ++g) {
          const int64_t len = std::min(kGroup, K - g * kGroup);
          const float dot = dot_block(&abuf[size_t(i * K + g * kGroup)], &bbuf[size_t(j * K + g * kGroup)], len);
          if (blockwise) {
            const double sa = p.a_scales[(m0 + i) * p.sa_stride_m + g * p.sa_stride_k];
            const double sb = p.b_scales[((n0 + j) / kGroup) * p.sb_stride_n + g * p.sb_stride_k];
            acc += double(dot) * sa * sb;  // (dot * sa) * sb: the kernels' order
          } else {
            acc += double(dot);
          }
        }
        if (p.operands == Operands::kFp8Rowwise) {  // acc * (sa * sb), the scale product in fp32
          const float s = p.a_scales[(m0 + i) * p.sa_stride_m] * p.b_scales[(n0 + j) * p.sb_stride_n];
          acc *= double(s);
        }
        y[size_t(i * N + n0 + j)] = acc;
      }
    }
  }
  if (p.bias) {
    for (int64_t n = 0; n < N; ++n) {
      const double b = p.bias_is_out_dtype ? load_16bit(p.bias, n, p.out) : double(static_cast<const float*>(p.bias)[n]);
      for (int64_t i = 0; i < mb; ++i) y[size_t(i * N + n)] += b;
    }
  }
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

void gemm_rows(const GemmParams& p, int64_t row_begin, int64_t row_end) {
  if (row_end <= row_begin || p.N <= 0) return;
  const int64_t N = p.N, K = p.K;
  std::vector<float> abuf(size_t(kRowBlock * std::max<int64_t>(K, 1))), bbuf(size_t(kColBlock * std::max<int64_t>(K, 1)));
  std::vector<double> y(size_t(kRowBlock * N));
  std::vector<float> row(static_cast<size_t>(N));
  const bool gelu = p.epilogue == Epilogue::kGeluTanh;
  for (int64_t m0 = row_begin; m0 < row_end; m0 += kRowBlock) {
    const int64_t mb = std::min(kRowBlock, row_end - m0);
    accumulate(p, m0, mb, abuf, bbuf, y);
    for (int64_t i = 0; i < mb; ++i) {
      const int64_t m = m0 + i;
      const double* yr = &y[size_t(i * N)];
      if (p.out == OutKind::kFP8) {
        for (int64_t n = 0; n < N; ++n) {
          const float v = static_cast<float>(yr[n]);
          row[size_t(n)] = gelu ? act::GeluTanh::f(v) : v;
        }
        quantize_fp8_groups<float>(static_cast<uint8_t*>(p.d) + m * p.ldd, p.d_scales + m * p.ds_stride_m,
                                   p.ds_stride_g, row.data(), N, kGroup, Fp8Format::E4M3);
        continue;
      }
      if (p.epilogue == Epilogue::kGatedResidual) {
        const int64_t grow = p.gate_kind == GateKind::kPerToken ? m : m / p.tokens_per_sample;
        for (int64_t n = 0; n < N; ++n) {
          const double h = load_16bit(p.residual, m * p.ld_residual + n, p.out);
          const double g = load_16bit(p.gate, grow * p.ld_gate + n, p.out);
          store_16bit(p.d, m * p.ldd + n, h + g * double(static_cast<float>(yr[n])), p.out);
        }
      } else if (gelu) {
        for (int64_t n = 0; n < N; ++n)
          store_16bit(p.d, m * p.ldd + n, double(act::GeluTanh::f(static_cast<float>(yr[n]))), p.out);
      } else {
        for (int64_t n = 0; n < N; ++n) store_16bit(p.d, m * p.ldd + n, yr[n], p.out);
      }
    }
  }
}

}  // namespace cpu
}  // namespace ltx_kernels
