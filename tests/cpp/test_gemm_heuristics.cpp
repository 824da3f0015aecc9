// GoogleTest for the GEMM family's pure host functions: the persistent tile order of the sm_90a
// kernels (every tile exactly once; multicast pairs share B), their shared-memory plan (fits,
// aligned, disjoint), the heuristics (compiled tiles only, FP8-output constraints, wave model) and
// the grammar of LTX_KERNELS_GEMM_CONFIG (gemm/config.h) and the backend registry (gemm/backend.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ltx_kernels/gemm/backend.h"
#include "ltx_kernels/gemm/config.h"
#include "ltx_kernels/gemm/heuristics.h"
#include "ltx_kernels/gemm/sm90_plan.h"

using namespace ltx_kernels::gemm;

namespace {
constexpr int kH100Smem = 232448;  // cudaDevAttrMaxSharedMemoryPerBlockOptin on H100 / H200
constexpr int kSms = 132;

heuristics::Problem fp8_problem(int64_t m, int64_t n, int64_t k, OutKind out = OutKind::kBF16,
                                Epilogue epi = Epilogue::kNone, GateKind gate = GateKind::kNone) {
  heuristics::Problem p;
  p.ops = Operands::kFp8Blockwise;
  p.M = m;
  p.N = n;
  p.K = k;
  p.out = out;
  p.epilogue = epi;
  p.gate = gate;
  p.tokens_per_sample = gate == GateKind::kPerSample ? m / 2 : 1;
  return p;
}
heuristics::Problem bf16_problem(int64_t m, int64_t n, int64_t k) {
  heuristics::Problem p = fp8_problem(m, n, k);
  p.ops = Operands::kBf16;
  return p;
}
heuristics::Problem rowwise_problem(int64_t m, int64_t n, int64_t k, OutKind out = OutKind::kBF16,
                                    Epilogue epi = Epilogue::kNone) {
  heuristics::Problem p = fp8_problem(m, n, k, out, epi);
  p.ops = Operands::kFp8Rowwise;
  return p;
}
}  // namespace

TEST(GemmTileOrder, EveryTileOnceAndPairsShareB) {
  for (uint32_t num_m : {1u, 2u, 3u, 7u, 16u, 17u, 42u, 43u}) {
    for (uint32_t num_n : {1u, 2u, 5u, 13u}) {
      for (uint32_t group : {2u, 4u, 8u, 16u}) {
        for (bool pairs : {false, true}) {
          const uint32_t total = num_m * num_n;
          std::set<std::pair<uint32_t, uint32_t>> seen;
          for (uint32_t t = 0; t < total; ++t) {
            const sm90::TileCoord c = sm90::tile_coord(t, num_m, num_n, group, pairs);
            ASSERT_LT(c.mb, num_m);
            ASSERT_LT(c.nb, num_n);
            ASSERT_TRUE(seen.insert({c.mb, c.nb}).second) << "tile visited twice: t=" << t;
            if (!pairs) continue;
            const uint32_t peer = t ^ 1u;
            if (peer >= total) {
              EXPECT_FALSE(c.mcast) << "a lone tile cannot multicast";
              continue;
            }
            const sm90::TileCoord d = sm90::tile_coord(peer, num_m, num_n, group, pairs);
            EXPECT_EQ(c.mcast, d.mcast) << "both CTAs of a pair must agree";
            if (c.mcast) {
              // even tile = rank 0 = the upper M tile, same B tile
              const sm90::TileCoord& lo = (t & 1u) ? d : c;
              const sm90::TileCoord& hi = (t & 1u) ? c : d;
              EXPECT_EQ(lo.nb, hi.nb);
              EXPECT_EQ(lo.mb + 1, hi.mb);
            }
          }
          EXPECT_EQ(seen.size(), size_t(total));
        }
      }
    }
  }
}

