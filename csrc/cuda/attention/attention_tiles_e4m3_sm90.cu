// Alternative tile configurations of the sm_90a attention kernel for FP8 E4M3 inputs with k
// factors per 128 keys and bf16 output (AttentionParams::tile > 0; see
// attention_tiles_bf16_sm90.cu). Registers per consumer thread here are about S (BN / 2) + P
// (BN / 8) + O and this block's P V (D / 2 each); O has its own shared memory tiles.
#include "attention_sm90_launch.cuh"

namespace ltx_kernels {
namespace attention_sm90 {

cudaError_t forward_e4m3_tile(const AttentionParams& a, cudaStream_t stream) {
  using E = cutlass::float_e4m3_t;
  using O = cutlass::bfloat16_t;
  // K factors per 128 keys are folded once per key block: blocks of 64 or 128 keys only
  if (a.out_dtype != AttnDtype::kBF16 || a.k_block == 1) return cudaErrorInvalidValue;
  if (a.head_dim == 64) {
    switch (a.tile) {
      case 1: return launch<Traits<E, O, 64, 128, 4, false, 2>>(a, stream);  // 128 x 128, 88 KB
      case 2: return launch<Traits<E, O, 64, 64, 8, false, 3>>(a, stream);   // 192 x 64, 100 KB
      // 192 x 128, 6 stages, P V in a fresh fragment, with O kept one key block behind
      // (Traits::kLazyRescale: one FFMA per O element and block instead of an FADD and an FMUL)
      case 3: return launch<Traits<E, O, 64, 128, 6, false, 3, false, true>>(a, stream);
      // the former default: 192 x 128, 6 stages, P V in a fresh fragment (84 bytes of spills)
      case 4: return launch<Traits<E, O, 64, 128, 6, false, 3>>(a, stream);
      // the default with the row sums from the P V wgmma (Traits::kRowSumInPv): no FADD per score,
      // 397 instructions per key block on the hot path against the default's 457
      case 5: return launch<Traits<E, O, 64, 128, 6, false, 3, true, false, false, true, true>>(a, stream);
      // tile 5 with one in 8 / one in 16 of the exponentials on the FMA pipe (Traits::kExp2PolyEvery):
      // 454 / 426 instructions, 58 / 62 MUFU (tile 5: 66)
      case 6: return launch<Traits<E, O, 64, 128, 6, false, 3, true, false, false, true, true, 8>>(a, stream);
      case 7: return launch<Traits<E, O, 64, 128, 6, false, 3, true, false, false, true, true, 16>>(a, stream);
      // tile 6 with O rescaled only when a row of the warp raised its maximum (Traits::kSkipRescale):
      // 427 with the rescale skipped
      case 8: return launch<Traits<E, O, 64, 128, 6, false, 3, true, false, true, true, true, 8>>(a, stream);
      default: return cudaErrorInvalidValue;
    }
  }
  switch (a.tile) {
    case 1: return launch<Traits<E, O, 128, 64, 4, false, 2>>(a, stream);   // 128 x 64, 112 KB
    case 2: return launch<Traits<E, O, 128, 128, 5, false, 2>>(a, stream);  // 128 x 128, 208 KB
    // the default without the lean loop: P V accumulated in O (Traits::kPvInO), 566 instructions
    // per key block on the hot path against the default's 499
    case 3: return launch<Traits<E, O, 128, 128, 4, false, 2, true>>(a, stream);
    // P V summed in fp32 (a fresh fragment per key block) with the lazy rescale and the lean loop:
    // 506 instructions per key block, no spills
    case 4: return launch<Traits<E, O, 128, 128, 4, false, 2, false, true, false, true>>(a, stream);
    // the former default: P V in a fresh fragment, 583 instructions, 20 bytes of spills
    case 5: return launch<Traits<E, O, 128, 128, 4, false, 2>>(a, stream);
    // the default with the row sums from the P V wgmma (Traits::kRowSumInPv): 439 instructions
    case 6: return launch<Traits<E, O, 128, 128, 4, false, 2, true, false, false, true, true>>(a, stream);
    // tile 6 with one in 8 / one in 4 of the exponentials on the FMA pipe (Traits::kExp2PolyEvery):
    // here no pipe is saturated (each consumer warp's own MUFU work, 8 cycles per exponential, sets
    // the length of its softmax), so a larger share than at d 64 may pay: 496 / 536 instructions,
    // 58 / 50 MUFU (tile 6: 66)
    case 7: return launch<Traits<E, O, 128, 128, 4, false, 2, true, false, false, true, true, 8>>(a, stream);
    case 8: return launch<Traits<E, O, 128, 128, 4, false, 2, true, false, false, true, true, 4>>(a, stream);
    // tile 7 with O rescaled only when a row of the warp raised its maximum (Traits::kSkipRescale:
    // 68 FMULs per key block skipped, more often the longer the key sequence): 437 when skipped
    case 9: return launch<Traits<E, O, 128, 128, 4, false, 2, true, false, true, true, true, 8>>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
