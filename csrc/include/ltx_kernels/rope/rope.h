// RoPE, with and without a fused RMSNorm in front: framework-agnostic CUDA entry points.
// Layouts: ltx_kernels/common/rope_util.h. fp32 arithmetic inside; T in {float, __half,
// __nv_bfloat16}; the cos/sin tables TT are float or T (diffusers keeps them in fp32).
//
//   rms_norm_rope:       y = x * rsqrt(mean(x^2) + eps) * w over the whole row, then
//                        interleaved RoPE with a full-width table (head_dim = cols):
//                          o[2i]   = y[2i]*cos[2i]   - y[2i+1]*sin[2i]
//                          o[2i+1] = y[2i]*sin[2i+1] + y[2i+1]*cos[2i+1]
//   rms_norm_split_rope: the same norm over the whole row, then per head of width d:
//                          o[j] = y[j]*cos[j] - y[j+d/2]*sin[j],  o[j+d/2] = y[j+d/2]*cos[j] + y[j]*sin[j]
//   apply_rope:          the rotation alone (interleaved or split, any head_dim).
//
// out may alias x exactly (in place): every element is read before it is written, by the
// same thread. weight: [cols] contiguous or nullptr. Returns the launch's error.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/common/rope_util.h"

namespace ltx_kernels {

template <typename T, typename TT>
cudaError_t rms_norm_rope(T* out, int64_t out_stride, const T* x, int64_t x_stride,
                          const T* weight, const TT* cos, RopeTableStrides cos_strides,
                          const TT* sin, RopeTableStrides sin_strides, int64_t batch, int64_t seq,
                          int64_t cols, float eps, cudaStream_t stream);

template <typename T, typename TT>
cudaError_t rms_norm_split_rope(T* out, int64_t out_stride, const T* x, int64_t x_stride,
                                const T* weight, const TT* cos, RopeTableStrides cos_strides,
                                const TT* sin, RopeTableStrides sin_strides, int64_t batch,
                                int64_t seq, int64_t cols, int64_t head_dim, float eps,
                                cudaStream_t stream);

template <typename T, typename TT>
cudaError_t apply_rope(T* out, int64_t out_stride, const T* x, int64_t x_stride, const TT* cos,
                       RopeTableStrides cos_strides, const TT* sin, RopeTableStrides sin_strides,
                       const RopeShape& shape, cudaStream_t stream);

}  // namespace ltx_kernels