TEST(GemmTileOrder, RasterGroupsKeepMBlocksTogether) {
  // a wave of consecutive tiles stays inside group_m M tiles until N is exhausted
  const uint32_t num_m = 42, num_n = 16, group = 16;
  for (uint32_t t = 0; t < group * num_n; ++t) {
    const sm90::TileCoord c = sm90::tile_coord(t, num_m, num_n, group, false);
    EXPECT_LT(c.mb, group);
    EXPECT_EQ(c.nb, t / group);
  }
}

TEST(GemmPlan, FitsAlignedDisjoint) {
  for (Operands ops : {Operands::kFp8Blockwise, Operands::kBf16, Operands::kFp8Rowwise}) {
    int n = 0;
    const heuristics::TileShape* tiles = heuristics::compiled_tiles(ops, &n);
    ASSERT_GT(n, 0);
    for (int i = 0; i < n; ++i) {
      const int bm = tiles[i].bm, bn = tiles[i].bn;
      for (GateKind gate : {GateKind::kNone, GateKind::kPerSample, GateKind::kPerToken}) {
        for (OutKind out : {OutKind::kBF16, OutKind::kFP8}) {
          if (out == OutKind::kFP8 && (gate != GateKind::kNone || heuristics::warpgroup_cols(bm, bn) % 128 != 0))
            continue;
          const sm90::Sm90Layout L = sm90::plan_layout(ops, bm, bn, out, gate, 300, kH100Smem);
          if (bm * bn >= 256 * 128 && gate == GateKind::kPerToken) {
            // the largest tiles cannot also stage a per-token gate tile: the plan says so, and the
            // heuristic then picks another tile
            if (L.stages < 2) continue;
          }
          ASSERT_GE(L.stages, 2) << bm << "x" << bn << " gate " << int(gate) << " out " << int(out);
          EXPECT_LE(L.smem_bytes, uint32_t(kH100Smem));
          EXPECT_EQ(L.off_a % 1024, 0u);
          EXPECT_EQ(L.off_b % 1024, 0u);
          EXPECT_EQ(L.off_d % 1024, 0u);
          EXPECT_EQ(L.off_g % 1024, 0u);
          EXPECT_EQ(L.d_chunk % 1024, 0u);
          EXPECT_EQ(L.g_chunk % 1024, 0u);
          EXPECT_EQ(L.off_bias % 16, 0u);
          EXPECT_EQ(L.off_bar % 8, 0u);
          // regions in order, none overlapping the next
          const uint32_t s = uint32_t(L.stages);
          EXPECT_EQ(L.off_b, L.off_a + s * uint32_t(bm) * 128u);
          EXPECT_GE(L.off_d, L.off_b + s * uint32_t(bn) * 128u);
          EXPECT_GE(L.off_g, L.off_d + uint32_t(bm * bn * (out == OutKind::kFP8 ? 1 : 2)));
          EXPECT_EQ(L.off_sfa % 128, 0u);  // a TMA destination (the activation scales)
          // the staged scales: sa per stage (1D2D), the tile's sb once (rowwise), none (bf16)
          const uint32_t scales = ops == Operands::kFp8Blockwise ? s * uint32_t(bm) * 4u
                                  : ops == Operands::kFp8Rowwise ? uint32_t(bn) * 4u
                                                                 : 0u;
          EXPECT_GE(L.off_bias, L.off_sfa + scales);
          EXPECT_GE(L.off_bar, L.off_bias + uint32_t(bn) * 4u);
          EXPECT_LE(L.off_bar + 8u * (2u * s + 2u) + 1024u, L.smem_bytes);
          if (gate == GateKind::kPerToken) EXPECT_EQ(L.g_rows, bm);
          // the swizzle width divides a 16-bit output row; 128 for the FP8 output
          EXPECT_EQ((bn * (out == OutKind::kFP8 ? 1 : 2)) % L.d_sw, 0);
        }
      }
    }
  }
}

