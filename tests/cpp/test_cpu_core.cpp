// GoogleTest suite for the framework-agnostic CPU core (no torch). References are written
// from the definitions in double precision, never from the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ltx_kernels/common/host_types.h"
#include "ltx_kernels/cpu/ops.h"

using namespace ltx_kernels;

namespace {

// Nearest representable value with ties to even, by brute force over a sorted candidate set:
// the two neighbours of x among values m * 2^e with the format's mantissa width.
double round_to_format(double x, int man_bits, int min_exp, double max_finite) {
  if (x == 0) return x;
  const double a = std::fabs(x);
  int e = std::max(int(std::floor(std::log2(a))), min_exp);
  const double ulp = std::ldexp(1.0, e - man_bits);
  const double lo = std::floor(a / ulp) * ulp;
  const double hi = lo + ulp;
  double r;
  if (a - lo < hi - a) r = lo;
  else if (a - lo > hi - a) r = hi;
  else r = (std::fmod(lo / ulp, 2.0) == 0.0) ? lo : hi;
  if (r > max_finite) {
    // IEEE: overflow to Inf when the exact value is >= max + ulp/2 (rounding already said so).
    r = std::numeric_limits<double>::infinity();
  }
  return x < 0 ? -r : r;
}

}  // namespace

TEST(HostTypes, HalfRoundTripAllPatterns) {
  for (uint32_t b = 0; b < 65536; ++b) {
    half_t h{uint16_t(b)};
    const float f = to_float(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(to_float(half_from_float(f))));
      continue;
    }
    EXPECT_EQ(half_from_float(f).bits, h.bits) << "pattern " << b;
  }
}

TEST(HostTypes, BFloat16RoundTripAllPatterns) {
  for (uint32_t b = 0; b < 65536; ++b) {
    bfloat16_t h{uint16_t(b)};
    const float f = to_float(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(bfloat16_from_float(f).bits, h.bits) << "pattern " << b;
  }
}

TEST(HostTypes, HalfRoundingMatchesDefinition) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> mant(1.f, 2.f);
  std::uniform_int_distribution<int> ex(-28, 17);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::ldexp(mant(rng), ex(rng)) * (i & 1 ? -1.f : 1.f);
    const double want = round_to_format(x, 10, -14, 65504.0);
    EXPECT_EQ(double(to_float(half_from_float(x))), want) << x;
  }
}

TEST(HostTypes, BFloat16RoundingMatchesDefinition) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> mant(1.f, 2.f);
  std::uniform_int_distribution<int> ex(-130, 120);
  for (int i = 0; i < 200000; ++i) {
    const float x = std::ldexp(mant(rng), ex(rng));
    const double want = round_to_format(x, 7, -126, 3.3895313892515355e38);
    EXPECT_EQ(double(to_float(bfloat16_from_float(x))), want) << x;
  }
}

TEST(CpuNorm, RmsNormMatchesDoubleReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 3.f);
  for (int64_t cols : {1, 8, 111, 769, 2048}) {
    const int64_t rows = 7, stride = cols + 5;
    std::vector<float> x(rows * stride, 1e30f), w(cols), out(rows * stride, -7.f);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) x[r * stride + c] = nd(rng);
    for (auto& v : w) v = nd(rng);
    cpu::rms_norm(RmsNormParams{DType::kFloat32, OutRows{out.data(), RowLayout{rows, cols, stride}},
                                InRows{x.data(), RowLayout{rows, cols, stride}}, w.data(), 1e-6f},
                  cpu::serial_for);
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t c = 0; c < cols; ++c) ss += double(x[r * stride + c]) * x[r * stride + c];
      const double rstd = 1.0 / std::sqrt(ss / cols + 1e-6);
      for (int64_t c = 0; c < cols; ++c) {
        const double want = x[r * stride + c] * rstd * w[c];
        EXPECT_NEAR(out[r * stride + c], want, 1e-5 * (1 + std::fabs(want)));
      }
      for (int64_t c = cols; c < stride; ++c) EXPECT_EQ(out[r * stride + c], -7.f);  // gaps untouched
    }
  }
}

