// Which neighborhood-attention kernel and which query box run a (dilation-1) problem: pure
// functions of the problem and the device, host only, no CUDA and no torch.
// benchmarks/sweep_natten.py times every box beside these choices (docs/design/natten.md); the
// kernels' headers (natten.cuh, sm90_natten.cuh) explain the work each box stages.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ltx_kernels/natten/natten_params.h"

namespace ltx_kernels {

// ---- the portable kernel (mma.sync, sm_80+; natten.cuh): query boxes of 64 queries (4 warps x
// 16 rows). tile -1 lets natten_pick_tile choose; 0 .. kNattenNumTiles - 1 forces one.
constexpr int kNattenNumTiles = 6;

// Box extents (t, h, w) of tile i (host; the kernel gets them as arguments).
inline void natten_tile_shape(int i, int& t, int& h, int& w) {
  static const int kShapes[kNattenNumTiles][3] = {{1, 8, 8}, {2, 4, 8}, {4, 4, 4},
                                                  {1, 4, 16}, {1, 2, 32}, {1, 1, 64}};
  t = kShapes[i][0];
  h = kShapes[i][1];
  w = kShapes[i][2];
}

// Index in [0, n) of the smallest cost(i), the first on ties.
template <class Cost>
inline int natten_argmin(int n, Cost cost) {
  int best = 0;
  double best_cost = cost(0);
  for (int i = 1; i < n; ++i) {
    const double c = cost(i);
    if (c < best_cost) {
      best = i;
      best_cost = c;
    }
  }
  return best;
}

inline int64_t natten_cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Keys staged (and mostly computed) for the whole grid with tile i: boxes x union of windows.
inline double natten_tile_cost(const NattenProblem& p, int i) {
  int t[3];
  natten_tile_shape(i, t[0], t[1], t[2]);
  double boxes = 1.0, keys = 1.0;
  for (int a = 0; a < 3; ++a) {
    boxes *= double(natten_cdiv(p.size[a], t[a]));
    keys *= double(std::min(t[a] + p.kernel[a] - 1, p.size[a]));
  }
  return boxes * keys;
}

// The tile with the fewest staged keys.
inline int natten_pick_tile(const NattenProblem& p) {
  return natten_argmin(kNattenNumTiles, [&](int i) { return natten_tile_cost(p, i); });
}

// ---- the sm_90 kernel (TMA + mbarrier ring; sm90_natten.cuh): head dim 64, 128 queries per CTA
// in a box (t, h, 8), key rows staged W8 = 16 or 32 wide (the union's w extent rounded up).
// Forced as tile kNattenNumTiles + i.
constexpr int kNattenSm90Boxes = 3;
constexpr int kNattenSm90HeadDim = 64;
constexpr int kNattenSm90ChunkKeys = 64;  // keys per pipeline stage: KR = 64 / W8 rows

inline void natten_sm90_box(int i, int& t, int& h) {
  static const int kBoxes[kNattenSm90Boxes][2] = {{2, 8}, {1, 16}, {4, 4}};
  t = kBoxes[i][0];
  h = kBoxes[i][1];
}

// Columns staged per key row: the union's w extent rounded up to 16 or 32; 0 = too wide.
inline int natten_sm90_row_width(const NattenProblem& p) {
  const int u2 = std::min(8 + p.kernel[2] - 1, p.size[2]);
  return u2 <= 16 ? 16 : (u2 <= 32 ? 32 : 0);
}

// What the sm_90 kernel takes at all: head dim 64, w windows up to 25, scale > 0 (it tracks
// maxima of the raw scores), grid-y limits.
inline bool natten_sm90_takes(const NattenProblem& p) {
  return p.dim == kNattenSm90HeadDim && p.heads <= 65535 && p.scale > 0.f && natten_sm90_row_width(p) != 0;
}

// Keys staged over the whole grid with box i (a proxy for the load traffic and the pipeline
// length; per-warp compute does not depend on the box).
inline double natten_sm90_box_cost(const NattenProblem& p, int i, int w8) {
  int bt, bh;
  natten_sm90_box(i, bt, bh);
  const int kr = kNattenSm90ChunkKeys / w8;
  const double boxes = double(natten_cdiv(p.size[0], bt)) * double(natten_cdiv(p.size[1], bh)) *
                       double(natten_cdiv(p.size[2], 8));
  const int u0 = std::min(bt + p.kernel[0] - 1, p.size[0]);
  const int u1 = std::min(bh + p.kernel[1] - 1, p.size[1]);
  return boxes * double(u0) * double(natten_cdiv(u1, kr) * kr) * double(w8);
}

// The box the automatic choice runs on the sm_90 kernel, or -1 for the portable kernel. 32-wide
// rows (w windows 10-25) stay on the portable kernel, the faster one there since half of each
// staged row lies outside every window (benchmarks/sweep_natten.py times the sm_90 boxes at such
// windows too; docs/design/natten.md). Forcing a box still runs them.
inline int natten_sm90_pick(const NattenProblem& p) {
  if (!natten_sm90_takes(p)) return -1;
  const int w8 = natten_sm90_row_width(p);
  if (w8 != 16) return -1;
  return natten_argmin(kNattenSm90Boxes, [&](int i) { return natten_sm90_box_cost(p, i, w8); });
}

// Whether the sm_90 kernel runs first on a device of compute capability cc: when forced (tile
// >= kNattenNumTiles), or for the automatic choice unless allow_sm90 is off. It may still refuse
// (natten_sm90_pick, natten_sm90_takes, TMA descriptors); the portable kernel then runs, unless
// the sm_90 kernel was forced.
inline bool natten_try_sm90(const NattenParams& p, int cc) {
  return cc == 90 && (p.tile >= kNattenNumTiles || (p.tile == -1 && p.allow_sm90));
}

}  // namespace ltx_kernels
