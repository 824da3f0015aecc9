// Configurations of the sm_90a FP8 attention kernel (128-key K factors, bf16 output) that are
// under study, compiled only with -DLTX_KERNELS_TUNING=ON and selected by AttentionParams::tile
// (1..4 at either head dim; the developer setting attention_tile, docs/knobs.md). Each is a
// default of attention/heuristics.h (Fp8D64, Fp8D128) with hot-path options that no default uses:
//   1  row sums from the P V wgmma (kRowSumInPv): no FADD per score;
//   2  that, with one in 8 exponentials on the FMA pipe (kExp2PolyEvery);
//   3  that, with one in 16 (head dim 64) or one in 4 (head dim 128);
//   4  configuration 2 with O rescaled only when a row of the warp raised its maximum (kSkipRescale).
// tools/tune/attention_tiles.py times them beside the defaults and cuDNN; one that wins at every
// shape of its head dim becomes that head dim's default, the others are deleted.
#include "sm90_attention_launch.cuh"

#if defined(LTX_KERNELS_TUNING)
namespace ltx_kernels {
namespace attention_sm90 {
namespace {

template <class Base>
struct RowSumPv : Base {
  static constexpr bool kRowSumInPv = true;
};
template <class Base, int kEvery>
struct Exp2Poly : RowSumPv<Base> {
  static constexpr int kExp2PolyEvery = kEvery;
};
template <class Base>
struct Exp2PolySkip : Exp2Poly<Base, 8> {
  static constexpr bool kSkipRescale = true;
};

template <class Base, int kEvery3>
cudaError_t tile(const AttentionParams& a, cudaStream_t stream) {
  using E = cutlass::float_e4m3_t;
  using O = cutlass::bfloat16_t;
  switch (a.tile) {
    case 1: return launch<Traits<E, O, RowSumPv<Base>>>(a, stream);
    case 2: return launch<Traits<E, O, Exp2Poly<Base, 8>>>(a, stream);
    case 3: return launch<Traits<E, O, Exp2Poly<Base, kEvery3>>>(a, stream);
    case 4: return launch<Traits<E, O, Exp2PolySkip<Base>>>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t forward_e4m3_tile(const AttentionParams& a, cudaStream_t stream) {
  if (a.dtype != AttnDtype::kE4M3 || a.out_dtype != AttnDtype::kBF16 || a.k_block == 1) return cudaErrorInvalidValue;
  return a.head_dim == 64 ? tile<Fp8D64, 16>(a, stream) : tile<Fp8D128, 4>(a, stream);
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
#endif  // LTX_KERNELS_TUNING
