// RMSNorm, framework-agnostic CUDA entry point.
//   y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w      (w omitted when weight == nullptr)
// fp32 arithmetic inside; T in {float, __half, __nv_bfloat16}.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ltx_kernels {

// out: [rows, cols] with row stride out_stride; x: [rows, cols] with row stride x_stride;
// weight: [cols] contiguous or nullptr. out may alias x exactly (in place). Picks the
// 16-byte vector path when every pointer, stride and cols allow it, a scalar path otherwise.
template <typename T>
cudaError_t rms_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* weight,
                     int64_t rows, int64_t cols, float eps, cudaStream_t stream);

}  // namespace ltx_kernels