TEST(GemmPlan, GateRowsPerSample) {
  EXPECT_EQ(sm90::gate_rows_per_sample(128, 2688), 8);   // a tile touches at most 2 samples
  EXPECT_EQ(sm90::gate_rows_per_sample(128, 1), 128);    // every row its own sample
  EXPECT_EQ(sm90::gate_rows_per_sample(128, 5), 32);     // ceil(127 / 5) + 1 = 27 -> 32
  EXPECT_EQ(sm90::gate_rows_per_sample(256, 3), 88);     // ceil(255 / 3) + 1 = 86 -> 88
}

TEST(GemmHeuristics, CompiledTilesOnlyAndFp8OutputRule) {
  for (int64_t m : {1, 64, 300, 1000, 5376, 10752}) {
    for (int64_t n : {128, 2048, 4096, 6144, 8192, 16384}) {
      for (int64_t k : {128, 2048, 8192}) {
        for (OutKind out : {OutKind::kBF16, OutKind::kFP8}) {
          const heuristics::Problem p = fp8_problem(m, n, k, out);
          const TileConfig c = heuristics::choose_tile(p, kSms, kH100Smem);
          ASSERT_NE(c.bm, 0);
          EXPECT_TRUE(heuristics::tile_compiled(Operands::kFp8Blockwise, c.bm, c.bn));
          if (out == OutKind::kFP8) EXPECT_EQ(heuristics::warpgroup_cols(c.bm, c.bn) % 128, 0);
          const int64_t tiles = heuristics::cdiv(m, c.bm) * heuristics::cdiv(n, c.bn);
          // the cluster of 2 for the preferred FP8 tile only (measured); the model's tiles run alone
          const bool preferred = c.bm == 128 && c.bn == 192 && tiles >= kSms;
          EXPECT_EQ(c.cluster, preferred ? 2 : 1);
          EXPECT_EQ(c.group_m % 2, 0);
        }
      }
    }
  }
}

TEST(GemmHeuristics, Fp8PreferredTile) {
  // 128x192 wherever it runs the problem and fills at least one wave
  for (int64_t m : {2048, 5376, 10752})  // >= 16 x 11 = 176 tiles
    for (int64_t n : {2048, 4096, 16384}) {
      const TileConfig c = heuristics::choose_tile(fp8_problem(m, n, 4096), kSms, kH100Smem);
      EXPECT_EQ(c.bm, 128);
      EXPECT_EQ(c.bn, 192);
      EXPECT_EQ(c.cluster, 2);
    }
  // FP8 output needs whole 128-column groups: the model chooses among the tiles that have them
  const TileConfig q = heuristics::choose_tile(fp8_problem(5376, 2048, 2048, OutKind::kFP8), kSms, kH100Smem);
  EXPECT_EQ(heuristics::warpgroup_cols(q.bm, q.bn) % 128, 0);
  // fewer 128x192 tiles than SMs (300 x 2048: 33): the model, which spreads the work wider
  const TileConfig s = heuristics::choose_tile(fp8_problem(300, 2048, 2048), kSms, kH100Smem);
  EXPECT_FALSE(s.bm == 128 && s.bn == 192);
  // bf16 keeps the model (it has no 128x192 preference; its tiles are its own list)
  const TileConfig b = heuristics::choose_tile(bf16_problem(5376, 2048, 2048), kSms, kH100Smem);
  EXPECT_TRUE(heuristics::tile_compiled(Operands::kBf16, b.bm, b.bn));
}

