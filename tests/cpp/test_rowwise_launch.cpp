// GoogleTest for common/rowwise_launch.h, the launch-shape policy of the row-wise kernels: the
// 31-bit multiply-high divider the kernels use to split a flat index, the quantizers' segment /
// tile shapes (every segment covered, grid within one resident wave), the row norms' rule, and
// the shapes of the FP8-output rows, the RMSNorm + RoPE rows, the activations and the
// dequantizer (every access of a row held, the kernels' thread limits, the instantiated counts).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

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

TEST(WarpRoundedThreads, WholeWarpsWithinTheLimit) {
  EXPECT_EQ(warp_rounded_threads(0, 512), 32);
  EXPECT_EQ(warp_rounded_threads(1, 512), 32);
  EXPECT_EQ(warp_rounded_threads(32, 512), 32);
  EXPECT_EQ(warp_rounded_threads(33, 512), 64);
  EXPECT_EQ(warp_rounded_threads(500, 512), 512);
  EXPECT_EQ(warp_rounded_threads(513, 512), 512);
  EXPECT_EQ(warp_rounded_threads(int64_t(1) << 40, 256), 256);
  for (int64_t u = 1; u <= 2048; ++u) {
    const int t = warp_rounded_threads(u, 512);
    EXPECT_EQ(t % 32, 0);
    EXPECT_TRUE(t == 512 || (t >= u && t - u < 32)) << u;
  }
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

// The developer setting's grammar: every valid name gives its shape, everything else is refused.
TEST(NormShape, ParsesTheSettingsGrammar) {
  NormShape s;
  for (const char* v : {"", "auto"}) {
    s.kind = NormShape::kLoop;
    ASSERT_TRUE(parse_norm_shape(v, &s)) << v;
    EXPECT_EQ(s.kind, NormShape::kAuto) << v;
  }
  ASSERT_TRUE(parse_norm_shape("loop", &s));
  EXPECT_EQ(s.kind, NormShape::kLoop);
  EXPECT_FALSE(s.preload);
  for (int nv : {1, 2, 4, 8, 16}) {
    for (char k : {'w', 'b'}) {
      for (bool p : {false, true}) {
        const std::string v = k + std::to_string(nv) + (p ? "p" : "");
        ASSERT_TRUE(parse_norm_shape(v.c_str(), &s)) << v;
        EXPECT_EQ(s.kind, k == 'w' ? NormShape::kWarp : NormShape::kBlock) << v;
        EXPECT_EQ(s.nv, nv) << v;
        EXPECT_EQ(s.preload, p) << v;
      }
    }
  }
  for (const char* bad : {"x4", "w3", "b", "w", "wp", "w4q", "b32", "w0", "w04", "w+4", "w 4", "w-4", "w4pp",
                          "loopp", "Auto", "p", "w99999999999", "b160"}) {
    EXPECT_FALSE(parse_norm_shape(bad, &s)) << bad;
  }
}

// Threads x accesses hold the row; CTAs of whole warps within the kernels' limits.
static void expect_holds(const RowRegShape& s, int64_t nvec, int max_threads) {
  ASSERT_GT(s.nv, 0) << nvec;
  if (s.kind == RowRegShape::kWarp) {
    ASSERT_EQ(s.threads, 128);
    ASSERT_GE(int64_t(32) * s.nv, nvec);
  } else {
    ASSERT_EQ(s.kind, RowRegShape::kBlock);
    ASSERT_EQ(s.threads % 32, 0);
    ASSERT_LE(s.threads, max_threads);
    ASSERT_GE(int64_t(s.threads) * s.nv, nvec);
    ASSERT_LT(int64_t(s.threads - 32) * s.nv, nvec);  // no idle warp
  }
}

TEST(Fp8RowsShape, HoldsEveryRowTheKernelsTake) {
  for (int64_t nvec = 1; nvec <= 4096; ++nvec) {
    const RowRegShape s = fp8_rows_shape(nvec);
    expect_holds(s, nvec, 256);
    ASSERT_TRUE((s.kind == RowRegShape::kWarp && s.nv == 4) || (s.kind == RowRegShape::kBlock && (s.nv == 4 || s.nv == 16)))
        << nvec;
  }
  EXPECT_EQ(fp8_rows_shape(128).kind, RowRegShape::kWarp);
  EXPECT_EQ(fp8_rows_shape(129).nv, 4);
  EXPECT_EQ(fp8_rows_shape(1024).threads, 256);
  EXPECT_EQ(fp8_rows_shape(1025).nv, 16);
  EXPECT_EQ(fp8_rows_shape(4097).kind, RowRegShape::kNone);  // fused_fp8_cuda_unsupported refuses it
}

TEST(NormRopeShape, HoldsEveryRowOrLoops) {
  for (bool split : {false, true}) {
    const int s2 = split ? 2 : 1;
    for (int64_t nch = 1; nch <= 5000; ++nch) {
      const RowRegShape s = norm_rope_shape(nch, split);
      if (nch > 256 * 16 / s2) {
        ASSERT_EQ(s.kind, RowRegShape::kLoop);
        ASSERT_EQ(s.threads, 512);
        continue;
      }
      expect_holds(s, nch, 256);
      if (s.kind == RowRegShape::kWarp) {  // the instantiated counts: 2, 4, 8 (split: 1, 2, 4)
        ASSERT_TRUE(s.nv == 2 / s2 || s.nv == 4 / s2 || s.nv == 8 / s2) << nch;
      } else {  // 4, 8, 16 (split: 2, 4, 8), <= 128 threads but for the widest
        ASSERT_TRUE(s.nv == 4 / s2 || s.nv == 8 / s2 || s.nv == 16 / s2) << nch;
        if (s.nv != 16 / s2) ASSERT_LE(s.threads, 128) << nch;
      }
    }
  }
}

TEST(RowTileShape, CoversRowsAndColumns) {
  for (int64_t rows : {int64_t(1), int64_t(3), int64_t(255), int64_t(256), int64_t(257), int64_t(100000)}) {
    for (int64_t nvec : {int64_t(1), int64_t(2), int64_t(7), int64_t(64), int64_t(255), int64_t(256), int64_t(1023), int64_t(1024), int64_t(1025), int64_t(100000)}) {
      for (int unroll : {1, 4}) {
        const RowTileShape t = row_tile_shape(rows, nvec, unroll);
        ASSERT_EQ(t.tx & (t.tx - 1), 0);
        ASSERT_EQ(t.tx * t.ty, kRowwiseThreads);
        ASSERT_TRUE(int64_t(t.tx) * unroll >= nvec || t.tx == kRowwiseThreads) << nvec;
        ASSERT_GE(t.grid * t.ty, rows);
      }
    }
  }
  EXPECT_EQ(row_tile_shape(int64_t(1) << 40, 1, 1).grid, kRowwiseMaxGrid);
}

TEST(FlatGrid, OnePassWithinTheLimit) {
  EXPECT_EQ(flat_grid(0, 4), 1);
  EXPECT_EQ(flat_grid(1024, 4), 1);
  EXPECT_EQ(flat_grid(1025, 4), 2);
  EXPECT_EQ(flat_grid(256, 1, 256), 1);
  EXPECT_EQ(flat_grid(257, 1, 256), 2);
  EXPECT_EQ(flat_grid(int64_t(1) << 50, 1), kRowwiseMaxGrid);
}

TEST(DequantShape, ThreadsAndGrid) {
  for (int64_t cpr : {int64_t(1), int64_t(4), int64_t(5), int64_t(128), int64_t(1024), int64_t(1025), int64_t(4096), int64_t(1) << 30}) {
    const DequantShape d = dequant_shape(7, cpr, 4);
    ASSERT_EQ(d.threads % 32, 0);
    ASSERT_GE(d.threads, 32);
    ASSERT_LE(d.threads, 256);
    ASSERT_TRUE(d.gx * d.threads * 4 >= cpr || d.gx == 65535) << cpr;
    ASSERT_EQ(d.gy, 7);
  }
  EXPECT_EQ(dequant_shape(int64_t(1) << 20, 8, 4).gy, 65535);
}
