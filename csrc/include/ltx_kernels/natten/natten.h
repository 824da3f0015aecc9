// Neighborhood attention, CUDA entry points (semantics and layouts: natten/natten_params.h;
// kernel choice: natten/natten_heuristics.h). q, k, v, out __half or __nv_bfloat16.
#pragma once

#include <cuda_runtime.h>

#include "ltx_kernels/natten/natten_params.h"

namespace ltx_kernels {

// Every residue group of p on the kernel natten_heuristics.h chooses: the sm_90 kernel first where
// it applies (compiled for sm_90a, an sm_90 device, natten_try_sm90), the portable kernel
// otherwise or when the sm_90 kernel refuses the problem. Head dim 32, 64 or 128; every pointer
// 16-byte aligned and every stride a multiple of 8 elements (the adapter copies otherwise).
// Returns cudaErrorNotSupported when p.tile forces the sm_90 kernel and it does not take the
// problem, cudaErrorInvalidValue for problems no kernel takes.
cudaError_t natten_forward(const NattenParams& p, cudaStream_t stream);

// The two kernels on one dilation-1 problem (p.dilation all 1). natten_forward_portable: tile
// -1 picks (natten_pick_tile), else forces 0 .. kNattenNumTiles - 1. natten_forward_sm90
// (csrc/cuda/natten/natten_sm90.cu, built for sm_90a only): box -1 picks (natten_sm90_pick),
// else forces; returns cudaErrorNotSupported for a problem it does not take, so that the caller
// can fall back.
cudaError_t natten_forward_portable(const NattenParams& p, int tile, cudaStream_t stream);
cudaError_t natten_forward_sm90(const NattenParams& p, int box, cudaStream_t stream);

}  // namespace ltx_kernels
