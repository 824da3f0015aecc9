// GoogleTest for common/rowwise_launch.h, the launch-shape policy of the row-wise kernels (the FP8
// quantizers): the 31-bit multiply-high divider the kernels use to split a flat group index, and
// the segment / tile shapes (every segment covered, grid within one resident wave).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "ltx_kernels/common/rowwise_launch.h"

using namespace ltx_kernels;

namespace {
// What the kernels compute: (umulhi(n, m) + n) >> k in 32-bit arithmetic (n < 2^31, so the sum
// of the high product, which is <= n, and n stays below 2^32).
uint32_t fast_div(const FastDiv32& f, uint32_t n) {
  const uint32_t hi = uint32_t((uint64_t(n) * f.m) >> 32);
  return (hi + n) >> f.k;
}
}  // namespace

TEST(FastDiv32, SmallDivisorsEveryEdge) {
  for (uint32_t d = 1; d <= 4096; ++d) {
    const FastDiv32 f = make_fast_div32(d);
    // multiples of d and their neighbours, up to the top of the 31-bit range
    for (uint32_t q : {0u, 1u, 2u, 7u, 1000u, (0x7fffffffu / d) - 1u, 0x7fffffffu / d}) {
      for (int64_t delta = -1; delta <= 1; ++delta) {
        const int64_t n = int64_t(q) * d + delta;
        if (n < 0 || n > 0x7fffffff) continue;
        ASSERT_EQ(fast_div(f, uint32_t(n)), uint32_t(n) / d) << "n " << n << " d " << d;
      }
    }
  }
}

TEST(FastDiv32, RandomDivisorsAndNumerators) {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<uint32_t> any31(0, 0x7fffffffu);
  for (int i = 0; i < 20000; ++i) {
    const uint32_t d = std::max<uint32_t>(1, any31(rng) >> (rng() % 31));
    const FastDiv32 f = make_fast_div32(d);
    for (int j = 0; j < 50; ++j) {
      const uint32_t n = any31(rng);
      ASSERT_EQ(fast_div(f, n), n / d) << "n " << n << " d " << d;
    }
    ASSERT_EQ(fast_div(f, 0x7fffffffu), 0x7fffffffu / d);
  }
}

TEST(SegmentShape, CoversEverySegmentWithinOneWave) {
  for (int64_t chunks : {1, 2, 3, 4, 8, 16, 24, 32, 64, 128, 256, 257, 1000}) {
    for (int64_t segments : {int64_t(1), int64_t(7), int64_t(1000), int64_t(393216), int64_t(1) << 33}) {
      const SegmentShape s = segment_shape(chunks, segments, 132, 3);
      ASSERT_TRUE(s.tpg >= 1 && s.tpg <= 32 && (s.tpg & (s.tpg - 1)) == 0);
      ASSERT_TRUE(s.nv == 1 || s.nv == 2 || s.nv == 4 || s.nv == 8);
      ASSERT_EQ(s.threads % 32, 0);
      ASSERT_GE(s.grid, 1);
      ASSERT_LE(s.grid, 132 * 3);  // at most one resident wave: the kernels loop
      // in registers iff the lanes of a segment hold all its accesses
      ASSERT_EQ(s.in_regs, int64_t(s.tpg) * s.nv >= chunks) << "chunks " << chunks;
      if (s.in_regs) ASSERT_LE(s.nv, 8);
      // no more CTAs than segments need
      const int64_t per_cta = int64_t(s.threads / 32) * (32 / s.tpg);
      ASSERT_LE((s.grid - 1) * per_cta, segments);
    }
  }
  // group 128 of bf16 (16 accesses): 4 lanes x 4 accesses
  const SegmentShape g = segment_shape(16, 393216, 132, 3);
  EXPECT_EQ(g.tpg, 4);
  EXPECT_EQ(g.nv, 4);
  EXPECT_EQ(g.grid, 396);
}

