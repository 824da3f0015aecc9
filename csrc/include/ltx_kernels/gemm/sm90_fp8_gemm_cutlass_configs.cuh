// sm_90a blockwise FP8 GEMM: the list of compiled tile configurations and their entry points.
// No CUTLASS here (the dispatcher in csrc/cuda/gemm/sm90_fp8_gemm_cutlass.cu includes only this header, so
// it compiles in seconds); each configuration lives in its own csrc/cuda/gemm/sm90_fp8_gemm_cutlass_<cfg>.cu
// built from the template in sm90_fp8_gemm_cutlass.cuh.
#pragma once

#include <cstddef>
#include <cuda_runtime.h>

#include "ltx_kernels/gemm/fp8_gemm.h"

namespace ltx_kernels {
namespace gemm {
namespace sm90_cutlass {

// Compiled kernels (an instantiation = tile x cluster x schedule x out dtype; kernels other than
// kT128x128RS take M-major sa only):
//   kT128x128      128x128x128 CTA tile, 1x1 cluster, cooperative (2 consumer WGs of 64 rows),
//                  persistent scheduler.                                        bf16, fp16
//   kT64x128       64x128x128 CTA tile, 1x1 cluster, ping-pong (each consumer WG owns a whole
//                  64x128 tile, the two alternate mainloop / epilogue).          bf16, fp16
//   kT128x128RS    as kT128x128 for row-major (K-major) activation scales sa, read with
//                  cp.async instead of TMA.                                     bf16 only
//   kT128x128SK    as kT128x128 with the stream-K scheduler (work split along K across SMs,
//                  partial tiles reduced through the workspace) for few-tile problems. bf16 only
// Runtime variants of the same kernels (no extra instantiation): raster order / swizzle of the
// persistent scheduler, see Sm90RunOptions.
enum class Sm90Kernel : int { kT128x128 = 0, kT64x128 = 1, kT128x128RS = 2, kT128x128SK = 3 };

// Raster order of the persistent tile scheduler: 0 = CUTLASS heuristic, 1 = along M (consecutive
// CTAs walk down M, sharing a B column block in L2), 2 = along N.
struct Sm90RunOptions {
  int raster = 0;
  int swizzle = 1;  // max_swizzle_size: 1, 2, 4 or 8
};

// Every entry point answers cudaErrorNotSupported when its kernel does not exist for this output
// dtype (or the build has no sm_90a CUTLASS support), or CUTLASS's can_implement refuses.
// *_workspace returns 0 when the kernel needs none (or does not exist).
#define LTX_SM90_GEMM_DECLARE(NAME)                                                              \
  size_t NAME##_workspace(const Fp8BlockwiseGemmArgs& args, int num_sms, const Sm90RunOptions& o); \
  cudaError_t NAME##_run(const Fp8BlockwiseGemmArgs& args, void* workspace, size_t workspace_bytes, \
                         int num_sms, const Sm90RunOptions& o, cudaStream_t stream);

LTX_SM90_GEMM_DECLARE(t128x128)     // sm90_fp8_gemm_cutlass_t128x128.cu
LTX_SM90_GEMM_DECLARE(t64x128)      // sm90_fp8_gemm_cutlass_t64x128.cu
LTX_SM90_GEMM_DECLARE(t128x128rs)   // sm90_fp8_gemm_cutlass_t128x128rs.cu
LTX_SM90_GEMM_DECLARE(t128x128sk)   // sm90_fp8_gemm_cutlass_t128x128sk.cu

#undef LTX_SM90_GEMM_DECLARE

}  // namespace sm90_cutlass
}  // namespace gemm
}  // namespace ltx_kernels