TEST(GemmHeuristics, Fp8RowwiseTiles) {
  // bf16's tile set (one accumulator per output, as bf16), FP8's tensor-core rate in the model
  int n = 0;
  const heuristics::TileShape* tiles = heuristics::compiled_tiles(Operands::kFp8Rowwise, &n);
  ASSERT_EQ(n, 5);
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(heuristics::tile_compiled(Operands::kBf16, tiles[i].bm, tiles[i].bn));
    EXPECT_EQ(heuristics::tile_cost(rowwise_problem(5376, 2048, 4096), tiles[i].bm, tiles[i].bn, kSms),
              heuristics::tile_cost(fp8_problem(5376, 2048, 4096), tiles[i].bm, tiles[i].bn, kSms));
  }
  EXPECT_TRUE(heuristics::tile_compiled(Operands::kFp8Rowwise, 128, 256));
  EXPECT_FALSE(heuristics::tile_compiled(Operands::kFp8Rowwise, 128, 144));  // a 1D2D-only width
  EXPECT_FALSE(heuristics::tile_compiled(Operands::kFp8Rowwise, 64, 128));
  EXPECT_FALSE(heuristics::tile_compiled(Operands::kNvfp4, 128, 128));  // no sm_90a kernel reads NVFP4
  EXPECT_TRUE(e4m3_operands(Operands::kFp8Rowwise));
  EXPECT_TRUE(e4m3_operands(Operands::kFp8Blockwise));
  EXPECT_FALSE(e4m3_operands(Operands::kBf16));
  for (int64_t m : {1, 77, 300, 1000, 5376, 10752}) {
    for (int64_t nn : {136, 2048, 6144, 16384}) {
      for (int64_t k : {16, 2048, 8192}) {
        for (OutKind out : {OutKind::kBF16, OutKind::kFP8}) {
          if (out == OutKind::kFP8 && nn % 128 != 0) continue;
          const heuristics::Problem p = rowwise_problem(m, nn, k, out);
          const TileConfig c = heuristics::choose_tile(p, kSms, kH100Smem);
          ASSERT_NE(c.bm, 0) << m << "x" << nn << "x" << k;
          EXPECT_TRUE(heuristics::tile_compiled(Operands::kFp8Rowwise, c.bm, c.bn));
          EXPECT_STREQ(heuristics::tile_why_not(p, c.bm, c.bn, kH100Smem), "");
          if (out == OutKind::kFP8) EXPECT_EQ(heuristics::warpgroup_cols(c.bm, c.bn) % 128, 0);
          EXPECT_EQ(c.cluster, 1);  // the 2-CTA rule is the 1D2D 128x192 tile's only
          EXPECT_EQ(c.group_m, c.bm == 256 ? 8 : 16);
          // the model's choice: no compiled tile that can run the problem is modelled faster
          for (int i = 0; i < n; ++i)
            if (heuristics::tile_ok(p, tiles[i].bm, tiles[i].bn, kH100Smem))
              EXPECT_LE(heuristics::tile_cost(p, c.bm, c.bn, kSms),
                        heuristics::tile_cost(p, tiles[i].bm, tiles[i].bn, kSms) * (1 + 1e-9));
        }
      }
    }
  }
  // the gated residual with a per-token gate fits (the tile's sb slice included)
  heuristics::Problem g = rowwise_problem(5376, 2048, 2048, OutKind::kBF16, Epilogue::kGatedResidual);
  g.gate = GateKind::kPerToken;
  EXPECT_NE(heuristics::choose_tile(g, kSms, kH100Smem).bm, 0);
  // plain rowwise calls (bias at most, bf16 out) go to cuBLASLt at every M; fused epilogues, fp16
  // and FP8 output to the sm_90a kernel; the skinny and CUTLASS rules are blockwise only
  EXPECT_FALSE(heuristics::prefer_skinny(rowwise_problem(16, 4096, 4096), kSms, true));
  EXPECT_TRUE(heuristics::prefer_cublaslt(rowwise_problem(5376, 2048, 2048)));
  EXPECT_TRUE(heuristics::prefer_cublaslt(rowwise_problem(16, 4096, 4096)));
  heuristics::Problem biased = rowwise_problem(5376, 2048, 2048);
  biased.bias = true;
  EXPECT_TRUE(heuristics::prefer_cublaslt(biased));
  EXPECT_FALSE(heuristics::prefer_cublaslt(rowwise_problem(5376, 2048, 2048, OutKind::kFP16)));
  EXPECT_FALSE(heuristics::prefer_cublaslt(rowwise_problem(5376, 2048, 2048, OutKind::kFP8)));
  EXPECT_FALSE(heuristics::prefer_cublaslt(g));
  EXPECT_FALSE(heuristics::prefer_cutlass(rowwise_problem(5376, 2048, 2048)));
}

