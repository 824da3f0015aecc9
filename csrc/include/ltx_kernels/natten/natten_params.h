// Parameters of neighborhood attention (natten_forward), built once by the torch adapter and
// taken by both backends (natten_forward in cpu/ops.h and cuda/ops.h). No CUDA, no torch.
//
// q, k, v, out are [B, S0, S1, S2, heads, d] (1-D and 2-D problems are expressed with leading
// spatial extents of 1 and kernel 1). For each query at spatial position i (per axis a):
//  - non-causal axis, window of `kernel[a]` keys starting at clamp(i - kernel/2, 0, n - kernel):
//    a query near an edge keeps a full window, shifted inward (NATTEN's border rule);
//  - causal axis, keys [max(i - kernel + 1, 0), i] (NATTEN's causal NA: not shifted, so the
//    first kernel-1 positions see fewer keys);
//  - dilation r: the same rules inside the residue group of i (positions i % r + r m), which
//    needs n >= kernel * r. The backends run each residue group as a dilation-1 problem on
//    strided views (natten_residue_group).
// out[q] = softmax_j(scale * <q, k_j>) v_j over the product of the per-axis windows.
// Semantics in full: docs/semantics.md, section "Neighborhood attention".
#pragma once

#include <cstdint>

#include "ltx_kernels/common/dtype.h"

namespace ltx_kernels {

// Element strides of one [B, S0, S1, S2, heads, d] tensor; the d axis has stride 1.
struct NattenStrides {
  int64_t batch, s0, s1, s2, head;
};

// A dilation-1 problem: what the kernels and the CPU loop run.
struct NattenProblem {
  int64_t batch, heads;
  int size[3];    // spatial extents (S0, S1, S2), each >= kernel
  int kernel[3];  // odd window sizes
  bool causal[3];
  int dim;        // head dim
  float scale;    // softmax scale applied to q.k
};

struct NattenParams {
  DType dtype;  // of q, k, v and out
  void* out;
  const void* q;
  const void* k;
  const void* v;
  NattenStrides os, qs, ks, vs;
  NattenProblem problem;  // the full extents (every residue group's union)
  int dilation[3];        // >= 1
  // Kernel choice on CUDA (natten/natten_heuristics.h): tile -1 lets the dispatcher pick; 0 ..
  // kNattenNumTiles - 1 forces a box of the portable kernel, kNattenNumTiles + i box i of the
  // sm_90 kernel. allow_sm90 false keeps the automatic choice on the portable kernel.
  int tile;
  bool allow_sm90;
};

// Residue group g = (g0, g1, g2), g[a] < dilation[a], as a dilation-1 problem: positions
// g[a] + dilation[a] * m on each axis, on strided views of the same tensors.
inline NattenParams natten_residue_group(const NattenParams& p, const int (&g)[3]) {
  NattenParams r = p;
  const int64_t es = dtype_size(p.dtype);
  NattenStrides* strides[4] = {&r.os, &r.qs, &r.ks, &r.vs};
  int64_t offset[4] = {0, 0, 0, 0};  // elements
  for (int a = 0; a < 3; ++a) {
    const int d = p.dilation[a];
    r.problem.size[a] = (p.problem.size[a] - g[a] + d - 1) / d;
    r.dilation[a] = 1;
    for (int t = 0; t < 4; ++t) {
      int64_t& s = a == 0 ? strides[t]->s0 : (a == 1 ? strides[t]->s1 : strides[t]->s2);
      offset[t] += g[a] * s;
      s *= d;
    }
  }
  r.out = static_cast<char*>(p.out) + offset[0] * es;
  r.q = static_cast<const char*>(p.q) + offset[1] * es;
  r.k = static_cast<const char*>(p.k) + offset[2] * es;
  r.v = static_cast<const char*>(p.v) + offset[3] * es;
  return r;
}

}  // namespace ltx_kernels
