// sm_90a blockwise FP8 GEMM, configuration t128x128rs: as t128x128 (128x128x128, 1x1x1 cluster,
// cooperative, persistent) for row-major activation scales sa [M, K/128] (strides (K/128, 1)),
// what quantize_fp8_per_token_group(..., scale_layout="row") writes. The collective cannot read
// K-major scales with TMA, so its producer warp fetches them with predicated 4-byte cp.async (128
// scattered 4-byte loads per K tile, hidden behind the stage pipeline). bf16 output only; the
// M-major layout (LTX-2 / DeepGEMM) remains the fast path.
#include "ltx_kernels/gemm/sm90_fp8_gemm_cutlass.cuh"

#if defined(LTX_SM90_GEMM_AVAILABLE)
namespace ltx_kernels {
namespace gemm {
namespace sm90_cutlass {
using T128x128RSTile = cute::Shape<cute::_128, cute::_128, cute::_128>;
using T128x128RSCluster = cute::Shape<cute::_1, cute::_1, cute::_1>;
using T128x128RSBf16 = BlockwiseGemm<T128x128RSTile, T128x128RSCluster, CoopSchedule, CoopEpilogue, cutlass::bfloat16_t,
                                     void, /*kRowMajorSA=*/true>;
}  // namespace sm90_cutlass
}  // namespace gemm
}  // namespace ltx_kernels
#endif

LTX_SM90_GEMM_DEFINE(t128x128rs, T128x128RSBf16, void)
