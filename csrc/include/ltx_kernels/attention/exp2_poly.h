// 2^x from fp32 adds, FMAs and one integer multiply-add, no special-function unit: for the FP8
// attention kernel, where the softmax's exponentials (16 per SM and cycle on sm_90's MUFU, one
// per score) rather than the tensor cores set the pace at head dim 64, so that a share of them can
// run on the FMA pipe instead. Host and device (the C++ core tests check it on the CPU); no torch.
//
//   x <- max(x, -125)                       (2^-125 and below: a tiny normal instead of 0)
//   j = round(x)                             (x + 1.5 2^23 rounds to an integer in the low
//                                             mantissa bits; subtracting it back is exact)
//   f = x - j in [-1/2, 1/2]                 (exact)
//   2^f ~ c0 + c1 f + c2 f^2                 (the minimax quadratic for the relative error on
//                                             [-1/2, 1/2]: at most 1.73e-3 = 2^-9.2)
//   2^x = 2^f with j added to its exponent   (j's bits are the low bits of x + 1.5 2^23, so the
//                                             exponent add is one integer multiply-add)
//
// For -125 <= x <= 127 the result is a normal float with relative error <= kExp2PolyRelErr plus
// the fp32 roundings of the two FMAs (tests/cpp/test_cpu_core.cpp checks the sum on the CPU);
// x < -125 (and -inf) gives 2^-125 within the same error. NaN is not an input here (scores are
// finite or -inf). The kernel applies it to P scaled into E4M3's range (x <= log2(448)) and rounds P
// to E4M3 (3 mantissa bits, a relative spacing of 2^-3) right after, so the quadratic's error is
// far below the rounding it feeds; P below E4M3's smallest subnormal (2^-9) becomes 0 either way.
#pragma once

#include <cmath>
#include <cstdint>

#include "ltx_kernels/common/formats.h"  // LTX_HD, float_bits, bits_float

namespace ltx_kernels {

// Coefficients of the minimax quadratic (relative error) for 2^f on [-1/2, 1/2], rounded to fp32.
constexpr float kExp2PolyC0 = 1.00044310f;
constexpr float kExp2PolyC1 = 0.70344800f;
constexpr float kExp2PolyC2 = 0.23842894f;
constexpr float kExp2PolyRelErr = 1.7249e-3f;  // the quadratic's (these coefficients') maximum relative error

LTX_HD float exp2_poly(float x) {
  constexpr float kRound = 12582912.f;  // 1.5 * 2^23
  x = fmaxf(x, -125.f);
  const float t = x + kRound;  // round(x) in the low mantissa bits
  const float j = t - kRound;
  const float f = x - j;
  const float p = fmaf(fmaf(kExp2PolyC2, f, kExp2PolyC1), f, kExp2PolyC0);
  // t's bits are 0x4b400000 + j; times 2^23 (mod 2^32) that is j << 23: the exponent add
  return bits_float(float_bits(t) * (1u << 23) + float_bits(p));
}

}  // namespace ltx_kernels
