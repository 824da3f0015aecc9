// sm_90a blockwise FP8 GEMM, configuration t128x128sk: as t128x128 (cooperative, 1x1x1 cluster)
// with CUTLASS's stream-K tile scheduler: when the output has far fewer 128x128 tiles than there
// are SMs (decode-like M with N = 2048..8192), the K loop of each tile is split over several SMs
// and the fp32 partial tiles are reduced through the workspace (deterministic reduction), so the
// weight read (the whole cost at small M) is spread over all SMs. bf16 output only.
#include "ltx_kernels/gemm/sm90_fp8_gemm_cutlass.cuh"

#if defined(LTX_SM90_GEMM_AVAILABLE)
namespace ltx_kernels {
namespace gemm {
namespace sm90_cutlass {
using T128x128SKTile = cute::Shape<cute::_128, cute::_128, cute::_128>;
using T128x128SKCluster = cute::Shape<cute::_1, cute::_1, cute::_1>;
using T128x128SKBf16 = BlockwiseGemm<T128x128SKTile, T128x128SKCluster, CoopSchedule, CoopEpilogue, cutlass::bfloat16_t,
                                     cutlass::gemm::StreamKScheduler>;
}  // namespace sm90_cutlass
}  // namespace gemm
}  // namespace ltx_kernels
#endif

LTX_SM90_GEMM_DEFINE(t128x128sk, T128x128SKBf16, void)