TEST(CpuNorm, RmsNormInPlaceBf16) {
  const int64_t cols = 33;
  std::vector<bfloat16_t> x(cols), w(cols);
  std::vector<float> xf(cols);
  for (int64_t c = 0; c < cols; ++c) {
    x[c] = bfloat16_from_float(float(c) - 16.f);
    xf[c] = to_float(x[c]);
    w[c] = bfloat16_from_float(0.5f);
  }
  cpu::rms_norm(RmsNormParams{DType::kBFloat16, OutRows{x.data(), RowLayout{1, cols, cols}},
                              InRows{x.data(), RowLayout{1, cols, cols}}, w.data(), 0.f},
                cpu::serial_for);
  double ss = 0;
  for (float v : xf) ss += double(v) * v;
  const double rstd = 1.0 / std::sqrt(ss / cols);
  for (int64_t c = 0; c < cols; ++c)
    EXPECT_NEAR(to_float(x[c]), xf[c] * rstd * 0.5, 1e-2 * (1 + std::fabs(xf[c] * rstd)));
}

// ---- FP8 codecs (ltx_kernels/common/formats.h) against a brute-force nearest search over the
// decoded code table, with ties to the even code and saturation: independent of the encoder.
#include "ltx_kernels/common/formats.h"

namespace {

template <class F>
uint8_t brute_encode(float x) {
  if (std::isnan(x)) return uint8_t((std::signbit(x) ? 0x80 : 0) | F::kNaN);
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  const double a = std::fabs(double(x));
  if (a >= double(F::kMax)) return uint8_t(sign | F::kMaxCode);  // saturation (incl. Inf)
  int best = -1;
  double best_err = 0;
  for (int c = 0; c <= F::kMaxCode; ++c) {
    const double v = minifloat_decode<F>(uint8_t(c));
    const double err = std::fabs(v - a);
    if (best < 0 || err < best_err || (err == best_err && (c & 1) == 0)) {
      best = c;
      best_err = err;
    }
  }
  return uint8_t(sign | best);
}

template <class F>
void check_all_16bit_patterns() {
  for (uint32_t b = 0; b < 65536; ++b) {
    for (float x : {to_float(half_t{uint16_t(b)}), to_float(bfloat16_t{uint16_t(b)})}) {
      const uint8_t got = minifloat_encode<F>(x);
      const uint8_t want = brute_encode<F>(x);
      if (std::isnan(x)) {
        ASSERT_TRUE(std::isnan(minifloat_decode<F>(got))) << x;
      } else {
        ASSERT_EQ(int(got), int(want)) << "x=" << x << " pattern " << b;
      }
    }
  }
}

}  // namespace

TEST(Formats, Fp8KnownValues) {
  EXPECT_EQ(minifloat_decode<E4M3>(0x7e), 448.f);
  EXPECT_EQ(minifloat_decode<E4M3>(0x38), 1.f);
  EXPECT_EQ(minifloat_decode<E4M3>(0x08), std::ldexp(1.f, -6));
  EXPECT_EQ(minifloat_decode<E4M3>(0x01), std::ldexp(1.f, -9));
  EXPECT_EQ(minifloat_decode<E4M3>(0xb8), -1.f);
  EXPECT_TRUE(std::isnan(minifloat_decode<E4M3>(0x7f)));
  EXPECT_EQ(minifloat_decode<E5M2>(0x7b), 57344.f);
  EXPECT_EQ(minifloat_decode<E5M2>(0x3c), 1.f);
  EXPECT_EQ(minifloat_decode<E5M2>(0x01), std::ldexp(1.f, -16));
  EXPECT_TRUE(std::isinf(minifloat_decode<E5M2>(0x7c)));
  EXPECT_EQ(minifloat_encode<E4M3>(1e6f), 0x7e);   // saturates
  EXPECT_EQ(minifloat_encode<E4M3>(-INFINITY), 0xfe);
  EXPECT_EQ(minifloat_encode<E5M2>(INFINITY), 0x7b);
  EXPECT_EQ(minifloat_encode<E4M3>(std::ldexp(1.f, -10)), 0x00);  // tie between 0 and 2^-9: even
  EXPECT_EQ(minifloat_encode<E4M3>(std::ldexp(3.f, -10)), 0x02);  // 1.5 units: tie to even (2)
  EXPECT_EQ(minifloat_encode<E4M3>(std::ldexp(3.f, -11)), 0x01);  // 0.75 units: up to 1
}

