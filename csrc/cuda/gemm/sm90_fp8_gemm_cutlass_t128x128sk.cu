// sm_90a blockwise FP8 GEMM, configuration t128x128sk: as t128x128 (cooperative, 1x1x1 cluster)
// with CUTLASS's stream-K tile scheduler: when the output has far fewer 128x128 tiles than there
// are SMs (decode-like M with N = 2048..8192), the K loop of each tile is split over several SMs
// and the fp32 partial tiles are reduced through the workspace (deterministic reduction), so the
// weight read (the whole cost at small M) is spread over all SMs. bf16 output only.
#include "ltx_kernels/gemm/sm90_fp8_gemm_cutlass.cuh"

LTX_SM90_GEMM_DEFINE(t128x128sk, 128, Coop, cutlass::gemm::StreamKScheduler, /*row-major sa=*/false,
                     /*fp16 out=*/false)
