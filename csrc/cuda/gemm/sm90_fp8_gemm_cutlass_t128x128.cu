// sm_90a blockwise FP8 GEMM, configuration t128x128: 128x128x128 CTA tile, 1x1x1 cluster,
// cooperative warp specialization (1 producer WG, 2 consumer WGs of 64x128 each), persistent
// scheduler. The large-M workhorse; bf16 and fp16 output. See sm90_fp8_gemm_cutlass.cu for the heuristic.
#include "ltx_kernels/gemm/sm90_fp8_gemm_cutlass.cuh"

#if defined(LTX_SM90_GEMM_AVAILABLE)
namespace ltx_kernels {
namespace gemm {
namespace sm90_cutlass {
using T128x128Tile = cute::Shape<cute::_128, cute::_128, cute::_128>;
using T128x128Cluster = cute::Shape<cute::_1, cute::_1, cute::_1>;
using T128x128Bf16 = BlockwiseGemm<T128x128Tile, T128x128Cluster, CoopSchedule, CoopEpilogue, cutlass::bfloat16_t, void>;
using T128x128Fp16 = BlockwiseGemm<T128x128Tile, T128x128Cluster, CoopSchedule, CoopEpilogue, cutlass::half_t, void>;
}  // namespace sm90_cutlass
}  // namespace gemm
}  // namespace ltx_kernels
#endif

LTX_SM90_GEMM_DEFINE(t128x128, T128x128Bf16, T128x128Fp16)
