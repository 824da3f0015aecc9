// GEMM heuristics: pure functions of the problem (shape, SM count, epilogue), apart from the kernels.
// No CUDA, no torch; unit-tested on the CPU (tests/cpp/test_gemm_heuristics.cpp) and reachable from
// Python through ltx_kernels.gemm_config / fp8_gemm_backend.
//
//   tile_compiled(ops, bm, bn)   the sm_90a tile configurations that exist (one kernel each)
//   tile_ok(...)                 whether a configuration can run a problem (FP8 output needs
//                                whole 128-column groups per warpgroup; shared memory must fit)
//   choose_tile(...)             the configuration "auto" launches: FP8 128x192 where it fills
//                                the GPU (an empirical rule), else the smallest modelled time
//   prefer_skinny(...)           whether "auto" takes the few-token kernel over the sm_90a one
//   prefer_cublaslt(...)         whether "auto" hands a plain FP8 GEMM to cuBLASLt (blockwise / rowwise)
//
// Time model of choose_tile (cycles of one SM; only the ranking matters). A CTA runs
// ceil(tiles / CTAs) tiles; a tile costs K-blocks x max(tensor-core cycles, shared-memory cycles)
// + a fixed epilogue cost:
//   tensor core: 2 * bm * bn * 128 / 8192 cycles per 128-byte K block for FP8 (4096 FLOP per cycle
//                for bf16, 64 elements per block): the dense rate of an H100/H200 SM;
//   shared memory: 128 bytes per cycle; per K block the TMA writes (bm + bn) * 128 bytes and the
//                wgmma reads them once more;
//   epilogue: bm * bn * out_bytes / 64 + 600 cycles (staging writes, the exposed part of the store).
// The last, partial wave is what the non-power-of-two tile widths are for: 5376 x 2048 (LTX-Video's
// attention projections) makes 672 128x128 tiles = 5.09 waves on 132 SMs, but 630 128x144 tiles =
// 4.77 waves. The cluster size is 1 (see choose_tile). benchmarks/sweep_gemm.py measures every
// configuration against this choice.
#pragma once

#include <cstdint>

#include "ltx_kernels/gemm/gemm_params.h"
#include "ltx_kernels/gemm/sm90_plan.h"

