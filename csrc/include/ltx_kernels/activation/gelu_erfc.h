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

// gelu for results that are rounded to a 16-bit float (bf16: 2^-9 relative, fp16: 2^-11), where
// the 11u of gelu_erfc_f32 buy nothing and its erfcf is most of the kernel's instructions
// (~50 per element: at memory speed the CUDA kernel is instruction bound). ~20 instructions:
//
//     erfc(z) = t exp(P(t) - z^2),   z = |x| / sqrt 2,   t = 1 / (1 + z / 2),
//
// the form of the classical Chebyshev fit of erfc (Numerical Recipes' erfcc), with our own fit:
// P is the degree-9 polynomial closest in the max norm to ln(erfc(z) / t) + z^2 on
// t in [1 / 6.25, 1] (z in [0, 10.5], all that is used), 0.8u from it (u = 2^-24), 2.5u with its
// constant term moved by one ulp so that the fp32 evaluation at t = 1 (z = 0) is exactly 0
// (erfc(0) = 1, so gelu(x) = x / 2 exactly for tiny x). For x > 0, erfc(-z) = 2 - erfc(z), written as
// x - (x / 2) erfc(z) (>= x / 2: no cancellation).
//
// Error, relative to |gelu(x)|, where the result is a normal number: P (2.5u); its Horner
// evaluation in fp32 (the running bound sum_k |p_k| t^(9-k) u of the partial sums: 3.2u); t's
// own error (1 + z / 2 with the rounded 1 / (2 sqrt 2): 3u; rcp.approx: 1 ulp = 2u), which moves
// erfc by (1 + |t P'(t)|) <= 2.26 times that: 11.3u; a = P - z^2 = fma(-x, x / 2, P), rounded
// once (|a| u, |a| <= x^2 / 2 + 1.27); a * log2(e) and the constant's rounding (2 |a| u); exp2f
// (CUDA documents 2 ulps: 4u); two products and the difference (3u). In all (24 + 3 |a|) u <=
// (28 + 1.5 x^2) u: ~30u at |x| = 1, ~320u = 1.9e-5 at x = -14 (a bf16 ulp is 2^-8 to 2^-7
// relative). A subnormal exp2f (x < -13.2) adds < 2^-144 absolute. The C++ core test sweeps the
// host build (IEEE division, the libm exp2f) against double; tests/bounds.py carries the bound.
//
// Special values as gelu_erfc_f32: +-0 -> +-0, tiny x -> x / 2, x > 5.5 -> x, x < -14.85 -> -0,
// +inf -> +inf, -inf -> -0, NaN -> NaN.
LTX_GELU_HD float gelu_erfc_fast_f32(float x) {
  constexpr float kP[10] = {1.455093175e-01f, -6.842643619e-01f, 1.165610909e+00f,
                            -7.093041539e-01f, -6.828533113e-02f, -5.846348125e-03f,
                            3.731178120e-02f,  3.860053122e-01f,  9.987154603e-01f,
                            -1.265452623e+00f};
  constexpr float kHalfInvSqrt2 = 0.353553391f;  // 1 / (2 sqrt 2)
#if defined(__CUDA_ARCH__)
  const float d = fmaf(fabsf(x), kHalfInvSqrt2, 1.f);  // 1 + z / 2, in [1, 6.25] where it matters
  float t;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(d));
#else
  const float d = std::fma(std::fabs(x), kHalfInvSqrt2, 1.f);
  const float t = 1.f / d;
#endif
  float p = kP[0];
  const float hx = 0.5f * x;
#if defined(__CUDA_ARCH__)
#pragma unroll
  for (int i = 1; i < 10; ++i) p = fmaf(p, t, kP[i]);
  const float e = exp2f(fmaf(-x, hx, p) * 1.44269504f);  // exp(P - x^2 / 2)
#else
  for (int i = 1; i < 10; ++i) p = std::fma(p, t, kP[i]);
  const float e = std::exp2(std::fma(-x, hx, p) * 1.44269504f);
#endif
  const float m = hx * (t * e);  // (x / 2) erfc(|x| / sqrt 2)
  const float y = x > 0.f ? x - m : m;
  // x = +-inf would give inf * 0 = NaN above
  return x > 5.5f ? x : (x < -14.85f ? -0.f : y);
}

}  // namespace ltx_kernels

#undef LTX_GELU_HD
