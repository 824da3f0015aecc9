// The two neighborhood-attention kernels' launchers, on one dilation-1 problem (p.dilation all
// 1); natten_forward (cuda/ops.h) runs every residue group through them as natten_heuristics.h
// chooses.
//   natten_forward_portable (csrc/cuda/natten/natten.cu, mma.sync, sm_80+): tile -1 picks
//     (natten_pick_tile), else forces 0 .. kNattenNumTiles - 1.
//   natten_forward_sm90 (csrc/cuda/natten/natten_sm90.cu, built for sm_90a only: TMA, mbarrier
//     ring): box -1 picks (natten_sm90_pick), else forces; cudaErrorNotSupported for a problem
//     it does not take (natten_sm90_takes, or TMA descriptors it cannot encode), so that the
//     caller can fall back.
#pragma once

#include <cuda_runtime.h>

#include "ltx_kernels/natten/natten_params.h"

namespace ltx_kernels {

cudaError_t natten_forward_portable(const NattenParams& p, int tile, cudaStream_t stream);
cudaError_t natten_forward_sm90(const NattenParams& p, int box, cudaStream_t stream);

}  // namespace ltx_kernels
