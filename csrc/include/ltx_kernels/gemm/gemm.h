// The GEMM family's CUDA entry (csrc/cuda/gemm/gemm_entry.cu): which kernel can run a problem on
// this device and build, the "auto" fallback chain, and the launch. No torch; the adapter
// (csrc/torch/gemm.cpp) checks arguments, fills one GemmParams and calls these. The "torch"
// (dequantize + fp32 matmul) and "cpu" backends live outside the CUDA core: the entry only names
// them.
//
// Backends of fp8_blockwise_gemm / bf16_gemm on a CUDA device:
//   kSm90         the persistent warp-specialized TMA + wgmma kernel (sm90_gemm.cuh): FP8 1D2D and
//                 bf16, every epilogue and output; compute capability 9.0, sm_90a builds
//   kSkinny       few tokens (M <= 64), FP8, plain epilogue, 16-bit out; cc >= 8.9
//   kSm89         mma.sync FP8 / FP6-weight kernel, plain epilogue, 16-bit out; cc >= 8.9
//   kSm90Cutlass  the CUTLASS-collective FP8 kernel, plain epilogue, 16-bit out
//   kCublasLt     cuBLASLt (csrc/cuda/gemm/cublaslt_gemm.cu): its blockwise FP8 GEMM (1x128 /
//                 128x128 scales; plain epilogue with a bf16 bias at most, bf16 out, M-major
//                 activation scales with stride (1, M), row-major weight scales; compute capability
//                 9.0, CUDA >= 12.9), and for scaled_mm_nvfp4 (Operands::kNvfp4) its block-scaled
//                 FP4 GEMM (compute capability >= 10.0, CUDA >= 12.8)
//   kTorch        the adapter's exact fallback (fp32 dequantize + matmul + epilogue in fp32)
// "auto" (choose_auto): FP6 weights -> kSm89 if it can, else the FP8 chain on unpacked weights;
// NVFP4 -> kCublasLt if it can, else kTorch;
// cc 9.0 with the sm_90a kernels -> kSkinny when heuristics::prefer_skinny, else kCublasLt when
// heuristics::prefer_cublaslt and it can run the call, else kSm90Cutlass (heuristics::prefer_cutlass),
// else kSm90;
// other cc >= 8.9 -> kSkinny (M <= 64) or kSm89 when the call has the plain epilogue;
// else kTorch.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "ltx_kernels/gemm/backend.h"
#include "ltx_kernels/gemm/gemm_params.h"

namespace ltx_kernels {
namespace gemm {

struct Device {
  int index = 0;
  int cc = 0;  // major * 10 + minor
  int sms = 0;
  int smem_optin = 0;  // max dynamic shared memory per block
};
Device query_device(int index);

// "" when `be` can run `p` on `dev` in this build, else why not (a sentence naming the rule; for a
// missing architecture: "no kernel compiled for sm_XY ...").
std::string why_not(Backend be, const GemmParams& p, const Device& dev);

// The backend "auto" runs (kTorch when no kernel can).
Backend choose_auto(const GemmParams& p, const Device& dev);

// The tile configuration kSm90 runs for p: heuristics::choose_tile, overridden field by field by
// p.config (LTX_KERNELS_GEMM_CONFIG). bm == 0 when no compiled configuration can run p.
TileConfig sm90_config(const GemmParams& p, const Device& dev);

// Device scratch `be` needs for p (bytes; the caller allocates it on the launch stream).
size_t workspace_bytes(Backend be, const GemmParams& p, const Device& dev);

// Launch on `stream`. cudaErrorNotSupported: the kernel declined these arguments after all ("auto"
// falls through to the next backend); anything else but cudaSuccess is a failure.
cudaError_t run(Backend be, const GemmParams& p, const Device& dev, void* workspace, size_t workspace_bytes,
                cudaStream_t stream);

}  // namespace gemm
}  // namespace ltx_kernels
