// sm_90a attention kernels for bf16 inputs (see attention_sm90_launch.cuh).
#include "attention_sm90_launch.cuh"

namespace ltx_kernels {
namespace attention_sm90 {

// d 64: 192 x 128 tiles (three consumer warpgroups), 4 stages; d 128: 128 x 128, 3 stages (the
// O tiles reuse Q's shared memory). Measured fastest of the alternatives at the LTX shapes
// (scripts/attention_tiles.py).
cudaError_t forward_bf16(const AttentionParams& a, cudaStream_t stream) {
  using E = cutlass::bfloat16_t;
  if (a.tile != 0) return forward_bf16_tile(a, stream);  // the alternatives (attention_tiles_bf16_sm90.cu)
  if (a.head_dim == 64) return launch<Traits<E, E, 64, 128, 4, false, 3>>(a, stream);
  // d 128: with the rescale skip (Traits::kSkipRescale) and the lean loop (Traits::kLeanLoop):
  // 0.87x / 1.00x cuDNN at 2688 / 8192 tokens against the former default's (tile 5) 0.86x / 0.96x,
  // same run (experiments/attention_tiles_e04ebcc.json). fp16 keeps the former kernel (not measured).
  return launch<Traits<E, E, 128, 128, 3, false, 2, false, false, true, true>>(a, stream);
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
