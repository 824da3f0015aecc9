// Problem description of neighborhood attention shared by the CUDA core, the CPU backend and
// the torch adapter (see natten.h for the semantics). No CUDA, no torch.
#pragma once

#include <cstdint>

namespace ltx_kernels {

// Element strides of one [B, S0, S1, S2, heads, d] tensor; the d axis has stride 1.
struct NaStrides {
  int64_t batch, s0, s1, s2, head;
};

struct NaProblem {
  int64_t batch, heads;
  int size[3];    // spatial extents (S0, S1, S2), each >= kernel
  int kernel[3];  // odd window sizes
  bool causal[3];
  int dim;        // head dim
  float scale;    // softmax scale applied to q.k
};

// Query tile shape of the CUDA kernel (64 queries = 4 warps x 16 rows). tile = -1 lets the
// dispatcher pick (smallest staged key union per query); 0..kNaNumTiles-1 forces one.
constexpr int kNaNumTiles = 6;
// Tile extents (t, h, w) for index i (host; the kernel gets them as arguments).
inline void na_tile_shape(int i, int& t, int& h, int& w) {
  static const int kShapes[kNaNumTiles][3] = {{1, 8, 8}, {2, 4, 8}, {4, 4, 4},
                                              {1, 4, 16}, {1, 2, 32}, {1, 1, 64}};
  t = kShapes[i][0];
  h = kShapes[i][1];
  w = kShapes[i][2];
}

// Index in [0, n) of the smallest cost(i), the first on ties (the dispatchers' box choice).
template <class Cost>
inline int na_argmin(int n, Cost cost) {
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

// Query boxes of the sm_90 TMA kernel (natten_sm90.cuh): (t, h) extents, 8 along w, 128 queries
// (8 consumer warps of 1 x 2 x 8). LTX_NATTEN_TILE = kNaNumTiles + i forces box i.
constexpr int kNaSm90Boxes = 3;
inline void na_sm90_box(int i, int& t, int& h) {
  static const int kBoxes[kNaSm90Boxes][2] = {{2, 8}, {1, 16}, {4, 4}};
  t = kBoxes[i][0];
  h = kBoxes[i][1];
}

}  // namespace ltx_kernels
