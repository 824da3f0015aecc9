// GoogleTest suite for the framework-agnostic CPU core (no torch). References are written
// from the definitions in double precision, never from the code under test.
#include <gtest/gtest.h>

#include <cmath>
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
