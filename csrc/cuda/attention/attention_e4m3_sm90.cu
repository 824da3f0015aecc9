// sm_90a attention kernels for FP8 E4M3 inputs (see attention_sm90_launch.cuh).
#include "attention_sm90_launch.cuh"

namespace ltx_kernels {
namespace attention_sm90 {
namespace {

// K factors per 128 keys (folded into the score scale once per key block): d 64 192 x 128 tiles
// (three consumer warpgroups), 6 stages; d 128 128 x 128, 4 stages. Per-key K factors (a multiply
// per score, and kBlockN / 4 more registers per thread): two consumer warpgroups, 64 x 128
// blocks per warpgroup at d 64 and 64 x 64 at d 128 (so that O, this block's P V, S, P and the
// factors fit in 240 registers), 4 stages. Measured at the LTX shapes (scripts/attention_tiles.py).
template <class O>
cudaError_t dispatch(const AttentionParams& a, cudaStream_t stream) {
  using E = cutlass::float_e4m3_t;
  const bool per_token = a.k_block == 1;
  // With K factors per 128 keys: P V accumulated in O by the tensor core (Traits::kPvInO) and the
  // lean loop (Traits::kLeanLoop). Measured on the H200 against cuDNN's bf16 SDPA in one run
  // (benchmarks/results/h200/experiments/attention_tiles_e04ebcc.json): d 64 1.23x / 1.38x at
  // 2688 / 14080 tokens (the former default, now tile 4: 1.03x / 1.13x); d 128 1.16x / 1.39x at
  // 2688 / 8192 (the former default, now tile 5: 1.07x / 1.24x).
  if (a.head_dim == 64) {
    return per_token ? launch<Traits<E, O, 64, 128, 4, true>>(a, stream)
                     : launch<Traits<E, O, 64, 128, 6, false, 3, true, false, false, true>>(a, stream);
  }
  return per_token ? launch<Traits<E, O, 128, 64, 4, true>>(a, stream)
                   : launch<Traits<E, O, 128, 128, 4, false, 2, true, false, false, true>>(a, stream);
}

}  // namespace

cudaError_t forward_e4m3(const AttentionParams& a, cudaStream_t stream) {
  if (a.tile != 0) return forward_e4m3_tile(a, stream);  // the alternatives (attention_tiles_e4m3_sm90.cu)
  return a.out_dtype == AttnDtype::kBF16 ? dispatch<cutlass::bfloat16_t>(a, stream)
                                         : dispatch<cutlass::half_t>(a, stream);
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
