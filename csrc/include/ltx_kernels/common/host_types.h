// Host-side 16-bit float storage types and exact conversions, written from the IEEE 754
// binary16 and bfloat16 definitions. No CUDA and no torch: the CPU backend and the
// GoogleTest suite use these. Bit layouts match at::Half / at::BFloat16 / __half /
// __nv_bfloat16, so the torch adapter may reinterpret their data pointers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "ltx_kernels/common/formats.h"  // float_bits, bits_float

namespace ltx_kernels {

struct bfloat16_t {
  uint16_t bits;
};

struct half_t {
  uint16_t bits;
};

// bfloat16 is the top half of a float32.
inline float to_float(bfloat16_t h) { return bits_float(uint32_t(h.bits) << 16); }

// Round to nearest, ties to even; NaN stays NaN (quiet), Inf stays Inf.
inline bfloat16_t bfloat16_from_float(float f) {
  uint32_t u = float_bits(f);
  if (std::isnan(f)) return bfloat16_t{uint16_t((u >> 16) | 0x0040u)};
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return bfloat16_t{uint16_t(u >> 16)};
}

// binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
inline float to_float(half_t h) {
  uint32_t sign = uint32_t(h.bits & 0x8000u) << 16;
  uint32_t exp = (h.bits >> 10) & 0x1fu;
  uint32_t man = h.bits & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // Inf / NaN
  if (exp == 0) {                                                          // zero / subnormal
    float v = std::ldexp(float(man), -24);
    return sign ? -v : v;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

// Round to nearest, ties to even, overflow to Inf, gradual underflow.
inline half_t half_from_float(float f) {
  uint32_t u = float_bits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return half_t{uint16_t(sign | 0x7e00u)};  // NaN
  if (a >= 0x477ff000u) return half_t{uint16_t(sign | 0x7c00u)};  // >= 65520 rounds to Inf
  int e = int(a >> 23) - 127;
  if (e >= -14) {  // normal range: drop 13 mantissa bits with RNE
    uint32_t m = a & 0x7fffffu;
    uint32_t h = (uint32_t(e + 15) << 10) | (m >> 13);
    uint32_t rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h += 1;  // may carry into exponent: fine
    return half_t{uint16_t(sign | h)};
  }
  // subnormal or zero: value = round(|f| * 2^24) units of 2^-24, RNE via nearbyint (default mode)
  float scaled = std::ldexp(bits_float(a), 24);
  uint32_t q = uint32_t(std::nearbyint(scaled));  // <= 1024, 1024 becomes the smallest normal
  return half_t{uint16_t(sign | q)};
}

template <typename T>
inline T from_float(float f);
template <>
inline float from_float<float>(float f) { return f; }
template <>
inline bfloat16_t from_float<bfloat16_t>(float f) { return bfloat16_from_float(f); }
template <>
inline half_t from_float<half_t>(float f) { return half_from_float(f); }
inline float to_float(float f) { return f; }

}  // namespace ltx_kernels