TEST(GemmHeuristics, WaveQuantization) {
  // 5376 x 2048 (LTX-Video attention projections): 128x128 makes 672 tiles = 5.09 waves on 132 SMs;
  // the model must pick a tile with fewer, fuller waves (the model alone: FP8 output, whose tiles
  // need whole 128-column groups, or bf16).
  const TileConfig c = heuristics::choose_tile(fp8_problem(5376, 2048, 2048, OutKind::kFP8), kSms, kH100Smem);
  const int64_t tiles = heuristics::cdiv(5376, c.bm) * heuristics::cdiv(2048, c.bn);
  EXPECT_FALSE(c.bm == 128 && c.bn == 128);
  EXPECT_LE(heuristics::cdiv(tiles, kSms), 5);
  // a single wave at 128x128 stays with a large tile rather than shrinking
  EXPECT_LT(heuristics::tile_cost(fp8_problem(8192, 8192, 8192), 128, 192, kSms),
            heuristics::tile_cost(fp8_problem(8192, 8192, 8192), 64, 128, kSms));
}

TEST(GemmHeuristics, TileWhyNot) {
  const heuristics::Problem p = fp8_problem(1000, 4096, 4096, OutKind::kFP8);
  EXPECT_STRNE(heuristics::tile_why_not(p, 128, 160, kH100Smem), "");  // 160 columns: no whole groups
  EXPECT_STREQ(heuristics::tile_why_not(p, 128, 128, kH100Smem), "");
  EXPECT_STRNE(heuristics::tile_why_not(p, 128, 176, kH100Smem), "");  // not compiled
  EXPECT_STRNE(heuristics::tile_why_not(p, 128, 128, 48 * 1024), "");  // too little shared memory
}

TEST(GemmHeuristics, SkinnyRule) {
  EXPECT_TRUE(heuristics::prefer_skinny(fp8_problem(16, 4096, 4096), kSms, true));
  EXPECT_TRUE(heuristics::prefer_skinny(fp8_problem(64, 4096, 4096), kSms, true));   // 32 N tiles < 0.9 x 132
  EXPECT_FALSE(heuristics::prefer_skinny(fp8_problem(64, 16384, 4096), kSms, true));  // 128 N tiles fill the GPU
  EXPECT_TRUE(heuristics::prefer_skinny(fp8_problem(64, 16384, 4096), kSms, false));
  EXPECT_FALSE(heuristics::prefer_skinny(fp8_problem(65, 4096, 4096), kSms, true));
  // the few-token kernel fuses nothing: epilogues and the FP8 output go to the sm_90a kernel
  EXPECT_FALSE(heuristics::prefer_skinny(fp8_problem(16, 4096, 4096, OutKind::kBF16, Epilogue::kGeluTanh), kSms, true));
  EXPECT_FALSE(heuristics::prefer_skinny(fp8_problem(16, 4096, 4096, OutKind::kFP8), kSms, true));
}

