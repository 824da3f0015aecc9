// sm_90a bf16 x bf16 GEMM (fp32 accumulation): the compiled tile configurations
// (heuristics::kBf16Tiles). Same kernel skeleton as the FP8 one (ltx_kernels/gemm/sm90_gemm.cuh)
// without the per-K-block promotion: the wgmma accumulates across the whole K range.
#include "sm90_gemm.h"
#include "sm90_gemm_host.cuh"

namespace ltx_kernels {
namespace gemm {
namespace sm90 {

cudaError_t run_bf16(const GemmParams& g, const TileConfig& cfg, int num_sms, cudaStream_t stream) {
#define LTX_BF16_TILE(BM, BN) \
  if (cfg.bm == BM && cfg.bn == BN) return host::launch<false, BM, BN>(g, cfg, num_sms, stream);
  LTX_BF16_TILE(128, 128)
  LTX_BF16_TILE(128, 192)
  LTX_BF16_TILE(128, 256)
  LTX_BF16_TILE(256, 128)
  LTX_BF16_TILE(64, 256)
#undef LTX_BF16_TILE
  return cudaErrorNotSupported;
}

}  // namespace sm90
}  // namespace gemm
}  // namespace ltx_kernels
