// CPU reference backend for the fused norms (semantics in ltx_kernels/norm/fused_norm.h).
// Plain C++, no torch: rows [row_begin, row_end) of the same layouts as the CUDA core, fp32
// arithmetic, so the adapter can split rows over threads. T in {float, half_t, bfloat16_t}.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/fused_norm_util.h"
#include "ltx_kernels/common/host_types.h"

namespace ltx_kernels {
namespace cpu {

template <typename T>
void add_rms_norm(T* out, int64_t out_stride, T* residual_out, int64_t residual_out_stride,
                  const T* x, int64_t x_stride, const T* residual, int64_t residual_stride,
                  const T* weight, int64_t row_begin, int64_t row_end, int64_t cols, float eps);

template <typename T>
void layer_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* weight,
                const T* bias, int64_t row_begin, int64_t row_end, int64_t cols, float eps);

template <typename T>
void adaln_rms_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride, ModTable<T> scale,
                    ModTable<T> shift, const T* weight, int64_t row_begin, int64_t row_end,
                    int64_t cols, float eps);

template <typename T>
void adaln_layer_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride,
                      ModTable<T> scale, ModTable<T> shift, const T* weight, const T* bias,
                      int64_t row_begin, int64_t row_end, int64_t cols, float eps);

template <typename T>
void gated_residual_adaln_rms_norm(T* out, int64_t out_stride, T* h_out, int64_t h_out_stride,
                                   const T* h, int64_t h_stride, const T* y, int64_t y_stride,
                                   ModTable<T> gate, ModTable<T> scale, ModTable<T> shift,
                                   const T* weight, int64_t row_begin, int64_t row_end,
                                   int64_t cols, float eps);

}  // namespace cpu
}  // namespace ltx_kernels
