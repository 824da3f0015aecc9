// sm_90a blockwise FP8 GEMM, configuration t128x128: 128x128x128 CTA tile, 1x1x1 cluster,
// cooperative warp specialization (1 producer WG, 2 consumer WGs of 64x128 each), persistent
// scheduler. The large-M workhorse; bf16 and fp16 output. See sm90_fp8_gemm_cutlass.cu for the heuristic.
#include "ltx_kernels/gemm/sm90_fp8_gemm_cutlass.cuh"

LTX_SM90_GEMM_DEFINE(t128x128, 128, Coop, void, /*row-major sa=*/false, /*fp16 out=*/true)
