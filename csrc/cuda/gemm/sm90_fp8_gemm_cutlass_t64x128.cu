// sm_90a blockwise FP8 GEMM, configuration t64x128: 64x128x128 CTA tile, 1x1x1 cluster, ping-pong
// warp specialization (each of the 2 consumer WGs owns a whole 64x128 tile; while one runs its
// mainloop the other runs its epilogue), persistent scheduler. For M <= 64 (no wasted half tile)
// and for mid-size problems whose 128x128 tile count leaves most SMs idle. bf16 and fp16 output.
#include "ltx_kernels/gemm/sm90_fp8_gemm_cutlass.cuh"

LTX_SM90_GEMM_DEFINE(t64x128, 64, Pingpong, void, /*row-major sa=*/false, /*fp16 out=*/true)
