// 8-bit float formats (OCP FP8), written from their definitions. Host and device, no torch.
//   E4M3 ("e4m3fn"): 1 sign, 4 exponent (bias 7), 3 mantissa; no Inf; NaN = S.1111.111;
//                    largest finite 448 (S.1111.110); smallest subnormal 2^-9.
//   E5M2:            1 sign, 5 exponent (bias 15), 2 mantissa; IEEE-like Inf/NaN (the top byte
//                    of a binary16); largest finite 57344.
// Encoding rounds to nearest, ties to even, and SATURATES: finite values beyond the largest
// finite one, and +-Inf, become +-max (what the quantizers want and what the hardware's
// cvt.rn.satfinite does); NaN stays NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define LTX_HD __host__ __device__ __forceinline__
#else
#define LTX_HD inline
#endif

namespace ltx_kernels {

// The bits of an fp32 value, and the value of 32 bits (host and device).
LTX_HD uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
#endif
}
LTX_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
#endif
}

LTX_HD bool fmt_isnan(float x) { return x != x; }
LTX_HD bool fmt_signbit(float x) { return (float_bits(x) >> 31) != 0; }

template <int EXP_BITS, int MAN_BITS>
struct MiniFloat {
  static constexpr int kExp = EXP_BITS;
  static constexpr int kMan = MAN_BITS;
  static constexpr int kBias = (1 << (EXP_BITS - 1)) - 1;
  static constexpr int kEmin = 1 - kBias;  // exponent of the smallest normal
};

struct E4M3 : MiniFloat<4, 3> {
  static constexpr float kMax = 448.f;
  static constexpr uint8_t kMaxCode = 0x7e;
  static constexpr uint8_t kNaN = 0x7f;
  static constexpr bool kHasInf = false;
};

struct E5M2 : MiniFloat<5, 2> {
  static constexpr float kMax = 57344.f;
  static constexpr uint8_t kMaxCode = 0x7b;
  static constexpr uint8_t kNaN = 0x7f;
  static constexpr bool kHasInf = true;
};

// Code -> float (exact).
template <class F>
LTX_HD float minifloat_decode(uint8_t code) {
  constexpr int M = F::kMan;
  const float sign = (code & 0x80) ? -1.f : 1.f;
  const int e = (code >> M) & ((1 << F::kExp) - 1);
  const int m = code & ((1 << M) - 1);
  if (F::kHasInf && e == (1 << F::kExp) - 1) return m == 0 ? sign * INFINITY : NAN;
  if (!F::kHasInf && (code & 0x7f) == F::kNaN) return NAN;
  if (e == 0) return sign * ldexpf(float(m), F::kEmin - M);
  return sign * ldexpf(float((1 << M) | m), e - F::kBias - M);
}

// float -> code, round to nearest even, saturating (see the header comment).
template <class F>
LTX_HD uint8_t minifloat_encode(float x) {
  constexpr int M = F::kMan;
  const uint8_t sign = fmt_signbit(x) ? 0x80 : 0x00;
  if (fmt_isnan(x)) return uint8_t(sign | F::kNaN);
  const float a = fabsf(x);
  if (a >= F::kMax) return uint8_t(sign | F::kMaxCode);
  if (a == 0.f) return sign;
  int e2;
  frexpf(a, &e2);                            // a = f * 2^e2, f in [0.5, 1)
  int e = e2 - 1;                            // floor(log2 a)
  if (e < F::kEmin) e = F::kEmin;            // subnormal range: fixed quantum
  const float q = rintf(ldexpf(a, M - e));   // units of 2^(e - M), exact scaling, RNE
  int units = int(q);
  if (units >= (2 << M)) {                   // rounded up to the next binade
    units >>= 1;
    e += 1;
  }
  if (units == 0) return sign;
  if (units < (1 << M)) return uint8_t(sign | units);  // subnormal (e == kEmin)
  const int field = e + F::kBias;
  const uint8_t code = uint8_t((field << M) | (units - (1 << M)));
  if (code > F::kMaxCode) return uint8_t(sign | F::kMaxCode);  // 448 < a < 464 rounds to 448
  return uint8_t(sign | code);
}

}  // namespace ltx_kernels
