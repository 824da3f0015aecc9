// sm_90a rowwise-scaled FP8 GEMM (per-token activation scales x per-output-channel weight scales):
// the compiled tile configurations (heuristics::kFp8RowwiseTiles). The bf16 recipe's mainloop on
// e4m3 operands (wgmma k32, fp32 accumulation across the whole K, no promotion), the two scales
// applied in the epilogue. Kernel: ltx_kernels/gemm/sm90_gemm.cuh; host side: sm90_gemm_host.cuh.
#include "sm90_gemm.h"
#include "sm90_gemm_host.cuh"

namespace ltx_kernels {
namespace gemm {
namespace sm90 {

cudaError_t run_fp8_rowwise(const GemmParams& g, const TileConfig& cfg, int num_sms, cudaStream_t stream) {
#define LTX_FP8_ROWWISE_TILE(BM, BN) \
  if (cfg.bm == BM && cfg.bn == BN)  \
    return host::launch_recipe<Operands::kFp8Rowwise, BM, BN>(g, cfg, num_sms, stream);
  LTX_FP8_ROWWISE_TILE(128, 128)
  LTX_FP8_ROWWISE_TILE(128, 192)
  LTX_FP8_ROWWISE_TILE(128, 256)
  LTX_FP8_ROWWISE_TILE(256, 128)
  LTX_FP8_ROWWISE_TILE(64, 256)
#undef LTX_FP8_ROWWISE_TILE
  return cudaErrorNotSupported;
}

}  // namespace sm90
}  // namespace gemm
}  // namespace ltx_kernels