TEST(GemmHeuristics, CublasLtRule) {
  // plain FP8 GEMMs of more than 64 rows with bf16 output go to cuBLASLt's blockwise GEMM
  EXPECT_TRUE(heuristics::prefer_cublaslt(fp8_problem(5376, 2048, 2048)));
  EXPECT_TRUE(heuristics::prefer_cublaslt(fp8_problem(65, 4096, 4096)));
  EXPECT_FALSE(heuristics::prefer_cublaslt(fp8_problem(64, 4096, 4096)));  // few tokens: the skinny kernel
  // what it cannot do stays with our kernels
  EXPECT_FALSE(heuristics::prefer_cublaslt(fp8_problem(5376, 8192, 2048, OutKind::kBF16, Epilogue::kGeluTanh)));
  EXPECT_FALSE(heuristics::prefer_cublaslt(fp8_problem(5376, 8192, 2048, OutKind::kFP8)));
  EXPECT_FALSE(heuristics::prefer_cublaslt(fp8_problem(5376, 8192, 2048, OutKind::kFP16)));
  heuristics::Problem bf = fp8_problem(5376, 2048, 2048);
  bf.ops = Operands::kBf16;
  EXPECT_FALSE(heuristics::prefer_cublaslt(bf));
  // with a bias: only the large weights, where cuBLASLt's bias epilogue measured faster
  heuristics::Problem biased = fp8_problem(5376, 2048, 2048);
  biased.bias = true;
  EXPECT_FALSE(heuristics::prefer_cublaslt(biased));
  biased.N = 12288;
  biased.K = 4096;
  EXPECT_TRUE(heuristics::prefer_cublaslt(biased));
  biased.N = 4096;
  biased.K = 16384;
  EXPECT_TRUE(heuristics::prefer_cublaslt(biased));
}

TEST(GemmConfig, ParsesEveryField) {
  // A value and the fields it forces (0: left to the heuristic).
  const struct {
    const char* value;
    int bm, bn, cluster, group_m, sms, stages;
  } cases[] = {
      {"", 0, 0, 0, 0, 0, 0},  // unset: nothing forced
      {"auto", 0, 0, 0, 0, 0, 0},
      {"128x160:c2:g8", 128, 160, 2, 8, 0, 0},
      {"64x256:s66:p4:c1:g1024", 64, 256, 1, 1024, 66, 4},
      // the tile left to the heuristic, other fields forced; a repeated field: the last wins
      {"auto:s132:g4:g16", 0, 0, 0, 16, 132, 0},
      // a tile nothing compiles still parses: whether it can run is the entry's question
      {"128x176", 128, 176, 0, 0, 0, 0},
  };
  for (const auto& want : cases) {
    TileConfig c;
    c.bm = c.bn = c.cluster = c.group_m = c.sms = c.stages = 7;  // every field is written
    std::string err;
    ASSERT_TRUE(parse_tile_config(want.value, &c, &err)) << want.value << ": " << err;
    EXPECT_EQ(c.bm, want.bm) << want.value;
    EXPECT_EQ(c.bn, want.bn) << want.value;
    EXPECT_EQ(c.cluster, want.cluster) << want.value;
    EXPECT_EQ(c.group_m, want.group_m) << want.value;
    EXPECT_EQ(c.sms, want.sms) << want.value;
    EXPECT_EQ(c.stages, want.stages) << want.value;
  }
}

TEST(GemmConfig, RefusesMalformedValues) {
  const char* bad[] = {"128by160",   "x",          "128x",        "x128",       "0x128",      "128x0",
                       "-128x128",   "128x128 ",   "12a8x128",    "128x192:p1", "128x192:p9", "128x192:q2",
                       "128x192:c3", "128x192:c0", "128x192:c2a", "128x192:m3",  "128x192:",   "128x192:g",  "128x192:g0",
                       "128x192:g1025", "128x192:s0", "128x192:sx", "auto:",    "autox",      "128x1234567890"};
  for (const char* s : bad) {
    TileConfig c;
    c.bm = 7;  // untouched on failure
    std::string err;
    EXPECT_FALSE(parse_tile_config(s, &c, &err)) << s;
    EXPECT_EQ(c.bm, 7) << s;
    EXPECT_EQ(err.rfind("LTX_KERNELS_GEMM_CONFIG must be 'auto' or '<bm>x<bn>'", 0), 0u) << err;
    EXPECT_NE(err.find(std::string("got '") + s + "'"), std::string::npos) << err;
  }
  std::string err;
  TileConfig c;
  EXPECT_FALSE(parse_tile_config("128x192:q2", &c, &err));
  EXPECT_NE(err.find("bad field 'q2'"), std::string::npos) << err;
  EXPECT_FALSE(parse_tile_config("128by160", &c, &err));
  EXPECT_NE(err.find("no tile"), std::string::npos) << err;
  EXPECT_FALSE(parse_tile_config("128x192::c2", &c, &err));
  EXPECT_NE(err.find("empty field"), std::string::npos) << err;
}

