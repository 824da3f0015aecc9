// The two neighborhood-attention kernels' launchers, on one dilation-1 problem (p.dilation all
// 1); natten_forward (cuda/ops.h) runs every residue group through them as natten_heuristics.h
// chooses.
//   natten_forward_portable (csrc/cuda/natten/natten.cu, mma.sync, sm_80+): tile -1 picks
//     (natten_pick_tile), else forces 0 .. kNattenNumTiles - 1.
//   natten_forward_sm90 (csrc/cuda/natten/sm90_natten.cu, built for sm_90a only: TMA, mbarrier
//     ring): box -1 picks (natten_sm90_pick), else forces; cudaErrorNotSupported for a problem
//     it does not take (natten_sm90_takes, or TMA descriptors it cannot encode), so that the
//     caller can fall back.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ltx_kernels/natten/natten_params.h"

namespace ltx_kernels {

cudaError_t natten_forward_portable(const NattenParams& p, int tile, cudaStream_t stream);
cudaError_t natten_forward_sm90(const NattenParams& p, int box, cudaStream_t stream);

#ifdef __CUDACC__
// fn(TypeTag<__half>{}) or fn(TypeTag<__nv_bfloat16>{}), the kernels' element types; `otherwise`
// for float32, which no CUDA kernel takes.
template <class Fn>
inline cudaError_t natten_dispatch(DType dt, cudaError_t otherwise, Fn&& fn) {
  if (dt == DType::kFloat16) return fn(TypeTag<__half>{});
  if (dt == DType::kBFloat16) return fn(TypeTag<__nv_bfloat16>{});
  return otherwise;
}
#endif

// The fields both kernels' arguments share (n, ker, causal, ntile, scale_log2) for query boxes
// of extents `box`; returns the number of boxes in the grid.
template <class Args>
inline int64_t natten_grid_args(Args& a, const NattenProblem& p, const int (&box)[3]) {
  int64_t boxes = 1;
  for (int ax = 0; ax < 3; ++ax) {
    a.n[ax] = p.size[ax];
    a.ker[ax] = p.kernel[ax];
    a.causal[ax] = p.causal[ax] ? 1 : 0;
    a.ntile[ax] = int((p.size[ax] + box[ax] - 1) / box[ax]);
    boxes *= a.ntile[ax];
  }
  a.scale_log2 = p.scale * 1.4426950408889634f;  // log2(e): the kernels use exp2
  return boxes;
}

}  // namespace ltx_kernels
