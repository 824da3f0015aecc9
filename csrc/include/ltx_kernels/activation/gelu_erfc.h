// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) in fp32, the one implementation of the CPU backend and
// the CUDA kernels (host and device; no torch). Written as
//
//     gelu(x) = 0.5 x erfc(u),   u = -x / sqrt 2,
//
// because 1 + erf(x / sqrt 2) cancels for x << 0 (at x = -5 it is ~6e-7, and erf's one-ulp error
// of 6e-8 near -1 becomes a 10% error of the result); erfc(u) has no cancellation.
//
// The product u = -x * (1 / sqrt 2) is rounded to fp32, and erfc is ill-conditioned for large u:
// d ln erfc(u) / du = -2 e^{-u^2} / (sqrt(pi) erfc(u)) ~ -2u, so the rounding error d of u
// (|d| <= 2^-24 |u|) moves erfc(u) by ~2u^2 2^-24 relative: ~100 ulps at x = -10. The product is
// therefore carried in two parts, u_hi = fl(-x c_hi) and d = (-x c_hi - u_hi) + (-x c_lo) (the
// first exact by an fma, c_hi + c_lo = 1/sqrt 2 to ~2^-50), and erfc(u_hi + d) is corrected to
// first order, erfc(u_hi) (1 + g(u_hi) d), with g(u) = -2 e^{-u^2} / (sqrt(pi) erfc(u)). For
// u > 0, g lies between the Mills-ratio bounds -(u + sqrt(u^2 + 2)) and -(u + sqrt(u^2 + 4/pi));
// the first (asymptotically exact, g = -(2u + 1/u) + O(u^-3)) leaves a relative error below 0.1
// ulp after the correction. For u <= 0 (x >= 0), |g d| < 0.5 ulp and no correction is applied.
//
// Accuracy: the result is within erfcf's own error + 1.5 ulps of gelu(x) when erfc(u) is a
// normal fp32 number (x > -13.0); below, erfc(u) is subnormal and the absolute error stays below
// 2^-142 (|x| / 2 times erfcf's subnormal error). CUDA documents erfcf to 4 ulps; the C++ core
// test (tests/cpp) checks the whole function against double over a sweep of [-20, 20].
//
// Special values: gelu(+-0) = +-0; gelu(x) = x / 2 rounded for |x| < 2^-24 (the smallest
// subnormals give +-0); gelu(x) = x for x > 5.5; gelu(x) = -0 for x < -14.85 (u > 10.5; the
// exact value rounds to -0 below x = -14.36, and between the two the result is -0 or a few
// subnormal units); gelu(+inf) = +inf, gelu(-inf) = -0, gelu(NaN) = NaN.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define LTX_GELU_HD __host__ __device__ __forceinline__
#else
#define LTX_GELU_HD inline
#endif

namespace ltx_kernels {

LTX_GELU_HD float gelu_erfc_f32(float x) {
  constexpr float kInvSqrt2Hi = 0.70710677f;       // fp32(1 / sqrt 2)
  constexpr float kInvSqrt2Lo = 1.21016175e-08f;   // 1 / sqrt 2 - kInvSqrt2Hi
  const float u = -x * kInvSqrt2Hi;
#if defined(__CUDA_ARCH__)
  const float d = fmaf(-x, kInvSqrt2Hi, -u) - x * kInvSqrt2Lo;
  const float e = erfcf(u);
  const float s = fmaf(u, u, 2.f);
  const float g = -(u + s * rsqrtf(s));  // g needs ~1e-3 relative accuracy: rsqrtf suffices
  const float ec = (u > 0.f && u < 10.5f) ? fmaf(e * g, d, e) : e;
#else
  const float d = std::fma(-x, kInvSqrt2Hi, -u) - x * kInvSqrt2Lo;
  const float e = std::erfc(u);
  const float g = -(u + std::sqrt(std::fma(u, u, 2.f)));
  const float ec = (u > 0.f && u < 10.5f) ? std::fma(e * g, d, e) : e;
#endif
  // u > 10.5 only for x < -14.85 (and x = -inf, where 0.5 x erfc(u) would be -inf * 0 = NaN).
  return u > 10.5f ? -0.f : 0.5f * x * ec;
}

}  // namespace ltx_kernels

#undef LTX_GELU_HD