TEST(TileShape, ThreadsHoldTheTile) {
  for (int64_t chunks : {1, 31, 32, 1024, 2048, 4096, 100000}) {
    for (int nv : {1, 4, 8, 16}) {
      const TileShape t = tile_shape(chunks, 4096, nv, 1024);
      ASSERT_EQ(t.threads % 32, 0);
      ASSERT_LE(t.threads, 1024);
      ASSERT_EQ(t.in_regs, int64_t(t.threads) * nv >= chunks) << chunks << " " << nv;
      ASSERT_EQ(t.grid, 4096);
    }
  }
}

// The row norms' rule (norm_shape) only ever picks a shape their kernels run (norm_shape_runs),
// for every op kind, row width and path; forced shapes outside the kernels' limits are refused.
TEST(NormShape, PicksOnlyShapesTheKernelsRun) {
  for (int bits = 0; bits < 16; ++bits) {
    NormOpKind op;
    op.layer_norm = bits & 1;
    op.residual = bits & 2;
    op.modulate = bits & 4;
    op.per_sample = (bits & 8) && op.modulate;
    for (bool vec16 : {true, false}) {
      for (int64_t nvec = 1; nvec <= 5000; ++nvec) {
        for (int64_t x_bytes : {int64_t(1) << 12, int64_t(8) << 20, int64_t(64) << 20, int64_t(1) << 32}) {
          const NormShape s = norm_shape(nvec, x_bytes, op, vec16);
          ASSERT_TRUE(norm_shape_runs(s, nvec, vec16))
              << "kind " << s.kind << " nv " << s.nv << " preload " << s.preload << " nvec " << nvec
              << " vec16 " << vec16 << " op bits " << bits;
          if (nvec > 256 * 16) ASSERT_EQ(s.kind, NormShape::kLoop);
        }
      }
    }
  }
}

TEST(NormShape, Limits) {
  NormShape w{NormShape::kWarp, 2, false};
  EXPECT_TRUE(norm_shape_runs(w, 64, true));
  EXPECT_FALSE(norm_shape_runs(w, 65, true));             // a warp holds 32 x nv accesses
  NormShape b1{NormShape::kBlock, 1, true};
  EXPECT_TRUE(norm_shape_runs(b1, 512, true));
  EXPECT_FALSE(norm_shape_runs(b1, 513, true));           // 512 threads at most
  EXPECT_FALSE(norm_shape_runs(b1, 100, false));          // the scalar path: no preload, nv >= 4
  NormShape b4{NormShape::kBlock, 4, false};
  EXPECT_TRUE(norm_shape_runs(b4, 1024, false));
  EXPECT_FALSE(norm_shape_runs(b4, 1025, true));          // 256 threads at 4 and more accesses
  NormShape b8p{NormShape::kBlock, 8, true};
  EXPECT_FALSE(norm_shape_runs(b8p, 512, true));          // preload only up to 4 accesses
  EXPECT_FALSE(norm_shape_runs(NormShape{NormShape::kBlock, 3, false}, 30, true));
  EXPECT_FALSE(norm_shape_runs(NormShape{}, 30, true));   // kAuto is not a shape
  // the measured picks at the LTX sizes (bf16: 8 elements per access)
  NormOpKind tok;
  tok.modulate = true;
  const NormShape t = norm_shape(512, int64_t(100) << 20, tok, true);
  EXPECT_EQ(t.kind, NormShape::kBlock);
  EXPECT_EQ(t.nv, 4);
  NormOpKind smp = tok;
  smp.per_sample = true;
  EXPECT_EQ(norm_shape(512, int64_t(100) << 20, smp, true).nv, 8);
  const NormShape small = norm_shape(256, int64_t(16) << 20, tok, true);  // <= 32 MB of x
  EXPECT_EQ(small.nv, 1);
  EXPECT_TRUE(small.preload);
  tok.residual = true;  // the gated residual, per-token tables: one access per thread
  EXPECT_EQ(norm_shape(512, int64_t(100) << 20, tok, true).nv, 1);
  smp.residual = true;
  EXPECT_EQ(norm_shape(512, int64_t(100) << 20, smp, true).kind, NormShape::kLoop);
  EXPECT_EQ(norm_shape(512, int64_t(16) << 20, smp, true).nv, 1);
}
