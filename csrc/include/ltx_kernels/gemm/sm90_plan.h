// The sm_90a GEMM kernels' tile order and shared-memory plan, as pure functions the host (launcher,
// GoogleTest) and the device (sm90_gemm.cuh) share. No CUDA runtime, no torch.
#pragma once

#include <cstdint>

#include "ltx_kernels/gemm/gemm_params.h"

#if defined(__CUDACC__)
#define LTX_GEMM_HD __host__ __device__ __forceinline__
#else
#define LTX_GEMM_HD inline
#endif

namespace ltx_kernels {
namespace gemm {
namespace sm90 {

// ---- persistent tile order -------------------------------------------------------------------
// Tiles are numbered t = 0 .. num_m * num_n - 1 and CTA b of a G-CTA grid runs t = b, b + G, ...
// Raster: groups of `group_m` consecutive M tiles; inside a group, M varies fastest, then N. A
// wave of G consecutive tiles then touches ~group_m A row-blocks and ~G / group_m B column-blocks,
// which stay in L2 while the wave runs.
// Pairs (cluster of 2): tiles 2c and 2c + 1 run on the two CTAs of one cluster (G is even). With
// group_m even they are (mb, nb) and (mb + 1, nb): the same B tile, loaded half by each CTA and
// multicast to both. A group with an odd number of M tiles (the last one) is split into an even
// part and a single M tile whose pairs are (mb, nb), (mb, nb + 1): no common operand there, so
// those pairs load separately (mcast false).
struct TileCoord {
  uint32_t mb, nb;
  bool mcast;  // the pair shares B (meaningful when pairing)
};

LTX_GEMM_HD TileCoord tile_coord(uint32_t t, uint32_t num_m, uint32_t num_n, uint32_t group_m, bool pairs) {
  const uint32_t per_group = group_m * num_n;
  const uint32_t grp = t / per_group;
  const uint32_t first = grp * group_m;
  uint32_t rows = num_m - first < group_m ? num_m - first : group_m;
  const uint32_t local = t - grp * per_group;
  if (pairs && (rows & 1u)) {
    const uint32_t even = (rows - 1) * num_n;
    if (local >= even) return TileCoord{first + rows - 1, local - even, false};
    rows -= 1;
  }
  return TileCoord{first + local % rows, local / rows, pairs};
}

// ---- shared-memory plan ----------------------------------------------------------------------
constexpr int kMaxStages = 8;
constexpr uint32_t kStageK = 128;  // bytes of K per pipeline stage: 128 FP8 or 64 bf16 elements

// Swizzle width (bytes) of the output staging tile: the widest of 128 / 64 / 32 bytes that divides
// a tile row, so that every 16-byte unit a thread group writes lands in a different bank group.
constexpr int out_swizzle_bytes(int bn, int out_elem_bytes) {
  const int row = bn * out_elem_bytes;
  return row % 128 == 0 ? 128 : row % 64 == 0 ? 64 : 32;
}

struct Sm90Layout {
  int stages = 0;
  int d_sw = 0;       // swizzle bytes of the D / h / gate staging tiles
  int g_rows = 0;     // rows of the gate staging tile (0: no gate buffer)
  uint32_t d_chunk = 0, g_chunk = 0;  // bytes per column chunk (d_sw bytes wide) of D and gate
  // off_sfa: the scales staged in shared memory: FP8 1D2D the bm activation scales of each stage,
  // FP8 rowwise the bn weight scales of the tile (loaded with the bias); none for bf16
  uint32_t off_a = 0, off_b = 0, off_d = 0, off_g = 0, off_sfa = 0, off_bias = 0, off_bar = 0;
  uint32_t smem_bytes = 0;  // dynamic shared memory to request (plan + 1024 bytes of alignment slack)
};

LTX_GEMM_HD uint32_t align_up(uint32_t x, uint32_t a) { return (x + a - 1) / a * a; }

// Rows of the per-sample gate buffer: samples a bm-row tile can touch (tokens_per_sample rows
// each), rounded up to the 8-row TMA boxes it is loaded in, at most bm.
LTX_GEMM_HD int gate_rows_per_sample(int bm, int64_t tokens_per_sample) {
  const int64_t t = tokens_per_sample > 0 ? tokens_per_sample : 1;
  const int64_t n = (bm - 1 + t - 1) / t + 1;
  const int64_t r = (n + 7) / 8 * 8;
  return int(r < bm ? r : bm);
}

// The plan for a (bm, bn) tile, or stages == 0 when fewer than 2 stages fit in `smem_max` bytes.
// max_stages > 0 caps the stage count (a tuning knob; 0: as many as fit, up to kMaxStages).
LTX_GEMM_HD Sm90Layout plan_layout(Operands ops, int bm, int bn, OutKind out, GateKind gate, int64_t tokens_per_sample,
                                   int smem_max, int max_stages = 0) {
  Sm90Layout L;
  const bool fp8 = ops == Operands::kFp8Blockwise;
  const int out_bytes = out == OutKind::kFP8 ? 1 : 2;
  L.d_sw = out == OutKind::kFP8 ? 128 : out_swizzle_bytes(bn, 2);
  L.d_chunk = uint32_t(bm) * uint32_t(L.d_sw);
  const uint32_t d_bytes = align_up(uint32_t(bm) * uint32_t(bn) * uint32_t(out_bytes), 1024);
  if (gate != GateKind::kNone) {
    L.g_rows = gate == GateKind::kPerToken ? bm : gate_rows_per_sample(bm, tokens_per_sample);
    L.g_chunk = align_up(uint32_t(L.g_rows) * uint32_t(L.d_sw), 1024);
  }
  const uint32_t g_bytes = L.g_chunk * uint32_t(bn * 2 / L.d_sw);
  const uint32_t a_stage = uint32_t(bm) * kStageK, b_stage = uint32_t(bn) * kStageK;
  const uint32_t sfa_stage = fp8 ? uint32_t(bm) * 4 : 0;  // sa of the bm rows (sb is read from global)
  // rowwise: the tile's bn weight scales, once per tile (sa is read from global in the epilogue)
  const uint32_t sb_tile = ops == Operands::kFp8Rowwise ? align_up(uint32_t(bn) * 4, 16) : 0;
  const uint32_t per_stage = a_stage + b_stage + sfa_stage + 16;  // + two barriers
  const uint32_t fixed = d_bytes + g_bytes + sb_tile + align_up(uint32_t(bn) * 4, 16) + 16 + 1024;
  int s = smem_max > int(fixed) ? int((uint32_t(smem_max) - fixed) / per_stage) : 0;
  if (s > kMaxStages) s = kMaxStages;
  if (max_stages > 0 && s > max_stages) s = max_stages;
  if (s < 2) return Sm90Layout{};
  L.stages = s;
  uint32_t o = 0;
  L.off_a = o;
  o += uint32_t(s) * a_stage;
  L.off_b = o;
  o += uint32_t(s) * b_stage;
  L.off_d = o;
  o += d_bytes;
  L.off_g = o;
  o += g_bytes;
  L.off_sfa = o;
  o += uint32_t(s) * sfa_stage + sb_tile;
  L.off_bias = o;
  o += align_up(uint32_t(bn) * 4, 16);
  L.off_bar = o;
  o += 8u * uint32_t(2 * s + 2);
  L.smem_bytes = o + 1024;
  return L;
}

}  // namespace sm90
}  // namespace gemm
}  // namespace ltx_kernels
