// Alternative tile configurations of the sm_90a attention kernel for bf16 inputs
// (AttentionParams::tile > 0, the LTX_KERNELS_ATTENTION_TILE knob; attention_sm90_launch.cuh),
// compiled apart from the defaults so that they build in parallel. Traits<element, out, head dim,
// key block, stages, per-key K factors, consumer warpgroups>: the query tile is 64 x the consumer
// warpgroups. Shared memory is Q (which O reuses) + stages x (K + V) within 227 KB; registers per
// consumer thread about S (BN / 2) + P (BN / 4) + O (D / 2) within 240 (two consumer
// warpgroups) or 160 (three).
#include "attention_sm90_launch.cuh"

namespace ltx_kernels {
namespace attention_sm90 {

cudaError_t forward_bf16_tile(const AttentionParams& a, cudaStream_t stream) {
  using E = cutlass::bfloat16_t;
  if (a.head_dim == 64) {
    switch (a.tile) {
      case 1: return launch<Traits<E, E, 64, 128, 4, false, 2>>(a, stream);  // 128 x 128, 144 KB
      case 2: return launch<Traits<E, E, 64, 128, 6, false, 3>>(a, stream);  // 192 x 128, 216 KB
      // the default (192 x 128, 4 stages) with O rescaled only when a row's maximum moves by more
      // than 2^8 (Traits::kSkipRescale)
      case 3: return launch<Traits<E, E, 64, 128, 4, false, 3, false, false, true>>(a, stream);
      // that, with the lean loop (Traits::kLeanLoop): 415 instructions per key block on the hot
      // path against the default's 461 (scripts/sass_hotpath.py, nvcc 13.0; with the rescale
      // skipped, as in most key blocks)
      case 4: return launch<Traits<E, E, 64, 128, 4, false, 3, false, false, true, true>>(a, stream);
      default: return cudaErrorInvalidValue;
    }
  }
  switch (a.tile) {
    case 1: return launch<Traits<E, E, 128, 128, 2, false, 2>>(a, stream);  // 128 x 128, 160 KB
    case 2: return launch<Traits<E, E, 128, 176, 2, false, 2>>(a, stream);  // 128 x 176, 208 KB
    case 3: return launch<Traits<E, E, 128, 96, 4, false, 2>>(a, stream);   // 128 x 96, 224 KB
    // the default without the lean loop: 128 x 128, 3 stages, the rescale skipped while no row's
    // maximum moves by more than 2^8 (481 instructions per key block against the default's 426)
    case 4: return launch<Traits<E, E, 128, 128, 3, false, 2, false, false, true>>(a, stream);
    // the former default: 128 x 128, 3 stages, O rescaled after every key block (534)
    case 5: return launch<Traits<E, E, 128, 128, 3, false, 2>>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
