// The cuBLASLt backend of the GEMM entry (csrc/cuda/gemm/cublaslt_gemm.cu): three operand recipes
// behind GemmParams, run by raw cuBLASLt. No torch.
//   kFp8Blockwise  cuBLASLt's blockwise FP8 GEMM: 1x128 activation scales (VEC128_32F), 128x128
//                  weight scales (BLK128x128_32F), bf16 out, optional bf16 bias (CUDA >= 12.9);
//   kFp8Rowwise    its outer-vector-scaled FP8 GEMM: one fp32 scale per row of a and of b, fast
//                  accumulation (no promotion), bf16 out, optional bf16 bias (CUDA >= 12.9);
//   kNvfp4         its block-scaled FP4 GEMM: E2M1 operands with E4M3 scales per 16 elements
//                  (VEC16_UE4M3), alpha on the device, fp32 bias rounded to the out dtype
//                  (CUDA >= 12.8, compute capability >= 10.0).
// Both as the column-major product D^T [N, M] = B [N, K] . A^T, i.e. cuBLAS's "A" is our b
// (transposed) and its "B" our a. gemm::why_not(kCublasLt) (gemm_entry.cu) has checked the call
// (layouts, alignment, device); these trust it.
//
// State: one cublasLtHandle per device, and per problem (device, recipe, M, N, K, row strides,
// output and bias types, pointer alignments) the matmul and layout descriptors and the algorithm
// cuBLASLt's heuristic picks for them, in a cache of at most kCacheEntries problems (the least
// recently used goes first). Handles and descriptors are owned by RAII wrappers; the cache itself
// lives for the whole process.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "ltx_kernels/gemm/gemm.h"

namespace ltx_kernels {
namespace gemm {
namespace cublaslt {

constexpr int kCacheEntries = 64;

// Device scratch the call needs (bytes): the algorithm's workspace, and for kNvfp4 the operands
// with their nibbles swapped (hi_first), the bias in the out dtype and a device zero for beta.
// 0 when cuBLASLt has no algorithm for the problem (run then answers cudaErrorNotSupported).
size_t workspace_bytes(const GemmParams& p, const Device& dev);

// Launches the GEMM on `stream` with `workspace` of at least workspace_bytes(p, dev).
// cudaErrorNotSupported: cuBLASLt has no algorithm for these arguments, or this build's CUDA has
// no such recipe; other errors map cuBLASLt's status (allocation, invalid value, execution).
cudaError_t run(const GemmParams& p, const Device& dev, void* workspace, size_t workspace_bytes,
                cudaStream_t stream);

}  // namespace cublaslt
}  // namespace gemm
}  // namespace ltx_kernels
