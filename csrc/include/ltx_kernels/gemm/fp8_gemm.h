// The FP8 GEMM kernels that take the plain epilogue only (bias, 16-bit output): the few-token
// kernel, the mma.sync sm_89 kernel (FP8 and FP6 weights) and the CUTLASS-collective sm_90a kernel
// kept for comparison. Blockwise FP8 semantics: docs/semantics.md, "FP8 block scaling". No torch.
// The GEMM entry (ltx_kernels/gemm/gemm.h) calls these; every entry point takes raw pointers + a
// stream and returns a cudaError_t; cudaErrorNotSupported means "this path does not take these
// arguments" (the caller falls back), any other error is a real failure.
//
//   D[m, n] = sum_kb (A[m, kb*128 : kb*128+128] . B[n, kb*128 : kb*128+128]) * sa(m, kb) * sb(n/128, kb)
//             + bias[n]
//
// A: e4m3 [M, K] (element (m, k) at a[m*lda + k]), B: e4m3 [N, K] (b[n*ldb + k]), K % 128 == 0.
// sa: fp32 per-token-group dequant scales, logical [M, K/128], element (m, kb) at
//     a_scales[m*sa_stride_m + kb*sa_stride_k]: row-major is (K/128, 1); DeepGEMM's M-major layout
//     with M padded to 4 is (1, M_pad).
// sb: fp32 per-128x128-block scales, logical [ceil(N/128), K/128], element (nb, kb) at
//     b_scales[nb*sb_stride_n + kb*sb_stride_k].
// bias: fp32 [N] or nullptr. D: bf16 or fp16 [M, N] with row stride ldd.
// Accumulation is fp32 per 128-wide K block, promoted (scaled and added) into an fp32 total.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

namespace ltx_kernels {
namespace gemm {

enum class GemmOut : int { kBF16 = 0, kFP16 = 1 };

struct Fp8BlockwiseGemmArgs {
  int64_t M = 0, N = 0, K = 0;
  const uint8_t* a = nullptr;  // e4m3 bytes
  int64_t lda = 0;
  const float* a_scales = nullptr;
  int64_t sa_stride_m = 0, sa_stride_k = 0;
  const uint8_t* b = nullptr;  // e4m3 bytes
  int64_t ldb = 0;
  const float* b_scales = nullptr;
  int64_t sb_stride_n = 0, sb_stride_k = 0;
  const float* bias = nullptr;  // may be null
  void* d = nullptr;
  int64_t ldd = 0;
  GemmOut out = GemmOut::kBF16;
};

// ---- sm_90a, CUTLASS collective (backend "sm90_cutlass"; csrc/cuda/gemm/sm90_fp8_gemm_cutlass.cu, compiled
// only for sm_90a). Called only when the build defines LTX_KERNELS_HAS_SM90 (resp.
// LTX_KERNELS_HAS_SM89 below) and the device matches.
// True when the kernel takes these arguments (alignment, layouts); `device_cc` is major*10+minor
// of the device that will run it.
bool fp8_blockwise_gemm_sm90_supported(const Fp8BlockwiseGemmArgs& args, int device_cc);
// Bytes of device scratch the call needs (0 if none); the caller allocates it.
size_t fp8_blockwise_gemm_sm90_workspace(const Fp8BlockwiseGemmArgs& args, int num_sms);
cudaError_t fp8_blockwise_gemm_sm90(const Fp8BlockwiseGemmArgs& args, void* workspace,
                                    size_t workspace_bytes, int num_sms, cudaStream_t stream);

// ---- sm_89+ (Ada, and Hopper/Blackwell as a fallback): mma.sync e4m3 kernel
// (csrc/cuda/gemm/sm89_fp8_gemm.cu, compiled for every target >= 8.9).
bool fp8_blockwise_gemm_sm89_supported(const Fp8BlockwiseGemmArgs& args, int device_cc);
cudaError_t fp8_blockwise_gemm_sm89(const Fp8BlockwiseGemmArgs& args, cudaStream_t stream);

// ---- few tokens (1 <= M <= 64), sm_89+: mma.sync "swap AB" kernel that streams the weights
// from HBM into registers, with split-K across CTAs when the row tiles alone leave SMs idle
// (csrc/cuda/gemm/sm89_fp8_gemm_skinny.cu, compiled for every target >= 8.9). Any sa / sb strides.
bool fp8_blockwise_gemm_skinny_supported(const Fp8BlockwiseGemmArgs& args, int device_cc);
// Bytes of device scratch the call needs (0 if none); the caller allocates it.
size_t fp8_blockwise_gemm_skinny_workspace(const Fp8BlockwiseGemmArgs& args, int num_sms);
cudaError_t fp8_blockwise_gemm_skinny(const Fp8BlockwiseGemmArgs& args, void* workspace,
                                      size_t workspace_bytes, int num_sms, cudaStream_t stream);


// ---- FP6 weights: B given as LTX-2's packed FP6 ([N, 3K/4] bytes, row
// stride ldb in bytes), unpacked to e4m3 in the kernel's load path. Same scales as above.
bool fp6_blockwise_gemm_sm89_supported(const Fp8BlockwiseGemmArgs& args, int device_cc);
cudaError_t fp6_blockwise_gemm_sm89(const Fp8BlockwiseGemmArgs& args, cudaStream_t stream);

}  // namespace gemm
}  // namespace ltx_kernels
