// Sub-byte float formats, written from their definitions. Host and device, no torch.
// Built on formats.h (minifloat_encode / minifloat_decode, round to nearest even, saturating):
// the magnitude is coded there with the sign in bit 7, then the sign moves to its place here.
//   FP4 E2M1 (NVFP4 element): 1 sign (bit 3), 2 exponent (bias 1), 1 mantissa;
//                             values {0, 0.5, 1, 1.5, 2, 3, 4, 6}; no Inf/NaN.
//   FP6 E2M3 (OCP MX):        1 sign (bit 5), 2 exponent (bias 1), 3 mantissa; max 7.5.
//   FP6 E3M2 (OCP MX):        1 sign (bit 5), 3 exponent (bias 3), 2 mantissa; max 28.
// None has Inf or NaN: encoding saturates finite overflow and +-Inf to +-max, and maps NaN
// to +0 (code 0) -- a deliberate choice (there is no NaN code to keep), tested.
// LTX-2's "FP6" (an E4M3 byte without exponent bits 6..5) is a bit operation, not a codec:
// see fp6_e4m3_drop / fp6_e4m3_restore.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/formats.h"

namespace ltx_kernels {

struct E2M1 : MiniFloat<2, 1> {
  static constexpr float kMax = 6.f;
  static constexpr uint8_t kMaxCode = 0x07;
  static constexpr uint8_t kNaN = 0x7f;  // unreachable: no NaN code (NaN handled before)
  static constexpr bool kHasInf = false;
};

struct E2M3 : MiniFloat<2, 3> {
  static constexpr float kMax = 7.5f;
  static constexpr uint8_t kMaxCode = 0x1f;
  static constexpr uint8_t kNaN = 0x7f;
  static constexpr bool kHasInf = false;
};

struct E3M2 : MiniFloat<3, 2> {
  static constexpr float kMax = 28.f;
  static constexpr uint8_t kMaxCode = 0x1f;
  static constexpr uint8_t kNaN = 0x7f;
  static constexpr bool kHasInf = false;
};

// Narrow format F (sign at bit kExp + kMan): float -> code in the low bits, NaN -> 0.
template <class F>
LTX_HD uint8_t narrow_encode(float x) {
  if (fmt_isnan(x)) return 0;
  const uint8_t c = minifloat_encode<F>(x);  // sign in bit 7, magnitude code <= kMaxCode
  return uint8_t(((c & 0x80) >> (7 - F::kExp - F::kMan)) | (c & 0x7f));
}

template <class F>
LTX_HD float narrow_decode(uint8_t code) {
  constexpr int kSignBit = F::kExp + F::kMan;
  const uint8_t mag = uint8_t(code & ((1 << kSignBit) - 1));
  const uint8_t c = uint8_t(((code >> kSignBit) & 1) ? (0x80 | mag) : mag);
  return minifloat_decode<F>(c);
}

// E2M1 by comparisons against the midpoints, ties to the even code (same result as
// narrow_encode<E2M1>; the tests check all fp16/bf16 patterns). Saturating; NaN -> +0.
LTX_HD uint8_t e2m1_encode(float x) {
  if (fmt_isnan(x)) return 0;
  const float a = fabsf(x);
  const uint8_t m = uint8_t((a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) +
                            (a > 2.5f) + (a >= 3.5f) + (a > 5.f));
  return uint8_t((fmt_signbit(x) ? 0x8 : 0x0) | m);
}

LTX_HD float e2m1_decode(uint8_t code) {
  const int m = code & 0x7;
  // 0, 0.5, 1, 1.5, 2, 3, 4, 6: e = m >> 1, mantissa = m & 1
  const int e = m >> 1;
  const float mag = e == 0 ? 0.5f * float(m & 1) : float(2 + (m & 1)) * float(1 << e) * 0.25f;
  return (code & 0x8) ? -mag : mag;
}

// LTX-2 FP6: the 6-bit value (sign << 5 | low 5 bits) of an E4M3 byte; bits 6..5 dropped.
LTX_HD uint8_t fp6_e4m3_drop(uint8_t b) { return uint8_t(((b >> 2) & 0x20) | (b & 0x1f)); }
// ... and back: sign to bit 7, zeros in bits 6..5.
LTX_HD uint8_t fp6_e4m3_restore(uint8_t v) { return uint8_t(((v & 0x20) << 2) | (v & 0x1f)); }

// 4 six-bit values -> 3 bytes, big-endian bit order.
LTX_HD void fp6_pack4(const uint8_t v[4], uint8_t b[3]) {
  b[0] = uint8_t((v[0] << 2) | (v[1] >> 4));
  b[1] = uint8_t(((v[1] << 4) | (v[2] >> 2)) & 0xff);
  b[2] = uint8_t(((v[2] << 6) | v[3]) & 0xff);
}

LTX_HD void fp6_unpack4(const uint8_t b[3], uint8_t v[4]) {
  v[0] = uint8_t(b[0] >> 2);
  v[1] = uint8_t(((b[0] & 0x3) << 4) | (b[1] >> 4));
  v[2] = uint8_t(((b[1] & 0xf) << 2) | (b[2] >> 6));
  v[3] = uint8_t(b[2] & 0x3f);
}

// Correctly rounded fp32 division on host and device, whatever the nvcc math flags.
LTX_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// Largest magnitude of the LTX-2 FP6 subset of E4M3 (S.00.11.111 = 1.875 * 2^-4).
constexpr float kFp6E4M3Max = 0.1171875f;

// NVFP4 scale constants.
constexpr float kNvfp4E2M1Max = 6.f;
constexpr float kNvfp4E4M3Max = 448.f;

// Offset of block-scale (r, c) in the cuBLASLt VEC16_UE4M3 layout: 128x4 tiles of 512 bytes in
// (row-block, column-block) order; padded_cols = roundup(K/16, 4).
LTX_HD int64_t nvfp4_scale_offset(int64_t r, int64_t c, int64_t padded_cols) {
  const int64_t tile = (r >> 7) * (padded_cols >> 2) + (c >> 2);
  return tile * 512 + (r & 31) * 16 + ((r & 127) >> 5) * 4 + (c & 3);
}

// NVFP4 block scale code: e4m3_rne(min((amax / 6) / s_t, 448)), two correctly rounded fp32
// divisions (div_rn). A NaN or
// non-positive ratio (all-zero block, or s_t == 0 with amax == 0) gives code 0.
LTX_HD uint8_t nvfp4_block_scale_code(float amax, float s_t) {
  float r = div_rn(div_rn(amax, kNvfp4E2M1Max), s_t);
  if (!(r > 0.f)) return 0;
  if (r > kNvfp4E4M3Max) r = kNvfp4E4M3Max;
  return minifloat_encode<E4M3>(r);
}

// LTX-2 FP6 block code of w with block scale s = amax / 0.1171875: the 6-bit value of
// e4m3_rne(w / s). w / s is clamped to +-0.1171875 (a no-op unless s is an fp32 subnormal,
// where the division can overshoot the subset); s == 0 or a NaN quotient gives code 0.
LTX_HD uint8_t fp6_block_code(float w, float s) {
  if (!(s > 0.f)) return 0;
  float q = div_rn(w, s);
  if (fmt_isnan(q)) return 0;
  if (q > kFp6E4M3Max) q = kFp6E4M3Max;
  if (q < -kFp6E4M3Max) q = -kFp6E4M3Max;
  return fp6_e4m3_drop(minifloat_encode<E4M3>(q));
}

// max(|a|, |b|) ignoring NaN in b (a is never NaN).
LTX_HD float amax_step(float a, float b) {
  const float m = fabsf(b);
  return m > a ? m : a;
}

}  // namespace ltx_kernels