TEST(Formats, Fp8DecodeIsMonotonic) {
  for (int c = 1; c <= E4M3::kMaxCode; ++c)
    EXPECT_LT(minifloat_decode<E4M3>(uint8_t(c - 1)), minifloat_decode<E4M3>(uint8_t(c)));
  for (int c = 1; c <= E5M2::kMaxCode; ++c)
    EXPECT_LT(minifloat_decode<E5M2>(uint8_t(c - 1)), minifloat_decode<E5M2>(uint8_t(c)));
}

TEST(Formats, E4M3EncodeAll16BitPatterns) { check_all_16bit_patterns<E4M3>(); }
TEST(Formats, E5M2EncodeAll16BitPatterns) { check_all_16bit_patterns<E5M2>(); }

// ---- activations (ltx_kernels/activation/gelu_erfc.h, shared by the CPU backend and the CUDA
// kernels, and ltx_kernels/cpu/activation_math.h) against double-precision evaluations of their
// definitions. The CUDA kernels run the same gelu code with CUDA's erfcf (documented to 4 ulps).
#include "ltx_kernels/cpu/activation_math.h"

namespace {

// fp32 ulp at |y| (the subnormal spacing 2^-149 below 2^-126).
double ulp32(double y) {
  const double a = std::fabs(y);
  if (a < std::ldexp(1.0, -126)) return std::ldexp(1.0, -149);
  int e;
  std::frexp(a, &e);  // a = f 2^e, f in [0.5, 1)
  return std::ldexp(1.0, e - 24);
}

double gelu_exact(float x) { return 0.5 * double(x) * std::erfc(-double(x) / std::sqrt(2.0)); }

// Every step-th fp32 value of [lo, hi] in the order of the reals (by bit pattern, so every
// binade is visited, the ones near 0 included).
int64_t ordered(float x) {
  int32_t i;
  std::memcpy(&i, &x, sizeof(i));
  return i < 0 ? -int64_t(i & 0x7fffffff) : int64_t(i);
}
float from_ordered(int64_t k) {
  const int32_t i = k < 0 ? int32_t(uint32_t(-k) | 0x80000000u) : int32_t(k);
  float x;
  std::memcpy(&x, &i, sizeof(x));
  return x;
}
template <class F>
void sweep(float lo, float hi, int64_t step, F&& f) {
  for (int64_t k = ordered(lo); k <= ordered(hi); k += step) f(from_ordered(k));
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

}  // namespace

// The x << 0 range that the erfc form exists for: with the first-order correction of the rounded
// product u = -x / sqrt 2 the result keeps full fp32 accuracy. Bound, relative to |gelu(x)|, in
// units of u = 2^-24: erfcf's own error E ulps (E = 4, CUDA's documented bound) is at most 2E u
// relative; the correction leaves < 0.1 ulp of erfc's argument error and rounds once (<= 2 u
// together, in erfc's binade); the product 0.5 x * erfc rounds once (1 u): (2E + 3) u = 11 u,
// i.e. 5.5 to 11 ulps depending on where e and the result sit in their binades. This holds
// where erfc(u) is a normal number (x >= -13.0); below, erfc(u) is subnormal and the absolute
// error is |x| / 2 times erfcf's few units of 2^-149: < 2^-142.
TEST(Activation, GeluErfcAgainstDouble) {
  const double u = std::ldexp(1.0, -24);
  double worst = 0, worst_x = 0;
  int64_t n = 0, bad = 0;
  auto check = [&](float x) {
    const double want = gelu_exact(x);
    const float got = gelu_erfc_f32(x);
    const double err = std::fabs(double(got) - want);
    // + 2^-150: a subnormal result rounds to a multiple of 2^-149
    const double bound = x >= -13.0f ? 11 * u * std::fabs(want) + std::ldexp(1.0, -150) : std::ldexp(1.0, -142);
    if (x >= -13.0f && std::fabs(want) >= std::ldexp(1.0, -126) && err / std::fabs(want) / u > worst)
      worst = err / std::fabs(want) / u, worst_x = x;
    ++n;
    if (!(err <= bound) && bad++ < 5)
      ADD_FAILURE() << "x=" << x << " got " << got << " want " << want << " bound " << bound;
  };
  sweep(-20.f, 0.f, 127, check);  // ~8.5 million points
  sweep(0.f, 20.f, 1021, check);
  EXPECT_EQ(bad, 0) << "of " << n;
  std::printf("gelu_erfc_f32: worst relative error %.2f * 2^-24 (normal results) at x = %.9g, %lld points\n",
              worst, worst_x, (long long)n);
}

// Without the low part the same sweep is off by ~2u^2 2^-24 relative: the test above can fail.
TEST(Activation, GeluErfcLowPartMatters) {
  double worst = 0;
  sweep(-13.f, -8.f, 4099, [&](float x) {
    const float plain = 0.5f * x * std::erfc(-x * 0.70710677f);
    worst = std::max(worst, std::fabs(double(plain) - gelu_exact(x)) / ulp32(gelu_exact(x)));
  });
  EXPECT_GT(worst, 50.0);
}

// The fitted erfc of the 16-bit CUDA path (gelu_erfc_fast_f32), host-compiled: IEEE division and
// the libm exp2f stand in for rcp.approx and CUDA's exp2f, whose extra error (1 and 2 ulps) the
// bound (28 + 1.5 x^2) u derived in gelu_erfc.h already carries. Every 127th fp32 value of
// [-16, 6]; the worst case, as a fraction of the bound, is printed.
TEST(Activation, GeluErfcFastAgainstDouble) {
  const double u = std::ldexp(1.0, -24);
  double worst = 0, worst_x = 0;
  int64_t n = 0, bad = 0;
  sweep(-16.f, 6.f, 127, [&](float x) {
    const double want = gelu_exact(x);
    const double err = std::fabs(double(gelu_erfc_fast_f32(x)) - want);
    const double rel = (28 + 1.5 * double(x) * x) * u;
    const double bound = rel * std::fabs(want) + std::ldexp(1.0, -144);
    if (std::fabs(want) >= std::ldexp(1.0, -126) && err / std::fabs(want) / rel > worst)
      worst = err / std::fabs(want) / rel, worst_x = x;
    ++n;
    if (!(err <= bound) && bad++ < 5)
      ADD_FAILURE() << "x=" << x << " got " << gelu_erfc_fast_f32(x) << " want " << want << " bound " << bound;
  });
  EXPECT_EQ(bad, 0) << "of " << n;
  std::printf("gelu_erfc_fast_f32: worst error %.2f of the bound (normal results) at x = %.9g, %lld points\n",
              worst, worst_x, (long long)n);
  // special values (gelu_erfc_f32's)
  const float inf = INFINITY, tiny = 1e-30f;
  EXPECT_TRUE(same_bits(gelu_erfc_fast_f32(0.f), 0.f));
  EXPECT_TRUE(same_bits(gelu_erfc_fast_f32(-0.f), -0.f));
  EXPECT_TRUE(same_bits(gelu_erfc_fast_f32(inf), inf));
  EXPECT_TRUE(same_bits(gelu_erfc_fast_f32(-inf), -0.f));
  EXPECT_TRUE(std::isnan(gelu_erfc_fast_f32(NAN)));
  EXPECT_EQ(gelu_erfc_fast_f32(tiny), tiny / 2);
  EXPECT_EQ(gelu_erfc_fast_f32(-tiny), -tiny / 2);
  EXPECT_EQ(gelu_erfc_fast_f32(6.f), 6.f);
  EXPECT_TRUE(same_bits(gelu_erfc_fast_f32(-15.f), -0.f));
}

TEST(Activation, SpecialValues) {
  using cpu::act::GeluErf;
  using cpu::act::GeluTanh;
  using cpu::act::Silu;
  const float inf = INFINITY, tiny = 1e-30f, sub = std::ldexp(1.f, -149);
  for (auto f : {&GeluErf::f, &GeluTanh::f, &Silu::f}) {
    EXPECT_TRUE(same_bits(f(0.f), 0.f));
    EXPECT_TRUE(same_bits(f(-0.f), -0.f));
    EXPECT_TRUE(same_bits(f(inf), inf));
    EXPECT_TRUE(same_bits(f(-inf), -0.f));
    EXPECT_TRUE(std::isnan(f(NAN)));
    EXPECT_EQ(f(tiny), tiny / 2);  // x / 2 rounded
    EXPECT_EQ(f(-tiny), -tiny / 2);
    EXPECT_TRUE(same_bits(f(sub), 0.f));  // 2^-150: a tie, to even (0)
    EXPECT_TRUE(same_bits(f(-sub), -0.f));
    EXPECT_EQ(f(100.f), 100.f);
    EXPECT_EQ(f(3e38f), 3e38f);
    EXPECT_TRUE(same_bits(f(-100.f), -0.f));
    EXPECT_TRUE(same_bits(f(-3e38f), -0.f));
  }
  EXPECT_EQ(GeluErf::f(5.5f), 5.5f);
  EXPECT_TRUE(same_bits(GeluErf::f(-14.9f), -0.f));
  EXPECT_EQ(GeluTanh::f(5.1f), 5.1f);
  EXPECT_TRUE(same_bits(GeluTanh::f(-10.01f), -0.f));
  EXPECT_LT(GeluTanh::f(-9.99f), 0.f);  // still a (tiny) negative number
  EXPECT_EQ(Silu::f(17.5f), 17.5f);
  EXPECT_TRUE(same_bits(Silu::f(-87.4f), -0.f));
  EXPECT_LT(Silu::f(-87.3f), 0.f);
}

// gelu_tanh = x / (1 + e^{-2v}) and silu = x / (1 + e^{-x}) against double. Relative bounds from
// the formulas: v carries <= 7 fp32 roundings (x^3: 2, the constants: 2, the products and the
// sum: 3; the sum adds like-signed terms), and e^{-2v} multiplies v's relative error by |2v|;
// expf (<= 2 ulps = 4 u), 1 + e and the division (<= 2 ulps for the CUDA fast divide) add
// <= 9 u: |err| <= (9 + 14 |v|) u |y|, u = 2^-24. silu: (4 + 1 + 4) u |y| + 1 u. Where the
// kernels return -0 (e > 2^126) the exact value is below 2^-122 (gelu_tanh) / 2^-119 (silu).
TEST(Activation, GeluTanhAndSiluAgainstDouble) {
  const double u = std::ldexp(1.0, -24);
  int bad = 0;
  sweep(-12.f, 12.f, 4099, [&](float x) {
    const double vx = std::sqrt(2.0 / M_PI) * (double(x) + 0.044715 * double(x) * x * x);
    const double want = double(x) / (1.0 + std::exp(-2.0 * vx));
    const double bound = (9 + 14 * std::fabs(vx)) * u * std::fabs(want) + std::ldexp(1.0, -122);
    // (2^-122 also covers the half-subnormal rounding of tiny results)
    if (!(std::fabs(cpu::act::GeluTanh::f(x) - want) <= bound) && bad++ < 5) ADD_FAILURE() << "gelu_tanh x=" << x;
  });
  sweep(-90.f, 90.f, 4099, [&](float x) {
    const double want = double(x) / (1.0 + std::exp(-double(x)));
    const double bound = 10 * u * std::fabs(want) + std::ldexp(1.0, -119);
    if (!(std::fabs(cpu::act::Silu::f(x) - want) <= bound) && bad++ < 5) ADD_FAILURE() << "silu x=" << x;
  });
}
