// The GEMM family's CUDA entry (csrc/cuda/gemm/gemm_entry.cu): which kernel can run a problem on
// this device and build, the "auto" fallback chain, and the launch. No torch; the adapter
// (csrc/torch/gemm.cpp) checks arguments, fills one GemmParams, asks plan() once and hands the
// plan to execute(). The "torch" backend (the exact fallback: dequantize, fp32 matmul, written in
// Python) and the "cpu" backend live outside the CUDA core: the entry only names them, and
// execute() answers kTorch where the chain ends in the exact fallback.
//
// Backends of fp8_blockwise_gemm / fp8_rowwise_gemm / bf16_gemm on a CUDA device:
//   kSm90         the persistent warp-specialized TMA + wgmma kernel (sm90_gemm.cuh): FP8 1D2D, FP8
//                 rowwise and bf16, every epilogue and output; compute capability 9.0, sm_90a builds
//   kSkinny       few tokens (M <= 64), FP8, plain epilogue, 16-bit out; cc >= 8.9
//   kSm89         mma.sync FP8 / FP6-weight kernel, plain epilogue, 16-bit out; cc >= 8.9
//   kSm90Cutlass  the CUTLASS-collective FP8 kernel, plain epilogue, 16-bit out
//   kCublasLt     cuBLASLt (csrc/cuda/gemm/cublaslt_gemm.cu): its blockwise FP8 GEMM (1x128 /
//                 128x128 scales; plain epilogue with a bf16 bias at most, bf16 out, M-major
//                 activation scales with stride (1, M), row-major weight scales; compute capability
//                 9.0, CUDA >= 12.9), its rowwise FP8 GEMM (outer-vector scales, fast accumulation;
//                 the same limits, contiguous scales), and for scaled_mm_nvfp4 (Operands::kNvfp4) its block-scaled
//                 FP4 GEMM (compute capability >= 10.0, CUDA >= 12.8)
//   kTorch        the exact fallback (fp32 dequantize + matmul + epilogue in fp32), run by the caller
// "auto" (choose_auto): FP6 weights -> kSm89 if it can, else the FP8 chain on unpacked weights;
// NVFP4 -> kCublasLt if it can, else kTorch; FP8 rowwise -> kCublasLt when heuristics::prefer_cublaslt
// and it can run the call, else kSm90 if it can, else kTorch;
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

// The decision for one call, made once. requested: Backend::kAuto or a forced backend.
//   "auto": choose_auto; when it picks a kernel other than cuBLASLt for a 16-bit bias, what "auto"
//           picks for the same bias in fp32 (the skinny, sm89 and CUTLASS kernels read an fp32 bias
//           only), with the bias widened if that differs; at run time a kernel answering
//           cudaErrorNotSupported falls through to kSm90, then to kSm89 (each if it can take the
//           call and is not the kernel that declined), then to kTorch.
//   forced: that backend, the bias widened for the kernels that read fp32 only; `error` says why it
//           cannot run the call. A forced kernel that declines at run time is an error.
//   kTorch, and every problem with M, N or K of 0 (nothing for a kernel to do): kTorch.
// FP6 weights: kSm89 or kTorch, which for them means "unpack B to e4m3 and plan again".
struct Plan {
  Backend backend = Backend::kTorch;  // what runs first; kTorch: no kernel, the exact fallback
  bool fallback = false;              // "auto": a kernel's cudaErrorNotSupported falls through
  bool widen_bias = false;            // the caller passes its 16-bit bias widened to fp32 (exact)
  size_t workspace = 0;               // device scratch `backend` needs (bytes)
  std::string error;                  // not empty: the forced backend cannot run the call (why)
};
Plan plan(Backend requested, const GemmParams& p, const Device& dev);

// What execute() did: ran the kernel `ran` (error: its launch status; cudaErrorNotSupported from a
// forced backend: it declined), or nothing (ran == kTorch): the caller runs the exact fallback.
struct Outcome {
  Backend ran = Backend::kTorch;
  cudaError_t error = cudaSuccess;
};
// Carries out `plan` on `stream` with p as the plan wants it (bias widened when widen_bias:
// bias_is_out_dtype false, else cudaErrorInvalidValue) and `workspace` of plan.workspace bytes.
Outcome execute(const Plan& plan, const GemmParams& p, const Device& dev, void* workspace, cudaStream_t stream);

}  // namespace gemm
}  // namespace ltx_kernels
