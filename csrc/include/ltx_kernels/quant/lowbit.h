// The low-bit CUDA routines on raw pointers under the family's entry points (cuda/ops.h, which
// the adapters call).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/cuda/ops.h"

namespace ltx_kernels {

// packed [groups * 3] -> out [groups * 4] E4M3 bytes (zeros in bits 6..5).
cudaError_t fp6_unpack(uint8_t* out, const uint8_t* packed, int64_t groups, cudaStream_t stream);
// T in {float, __half, __nv_bfloat16}; layouts as Nvfp4Params.
template <typename T>
cudaError_t dequantize_nvfp4(T* out, const uint8_t* packed, const uint8_t* block_scales,
                             const float* per_tensor_scale, int64_t rows, int64_t cols,
                             bool hi_first, cudaStream_t stream);

}  // namespace ltx_kernels
