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
//     saturating, NaN keeps its sign), bit-identical to it for all 2^32 float inputs (an
//     exhaustive check the test suite does not repeat); GPUs before sm_89 use it because it is
//     cheaper than the frexp/ldexp formulation, sm_89+ the hardware conversion (fp8_encode_device).
#pragma once

#include <cstdint>
#include <cstring>

#include "ltx_kernels/common/formats.h"

#if defined(__CUDACC__)
#include <cuda_fp8.h>
#endif

namespace ltx_kernels {

enum class Fp8Format : int { E4M3 = 0, E5M2 = 1 };

template <class F>
LTX_HD uint8_t fp8_encode_fast(float x) {
  constexpr int M = F::kMan;
  constexpr uint32_t kMaxBits = F::kExp == 4 ? 0x43e00000u : 0x47600000u;  // 448, 57344
  const uint32_t u = float_bits(x);
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

#if defined(__CUDACC__)
// The hardware conversion (cvt.rn.satfinite.{e4m3,e5m2}x2.f32 on sm_89+): round to nearest even,
// saturating to +-max (Inf too), so bit-identical to fp8_encode_fast except that it returns a
// canonical NaN; the sign of a NaN is put back. tests/test_fp8.py checks every fp16/bf16 pattern
// and random fp32 quotients on the GPU against the CPU codec. Older GPUs use fp8_encode_fast.
template <class F>
__device__ __forceinline__ uint8_t fp8_encode_device(float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  const uint8_t c = uint8_t(__nv_cvt_float_to_fp8(v, __NV_SATFINITE, F::kExp == 4 ? __NV_E4M3 : __NV_E5M2));
  return v != v ? uint8_t(((__float_as_uint(v) >> 24) & 0x80u) | F::kNaN) : c;
#else
  return fp8_encode_fast<F>(v);
#endif
}
#endif

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
#if defined(__CUDA_ARCH__)
  if (FAST) return fp8_encode_device<F>(v);
#endif
  return FAST ? fp8_encode_fast<F>(v) : minifloat_encode<F>(v);
}

#if defined(__CUDACC__)
// x / s for a whole group at the cost of a multiply and two FMAs per element, still correctly
// rounded: with r = RN(1/s) and q0 = RN(x r), the residual e = x - q0 s is exact (FMA) and
// q = RN(q0 + e r) = RN(x / s) (Markstein's correction step; the hardware's own div.rn fast path
// is this step with a less accurate reciprocal). Ranges: for s in [2^-80, 2^100], r is normal; a
// quotient that overflows stays +-Inf (it saturates, as x / s would); a residual can only be
// subnormal when |x| < 2^-102, i.e. for a quotient below 2^-22, which encodes to zero either way
// (the smallest FP8 subnormal is 2^-9 for E4M3, 2^-16 for E5M2). Other scales use the IEEE
// division. Checked on the host against x / s for 2e8 random pairs (all-ones significands and
// powers of two included): 0 differences.
struct Fp8Divisor {
  float s, r;
  bool ieee;
};
// RN(x / s) by that step, for r = RN(1 / s) and s in the Markstein range (no special cases).
__device__ __forceinline__ float fp8_markstein_div(float x, float s, float r) {
  const float q0 = x * r;
  return fmaf(fmaf(-q0, s, x), r, q0);
}
__device__ __forceinline__ Fp8Divisor fp8_divisor(float s) {
  Fp8Divisor d;
  d.s = s;
  d.ieee = !(s >= 0x1p-80f && s <= 0x1p100f);  // also catches 0, negative and NaN scales
  d.r = d.ieee ? 0.f : __frcp_rn(s);
  return d;
}
// fp8_quantize_value<F, true>(x, d.s), bit for bit.
template <class F>
__device__ __forceinline__ uint8_t fp8_quantize_div(float x, const Fp8Divisor& d) {
  float v;
  if (d.ieee) {
    v = (d.s == 0.f || !(fabsf(x) <= 3.402823466e38f)) ? x : x / d.s;
  } else {
    const float q0 = x * d.r;
    const float q = fmaf(fmaf(-q0, d.s, x), d.r, q0);
    // NaN / Inf bypass the division; a quotient that overflows (a given per-tensor scale far
    // below |x| / max) stays +-Inf and saturates, as x / s would
    // (copysign: the FMAs turn -0 and negative quotients that underflow into +0; s > 0 here)
    v = fabsf(x) <= 3.402823466e38f ? (fabsf(q0) <= 3.402823466e38f ? copysignf(q, x) : q0) : x;
  }
  return fp8_encode_device<F>(v);
}

// V values (V even) of one group whose scale came from the group's own amax, so that every
// finite |x| <= fmax * s and no quotient overflows, encoded bit for bit as
// fp8_quantize_value<F, true>(x[j], s), at about half the instructions of fp8_quantize_div:
//   q = RN(x / s) by the Markstein step of fp8_quantize_div without its special cases (no
//   overflow is possible; a NaN x gives a NaN q); the only signs the FMAs lose are those of -0,
//   of negative quotients that underflow to +0 and of NaN, and OR-ing the sign bit of x into
//   the code puts them back (every other code already carries x's sign: the conversion keeps
//   the sign of +-0 and of nonzero values, and the canonical NaN 0x7f is F::kNaN);
//   two elements per hardware conversion (cvt.rn.satfinite.{e4m3,e5m2}x2.f32).
// Groups whose scale is outside the Markstein range (0, Inf, NaN, extremes) and GPUs before
// sm_89 take fp8_quantize_div per element. Not for given (per-tensor) scales: there x / s may
// overflow.
template <class F, int V>
__device__ __forceinline__ void fp8_quantize_bounded(const float (&x)[V], const Fp8Divisor& d,
                                                     uint8_t (&c)[V]) {
  static_assert(V % 2 == 0, "pairs");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if (!d.ieee) {
#pragma unroll
    for (int j = 0; j < V; j += 2) {
      // fp8_markstein_div of both, written out pairwise (the form the benchmark records time)
      const float q0a = x[j] * d.r, q0b = x[j + 1] * d.r;
      const float qa = fmaf(fmaf(-q0a, d.s, x[j]), d.r, q0a);
      const float qb = fmaf(fmaf(-q0b, d.s, x[j + 1]), d.r, q0b);
      const uint32_t pair = __nv_cvt_float2_to_fp8x2(make_float2(qa, qb), __NV_SATFINITE,
                                                     F::kExp == 4 ? __NV_E4M3 : __NV_E5M2);
      // bytes 3 of x[j] and x[j + 1] (their sign bytes) to bytes 0 and 1
      const uint32_t sg = __byte_perm(__float_as_uint(x[j]), __float_as_uint(x[j + 1]), 0x0073u);
      const uint32_t code = pair | (sg & 0x8080u);
      c[j] = uint8_t(code);
      c[j + 1] = uint8_t(code >> 8);
    }
    return;
  }
#endif
#pragma unroll
  for (int j = 0; j < V; ++j) c[j] = fp8_quantize_div<F>(x[j], d);
}

// Four floats to four codes (byte e the code of f[e]) by two paired conversions
// (cvt.rn.satfinite.{e4m3,e5m2}x2.f32, the same rounding as __nv_cvt_float2_to_fp8x2), the
// halves joined by the register pair move instead of masks and a byte permute.
template <__nv_fp8_interpretation_t kind>
__device__ __forceinline__ uint32_t cvt_fp8x4(const float (&f)[4]) {
  uint32_t r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (kind == __NV_E4M3) {
    asm("{\n\t.reg .b16 lo, hi;\n\t"
        "cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n\t"
        "cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n\t"
        "mov.b32 %0, {lo, hi};\n\t}"
        : "=r"(r) : "f"(f[0]), "f"(f[1]), "f"(f[2]), "f"(f[3]));
  } else {
    asm("{\n\t.reg .b16 lo, hi;\n\t"
        "cvt.rn.satfinite.e5m2x2.f32 lo, %2, %1;\n\t"
        "cvt.rn.satfinite.e5m2x2.f32 hi, %4, %3;\n\t"
        "mov.b32 %0, {lo, hi};\n\t}"
        : "=r"(r) : "f"(f[0]), "f"(f[1]), "f"(f[2]), "f"(f[3]));
  }
#else
  r = 0;
#endif
  return r;
}

// The sign bits of four floats at bits 7, 15, 23, 31 (other bits unspecified).
__device__ __forceinline__ uint32_t fp8_sign_bytes(const float (&f)[4]) {
  const uint32_t w0 = __float_as_uint(f[0]), w1 = __float_as_uint(f[1]), w2 = __float_as_uint(f[2]),
                 w3 = __float_as_uint(f[3]);
  return __byte_perm(__byte_perm(w0, w1, 0x0073u), __byte_perm(w2, w3, 0x7300u), 0x7610u);
}

// fp8_quantize_bounded for four values as one word (byte e the code of f[e]): two paired
// conversions joined by the register pair move, the four signs gathered by three byte permutes
// and OR-ed in by one LOP3; no per-byte unpacking before a store of whole words.
template <class F>
__device__ __forceinline__ uint32_t fp8_quantize_bounded4(const float (&f)[4], const Fp8Divisor& d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if (!d.ieee) {
    float q[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) q[e] = fp8_markstein_div(f[e], d.s, d.r);
    return cvt_fp8x4<F::kExp == 4 ? __NV_E4M3 : __NV_E5M2>(q) | (fp8_sign_bytes(f) & 0x80808080u);
  }
#endif
  uint32_t w = 0;
#pragma unroll
  for (int e = 0; e < 4; ++e) w |= uint32_t(fp8_quantize_div<F>(f[e], d)) << (8 * e);
  return w;
}

// V values (V % 4 == 0) as V / 4 such words, word j the codes of x[4j .. 4j + 3].
template <class F, int V>
__device__ __forceinline__ void fp8_quantize_bounded_words(const float (&x)[V], const Fp8Divisor& d,
                                                           uint32_t (&w)[V / 4]) {
  static_assert(V % 4 == 0, "whole words");
#pragma unroll
  for (int j = 0; j < V / 4; ++j) {
    const float f[4] = {x[4 * j], x[4 * j + 1], x[4 * j + 2], x[4 * j + 3]};
    w[j] = fp8_quantize_bounded4<F>(f, d);
  }
}
#endif

// NaN-ignoring max of |x| (fmaxf returns the other operand when one is NaN).
LTX_HD float fp8_absmax(float m, float x) { return fmaxf(m, fabsf(x)); }

}  // namespace ltx_kernels
