// sm_90a blockwise FP8 GEMM, configuration t128x128rs: as t128x128 (128x128x128, 1x1x1 cluster,
// cooperative, persistent) for row-major activation scales sa [M, K/128] (strides (K/128, 1)),
// what quantize_fp8_per_token_group(..., scale_layout="row") writes. The collective cannot read
// K-major scales with TMA, so its producer warp fetches them with predicated 4-byte cp.async (128
// scattered 4-byte loads per K tile, hidden behind the stage pipeline). bf16 output only; the
// M-major layout (LTX-2 / DeepGEMM) remains the fast path.
#include "ltx_kernels/gemm/sm90_fp8_gemm_cutlass.cuh"

LTX_SM90_GEMM_DEFINE(t128x128rs, 128, Coop, void, /*row-major sa=*/true, /*fp16 out=*/false)
