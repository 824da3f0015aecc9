// sm_90a blockwise-scaled FP8 GEMM ("1D2D" recipe): the compiled tile configurations
// (heuristics::kFp8Tiles). Kernel: ltx_kernels/gemm/sm90_gemm.cuh; host side: sm90_gemm_host.cuh.
#include "sm90_gemm.h"
#include "sm90_gemm_host.cuh"

namespace ltx_kernels {
namespace gemm {
namespace sm90 {

cudaError_t run_fp8_1d2d(const GemmParams& g, const TileConfig& cfg, int num_sms, cudaStream_t stream) {
#define LTX_FP8_TILE(BM, BN) \
  if (cfg.bm == BM && cfg.bn == BN) return host::launch<true, BM, BN>(g, cfg, num_sms, stream);
  LTX_FP8_TILE(128, 128)
  LTX_FP8_TILE(128, 144)
  LTX_FP8_TILE(128, 160)
  LTX_FP8_TILE(128, 192)
  LTX_FP8_TILE(256, 128)
  LTX_FP8_TILE(64, 128)
  LTX_FP8_TILE(64, 256)
#undef LTX_FP8_TILE
  return cudaErrorNotSupported;
}

}  // namespace sm90
}  // namespace gemm
}  // namespace ltx_kernels