TEST(GemmBackends, OneTableOfNames) {
  // a backend's value is its index in the table (what gemm_plan reports, what Python lists)
  for (int i = 0; i < kNumBackends; ++i) EXPECT_STREQ(backend_name(static_cast<Backend>(i)), kBackendNames[i]);
  EXPECT_STREQ(backend_name(Backend::kAuto), "auto");
  EXPECT_STREQ(backend_name(Backend::kCublasLt), "cublaslt");
  std::set<std::string> names(std::begin(kBackendNames), std::end(kBackendNames));
  EXPECT_EQ(names.size(), size_t(kNumBackends));
  // every op takes "auto", "torch" and "cpu" and parses back what it lists
  for (Operands ops : {Operands::kFp8Blockwise, Operands::kBf16, Operands::kFp6Blockwise, Operands::kNvfp4,
                       Operands::kFp8Rowwise}) {
    const BackendList list = accepted_backends(ops);
    ASSERT_GE(list.n, 3);
    Backend b = Backend::kCpu;
    EXPECT_TRUE(parse_backend("auto", ops, &b, nullptr));
    EXPECT_EQ(b, Backend::kAuto);
    for (int i = 0; i < list.n; ++i) {
      EXPECT_TRUE(parse_backend(backend_name(list.items[i]), ops, &b, nullptr));
      EXPECT_EQ(b, list.items[i]);
    }
    EXPECT_TRUE(parse_backend("torch", ops, &b, nullptr));
    EXPECT_TRUE(parse_backend("cpu", ops, &b, nullptr));
  }
}

TEST(GemmBackends, RefusalsListWhatTheOpTakes) {
  Backend b = Backend::kAuto;
  std::string err;
  EXPECT_FALSE(parse_backend("cutlass", Operands::kFp8Blockwise, &b, &err));
  EXPECT_EQ(err, "backend must be 'auto', 'sm90', 'skinny', 'sm89', 'sm90_cutlass', 'cublaslt', 'torch' or 'cpu' "
                 "(got 'cutlass')");
  EXPECT_FALSE(parse_backend("sm89", Operands::kBf16, &b, &err));
  EXPECT_EQ(err, "backend must be 'auto', 'sm90', 'torch' or 'cpu' (got 'sm89')");
  EXPECT_FALSE(parse_backend("sm90", Operands::kFp6Blockwise, &b, &err));
  EXPECT_EQ(err, "backend must be 'auto', 'sm89', 'torch' or 'cpu' (got 'sm90')");
  EXPECT_FALSE(parse_backend("sm90", Operands::kNvfp4, &b, &err));
  EXPECT_EQ(err, "backend must be 'auto', 'cublaslt', 'torch' or 'cpu' (got 'sm90')");
  EXPECT_FALSE(parse_backend("skinny", Operands::kFp8Rowwise, &b, &err));
  EXPECT_EQ(err, "backend must be 'auto', 'sm90', 'cublaslt', 'torch' or 'cpu' (got 'skinny')");
  EXPECT_FALSE(parse_backend("", Operands::kBf16, &b, &err));
  EXPECT_FALSE(parse_backend("Auto", Operands::kBf16, &b, &err));
  EXPECT_EQ(b, Backend::kAuto);  // untouched by a refusal
}
