// FP8 quantization rules shared by the CUDA core and the CPU backend (host and device, no
// torch). The codec itself is formats.h; this header adds
//   - the quantization rule (one place, so CPU and GPU cannot drift):
//       s = amax / fmax              (fp32 DEQUANT scale; amax ignores NaN; fmax 448 or 57344)
//       q = encode(x / s)            (a true, correctly rounded fp32 division, not x * (1/s))
//       q = encode(x)   when s == 0  (all-zero group: +-0 stay exact zeros, NaN stays NaN)
//       q = encode(x)   for NaN / +-Inf elements (NaN -> NaN with its sign, Inf -> +-max);
//                       an Inf element makes its group's amax, hence s, Inf (others -> +-0)
//     so a group holding only zeros and NaNs gets scale 0, zero codes and NaN codes, never inf.
//   - fp8_encode_fast: an integer formulation of minifloat_encode (round to nearest even,
//     saturating, NaN keeps its sign), bit-identical to it for all 2^32 float inputs (checked
//     exhaustively when it was written); the GPU uses it because it is cheaper than the
//     frexp/ldexp formulation.
#pragma once

#include <cstdint>
#include <cstring>

#include "ltx_kernels/common/formats.h"

namespace ltx_kernels {

enum class Fp8Format : int { E4M3 = 0, E5M2 = 1 };

LTX_HD uint32_t fp8_float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
#endif
}

template <class F>
LTX_HD uint8_t fp8_encode_fast(float x) {
  constexpr int M = F::kMan;
  constexpr uint32_t kMaxBits = F::kExp == 4 ? 0x43e00000u : 0x47600000u;  // 448, 57344
  const uint32_t u = fp8_float_bits(x);
  const uint8_t sign = uint8_t((u >> 24) & 0x80u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint8_t(sign | F::kNaN);
  if (a >= kMaxBits) return uint8_t(sign | F::kMaxCode);  // saturate (Inf too)
  const int e = int(a >> 23) - 127;
  if (e >= F::kEmin) {  // normal in the target: drop 23 - M mantissa bits, ties to even
    constexpr int sh = 23 - M;
    const uint32_t r = (a + ((1u << (sh - 1)) - 1u) + ((a >> sh) & 1u)) >> sh;
    const uint32_t code = r - (uint32_t(127 - F::kBias) << M);
    return uint8_t(sign | (code > F::kMaxCode ? F::kMaxCode : code));
  }
  // subnormal in the target: units of 2^(kEmin - M); the scaling by a power of two is exact
  const float scaled = fabsf(x) * float(1 << (M - F::kEmin));
#if defined(__CUDA_ARCH__)
  const int units = __float2int_rn(scaled);
#else
  const int units = int(rintf(scaled));
#endif
  return uint8_t(sign | units);  // units <= 2^M: 2^M is the smallest normal's code
}

template <class F>
LTX_HD float fp8_scale_from_amax(float amax) {
  return amax / F::kMax;
}

// The element rule above, with the reference codec (CPU) or the fast one (GPU).
template <class F, bool FAST>
LTX_HD uint8_t fp8_quantize_value(float x, float s) {
  // NaN and +-Inf bypass the division: NaN keeps its sign (GPUs return a canonical NaN from
  // a division, x86 the operand), Inf saturates to +-max.
  const bool direct = s == 0.f || !(fabsf(x) <= 3.402823466e38f);
  const float v = direct ? x : x / s;
  return FAST ? fp8_encode_fast<F>(v) : minifloat_encode<F>(v);
}

// NaN-ignoring max of |x| (fmaxf returns the other operand when one is NaN).
LTX_HD float fp8_absmax(float m, float x) { return fmaxf(m, fabsf(x)); }

}  // namespace ltx_kernels
