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
      // the default 192 x 128, 6 stages, with O kept one key block behind (Traits::kLazyRescale:
      // one FFMA per O element and block instead of an FADD and an FMUL)
      case 3: return launch<Traits<E, O, 64, 128, 6, false, 3, false, true>>(a, stream);
      // the default with P V accumulated in O (Traits::kPvInO) and the lean loop (Traits::kLeanLoop):
      // no spills (P V in O alone spills 420 bytes here, the default 84); instructions per key
      // block on the hot path (scripts/sass_hotpath.py, nvcc 13.0): 457 against the default's 516
      case 4: return launch<Traits<E, O, 64, 128, 6, false, 3, true, false, false, true>>(a, stream);
      default: return cudaErrorInvalidValue;
    }
  }
  switch (a.tile) {
    case 1: return launch<Traits<E, O, 128, 64, 4, false, 2>>(a, stream);   // 128 x 64, 112 KB
    case 2: return launch<Traits<E, O, 128, 128, 5, false, 2>>(a, stream);  // 128 x 128, 208 KB
    // the default 128 x 128, 4 stages, with P V accumulated in O (Traits::kPvInO): 64 registers
    // and 64 FADDs per thread and key block fewer, no spills (the default spills 20 bytes). At
    // d 64 the same change alone spills 420 bytes at 192 x 128; with one copy of the step per
    // kind of key block it spills none (d 64 tile 4).
    case 3: return launch<Traits<E, O, 128, 128, 4, false, 2, true>>(a, stream);
    // the default with the lazy rescale (as at d 64) and the lean loop: P V still summed in fp32,
    // 506 instructions per key block on the hot path (the lazy rescale alone: 522), no spills
    case 4: return launch<Traits<E, O, 128, 128, 4, false, 2, false, true, false, true>>(a, stream);
    // tile 3 with the lean loop (Traits::kLeanLoop): 499 instructions per key block on the hot
    // path against tile 3's 566 and the default's 583
    case 5: return launch<Traits<E, O, 128, 128, 4, false, 2, true, false, false, true>>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
