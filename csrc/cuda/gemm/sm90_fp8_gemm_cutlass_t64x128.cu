// sm_90a blockwise FP8 GEMM, configuration t64x128: 64x128x128 CTA tile, 1x1x1 cluster, ping-pong
// warp specialization (each of the 2 consumer WGs owns a whole 64x128 tile; while one runs its
// mainloop the other runs its epilogue), persistent scheduler. For M <= 64 (no wasted half tile)
// and for mid-size problems whose 128x128 tile count leaves most SMs idle. bf16 and fp16 output.
#include "ltx_kernels/gemm/sm90_fp8_gemm_cutlass.cuh"

#if defined(LTX_SM90_GEMM_AVAILABLE)
namespace ltx_kernels {
namespace gemm {
namespace sm90_cutlass {
using T64x128Tile = cute::Shape<cute::_64, cute::_128, cute::_128>;
using T64x128Cluster = cute::Shape<cute::_1, cute::_1, cute::_1>;
using T64x128Bf16 = BlockwiseGemm<T64x128Tile, T64x128Cluster, PingpongSchedule, PingpongEpilogue, cutlass::bfloat16_t, void>;
using T64x128Fp16 = BlockwiseGemm<T64x128Tile, T64x128Cluster, PingpongSchedule, PingpongEpilogue, cutlass::half_t, void>;
}  // namespace sm90_cutlass
}  // namespace gemm
}  // namespace ltx_kernels
#endif

LTX_SM90_GEMM_DEFINE(t64x128, T64x128Bf16, T64x128Fp16)
