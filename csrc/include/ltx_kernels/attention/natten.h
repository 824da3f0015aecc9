// Neighborhood attention (NATTEN semantics), framework-agnostic entry points. No torch.
//
// Problem: q, k, v, out are [B, S0, S1, S2, heads, d] (1-D and 2-D problems are expressed with
// leading spatial extents of 1 and kernel 1). For each query at spatial position i (per axis a):
//  - non-causal axis, window of `kernel[a]` keys starting at clamp(i - kernel/2, 0, n - kernel):
//    a query near an edge keeps a full window, shifted inward (NATTEN's border rule);
//  - causal axis, keys [max(i - kernel + 1, 0), i] (NATTEN's causal NA: not shifted, so the
//    first kernel-1 positions see fewer keys).
// out[q] = softmax_j(scale * <q, k_j>) v_j over the product of the per-axis windows.
// Dilation is handled above this layer by splitting each dilated axis into its residue groups
// (strided views), so the core is dilation 1.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/attention/natten_problem.h"

namespace ltx_kernels {

// The tile the dispatcher picks for a problem (for tests and benchmarks).
int na_pick_tile(const NaProblem& p);

// T in {__half, __nv_bfloat16}; dim in {32, 64, 128}; every pointer 16-byte aligned and every
// stride a multiple of 8 elements (the adapter copies otherwise). Returns
// cudaErrorInvalidValue for unsupported problems.
template <typename T>
cudaError_t na_forward(T* out, NaStrides os, const T* q, NaStrides qs, const T* k, NaStrides ks,
                       const T* v, NaStrides vs, const NaProblem& p, int tile, cudaStream_t stream);

// The sm_90 kernel (csrc/cuda/attention/natten_sm90.cu, built only for sm_90a: TMA, mbarrier
// pipeline, per-warp row skipping). Takes head dim 64, w-axis windows up to 25, strides that a
// TMA descriptor accepts (16-byte multiples; the adapter guarantees them); batch is looped on the
// host. na_sm90_pick returns the box the dispatcher would use, or -1 when the automatic choice
// is the portable kernel (outside the envelope, or w windows > 9, where the portable kernel
// measured faster); na_forward_sm90 returns cudaErrorNotSupported then (box -1 = pick; a forced
// box runs anything inside the envelope), so the caller can fall back to na_forward.
int na_sm90_pick(const NaProblem& p);
template <typename T>
cudaError_t na_forward_sm90(T* out, NaStrides os, const T* q, NaStrides qs, const T* k, NaStrides ks,
                            const T* v, NaStrides vs, const NaProblem& p, int box, cudaStream_t stream);

}  // namespace ltx_kernels