namespace ltx_kernels {
namespace gemm {
namespace heuristics {

struct TileShape {
  int bm, bn;
};

// The compiled sm_90a configurations (csrc/cuda/gemm/sm90_fp8_gemm_1d2d.cu, sm90_bf16_gemm.cu,
// sm90_fp8_gemm_rowwise.cu). FP8 1D2D keeps two fp32 accumulators per output (the wgmma target and
// the promoted total), so a 64-row warpgroup slice is at most 192 columns wide (2 x 96 registers)
// and bm = 256 goes with bn = 128; bf16 keeps one, and so does FP8 rowwise (the bf16 mainloop on
// e4m3 operands, its scales applied in the epilogue), which therefore has bf16's tile set.
constexpr TileShape kFp8Tiles[] = {{128, 128}, {128, 144}, {128, 160}, {128, 192},
                                   {256, 128}, {64, 128},  {64, 256}};
constexpr TileShape kBf16Tiles[] = {{128, 128}, {128, 192}, {128, 256}, {256, 128}, {64, 256}};
constexpr TileShape kFp8RowwiseTiles[] = {{128, 128}, {128, 192}, {128, 256}, {256, 128}, {64, 256}};

// The compiled tiles of `ops` (*n of them); none for the operands no sm_90a kernel reads.
inline const TileShape* compiled_tiles(Operands ops, int* n) {
  switch (ops) {
    case Operands::kFp8Blockwise:
      *n = int(sizeof(kFp8Tiles) / sizeof(kFp8Tiles[0]));
      return kFp8Tiles;
    case Operands::kFp8Rowwise:
      *n = int(sizeof(kFp8RowwiseTiles) / sizeof(kFp8RowwiseTiles[0]));
      return kFp8RowwiseTiles;
    case Operands::kBf16:
      *n = int(sizeof(kBf16Tiles) / sizeof(kBf16Tiles[0]));
      return kBf16Tiles;
    default:
      *n = 0;
      return nullptr;
  }
}

inline bool tile_compiled(Operands ops, int bm, int bn) {
  int n = 0;
  const TileShape* list = compiled_tiles(ops, &n);
  for (int i = 0; i < n; ++i)
    if (list[i].bm == bm && list[i].bn == bn) return true;
  return false;
}

struct Problem {
  Operands ops = Operands::kFp8Blockwise;
  int64_t M = 0, N = 0, K = 0;
  Epilogue epilogue = Epilogue::kNone;
  OutKind out = OutKind::kBF16;
  GateKind gate = GateKind::kNone;
  int64_t tokens_per_sample = 0;
  bool bias = false;
};

inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Columns per consumer warpgroup (bm = 64 splits the tile's columns between the two).
inline int warpgroup_cols(int bm, int bn) { return bm == 64 ? bn / 2 : bn; }

// "" when (bm, bn) can run the problem with smem_max bytes of shared memory, else why not.
inline const char* tile_why_not(const Problem& pr, int bm, int bn, int smem_max) {
  if (!tile_compiled(pr.ops, bm, bn)) return "not a compiled tile configuration";
  if (pr.out == OutKind::kFP8 && warpgroup_cols(bm, bn) % 128 != 0)
    return "the FP8 output needs whole 128-column groups per warpgroup (bn = 128 or 256 for bm >= 128, 256 for bm = 64)";
  const sm90::Sm90Layout L = sm90::plan_layout(pr.ops, bm, bn, pr.out, pr.gate, pr.tokens_per_sample, smem_max);
  if (L.stages < 2) return "fewer than two pipeline stages fit in shared memory";
  return "";
}
inline bool tile_ok(const Problem& pr, int bm, int bn, int smem_max) { return tile_why_not(pr, bm, bn, smem_max)[0] == 0; }

// Modelled cycles of one SM for the whole problem with (bm, bn) on `sms` SMs.
inline double tile_cost(const Problem& pr, int bm, int bn, int sms) {
  const bool fp8 = e4m3_operands(pr.ops);
  const int64_t tiles = cdiv(pr.M, bm) * cdiv(pr.N, bn);
  const int64_t per_cta = cdiv(tiles, sms > 0 ? sms : 1);
  const int64_t kblocks = cdiv(pr.K, fp8 ? 128 : 64);
  const double mma = 2.0 * bm * bn * (fp8 ? 128.0 : 64.0) / (fp8 ? 8192.0 : 4096.0);
  const double smem = 2.0 * (bm + bn) * 128.0 / 128.0;
  const double per_kb = mma > smem ? mma : smem;
  const double out_bytes = pr.out == OutKind::kFP8 ? 1.0 : 2.0;
  const double epi = bm * bn * out_bytes / 64.0 + 600.0;
  return double(per_cta) * (double(kblocks) * per_kb + epi);
}

// FP8: the tile "auto" takes whenever it can run the problem and makes at least one full wave.
// The FP8 mainloop pays a fixed cost per K block (drain, stage release, the promotion's ~bn / 2
// FMA per thread), which the time model below leaves out and which the widest tile amortises
// best: 128x192 is the fastest compiled FP8 tile at every LTX-Video / LTX-2 / peak shape of
// benchmarks/bench_gemm.py, wave quantization included, ahead of the model's picks where they
// differ. Adding that cost to tile_cost instead (~600 cycles per K block and 64-row slice, from
// Nsight Compute at 8192^3) still picks 128x160 at 4096 x 7168 x 16384, so the empirical rule
// stays explicit. It runs as a 2-CTA cluster (B multicast), faster than single CTAs at most of
// those shapes. docs/design/gemm.md names the records behind both.
constexpr TileShape kFp8Preferred = {128, 192};

// The configuration "auto" launches on an sm_90a device with `sms` SMs. Ties go to the larger
// tile (fewer bytes per FLOP). group_m: 16 M tiles per raster group (8 when bm = 256).
inline TileConfig choose_tile(const Problem& pr, int sms, int smem_max) {
  TileConfig best;
  double best_cost = 0;
  if (pr.ops == Operands::kFp8Blockwise && tile_ok(pr, kFp8Preferred.bm, kFp8Preferred.bn, smem_max) &&
      cdiv(pr.M, kFp8Preferred.bm) * cdiv(pr.N, kFp8Preferred.bn) >= int64_t(sms > 0 ? sms : 1)) {
    best.bm = kFp8Preferred.bm;
    best.bn = kFp8Preferred.bn;
    best.group_m = 16;
    best.cluster = 2;
    return best;
  }
  int n = 0;
  const TileShape* list = compiled_tiles(pr.ops, &n);
  for (int i = 0; i < n; ++i) {
    const int bm = list[i].bm, bn = list[i].bn;
    if (!tile_ok(pr, bm, bn, smem_max)) continue;
    const double c = tile_cost(pr, bm, bn, sms);
    const bool better = best.bm == 0 || c < best_cost * (1 - 1e-9) ||
                        (c <= best_cost * (1 + 1e-9) && bm * bn > best.bm * best.bn);
    if (better) {
      best.bm = bm;
      best.bn = bn;
      best_cost = c;
    }
  }
  if (best.bm == 0) return best;
  best.group_m = best.bm == 256 ? 8 : 16;
  // The model's tiles run as single CTAs: only the FP8 128x192 tile (above) has records showing
  // that the 2-CTA cluster pays; for the others LTX_KERNELS_GEMM_CONFIG=<tile>:c2 forces it, and
  // benchmarks/sweep_gemm.py times it.
  best.cluster = 1;
  return best;
}

// Whether "auto" runs the CUTLASS-collective FP8 kernel ("sm90_cutlass") rather than ours for a
// plain FP8 GEMM that cuBLASLt does not take (no epilogue beyond the bias, 16-bit output, more than
// 64 rows): the CUTLASS kernel keeps the plain GEMMs and ours runs what it cannot, the fused
// epilogues and FP8 output. benchmarks/results/h200/gemm.json times both at every LTX / peak shape
// ("ours" is the sm_90a kernel, baseline "sm90_cutlass"); docs/design/gemm.md has the rule's records.
inline bool prefer_cutlass(const Problem& pr) {
  return pr.ops == Operands::kFp8Blockwise && pr.epilogue == Epilogue::kNone && pr.out != OutKind::kFP8 &&
         pr.M > 64;
}

// Whether "auto" runs cuBLASLt's blockwise FP8 GEMM (1x128 activation and 128x128 weight scales,
// csrc/cuda/gemm/cublaslt_gemm.cu) for a plain FP8 GEMM: no epilogue beyond a bias, bf16 output, more
// than 64 rows; with a (bf16) bias only for the large weights of LTX-2 (N x K >= 12288 x 4096),
// where cuBLASLt's bias epilogue pays against the CUTLASS kernel's fp32 bias. The records:
// benchmarks/results/h200/gemm.json (the fp8_blockwise_gemm rows without and with [bias], each
// backend beside the others) and docs/design/gemm.md.
// Our kernels keep what cuBLASLt cannot do: fused epilogues, FP8 output, few tokens, fp16 output.
//
// FP8 rowwise: cuBLASLt's outer-vector-scaled GEMM for every plain call (bias at most, bf16 out):
// it is the same mainloop as ours with no promotion, and faster than our sm_90a kernel at the LTX
// shapes (benchmarks/results/<gpu>/gemm_rowwise.json, "ours" = this choice beside "ours_sm90").
inline bool prefer_cublaslt(const Problem& pr) {
  if (pr.ops == Operands::kFp8Rowwise) return pr.epilogue == Epilogue::kNone && pr.out == OutKind::kBF16;
  if (pr.ops != Operands::kFp8Blockwise || pr.epilogue != Epilogue::kNone || pr.out != OutKind::kBF16 || pr.M <= 64)
    return false;
  return !pr.bias || pr.N * pr.K >= int64_t(12288) * 4096;
}

// Whether "auto" runs the few-token kernel ("skinny": weights streamed through mma.sync / a small
// wgmma, split-K) rather than the sm_90a tile kernel: plain epilogue (bias at most) and 16-bit
// output only (the few-token kernel fuses nothing else), M <= 32 always, 32 < M <= 64 unless the
// sm_90a kernel is available and its 64-row tiles alone nearly fill the GPU
// (ceil(N / 128) >= 0.9 x SMs: then it streams the weights as fast and wastes less of the MMA).
inline bool prefer_skinny(const Problem& pr, int sms, bool sm90_available) {
  if (pr.epilogue != Epilogue::kNone || pr.out == OutKind::kFP8 || pr.ops != Operands::kFp8Blockwise) return false;
  if (pr.M > 64) return false;
  if (pr.M <= 32 || !sm90_available) return true;
  return double(cdiv(pr.N, 128)) < 0.9 * double(sms);
}

}  // namespace heuristics
}  // namespace gemm
}  // namespace ltx_kernels
