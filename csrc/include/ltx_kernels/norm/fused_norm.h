// Fused norms, framework-agnostic CUDA entry points. fp32 arithmetic inside; T in {float,
// __half, __nv_bfloat16}; every [rows, cols] array has innermost stride 1 and the given row
// stride (elements). Weight / bias: [cols] contiguous or nullptr. Each call reads every input
// once and writes every output once (see fused_norm.cuh for the kernels and byte counts).
//
//   add_rms_norm:   residual_out = round_T(x + residual)
//                   out          = rms_norm(residual_out) * w      (from the ROUNDED residual_out)
//   layer_norm:     out = (x - mean) * rsqrt(var + eps) * w + b    (biased var, two-pass)
//   adaln_rms_norm: out = rms_norm(x) * w * (1 + scale) + shift
//   adaln_layer_norm: out = layer_norm(x, w, b) * (1 + scale) + shift
//   gated_residual_adaln_rms_norm:
//                   h_out = round_T(h + y * gate)                   (fp32 product, fp32 sum, one rounding)
//                   out   = rms_norm(h_out) * w * (1 + scale) + shift (from the ROUNDED h_out)
//
// Aliasing: an output may be exactly one of the row inputs (same pointer and stride: in
// place, e.g. residual_out == residual, h_out == h, out == x); the two outputs must not overlap.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/common/fused_norm_util.h"

namespace ltx_kernels {

template <typename T>
cudaError_t add_rms_norm(T* out, int64_t out_stride, T* residual_out, int64_t residual_out_stride,
                         const T* x, int64_t x_stride, const T* residual, int64_t residual_stride,
                         const T* weight, int64_t rows, int64_t cols, float eps,
                         cudaStream_t stream);

template <typename T>
cudaError_t layer_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* weight,
                       const T* bias, int64_t rows, int64_t cols, float eps, cudaStream_t stream);

template <typename T>
cudaError_t adaln_rms_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride,
                           ModTable<T> scale, ModTable<T> shift, const T* weight, int64_t rows,
                           int64_t cols, float eps, cudaStream_t stream);

template <typename T>
cudaError_t adaln_layer_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride,
                             ModTable<T> scale, ModTable<T> shift, const T* weight, const T* bias,
                             int64_t rows, int64_t cols, float eps, cudaStream_t stream);

template <typename T>
cudaError_t gated_residual_adaln_rms_norm(T* out, int64_t out_stride, T* h_out,
                                          int64_t h_out_stride, const T* h, int64_t h_stride,
                                          const T* y, int64_t y_stride, ModTable<T> gate,
                                          ModTable<T> scale, ModTable<T> shift, const T* weight,
                                          int64_t rows, int64_t cols, float eps,
                                          cudaStream_t stream);

}  // namespace ltx_kernels
