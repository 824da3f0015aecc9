// CPU reference backend for the RoPE family. Plain C++, no torch: rows [row_begin, row_end)
// of the layouts in common/rope_util.h (the CUDA core's), fp32 arithmetic, so the adapter can
// split rows over threads. T in {float, half_t, bfloat16_t}; the tables TT are float or T.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/host_types.h"
#include "ltx_kernels/common/rope_util.h"

namespace ltx_kernels {
namespace cpu {

// The whole family in one routine: with `norm`, y = x * rsqrt(mean(x^2) + eps) * weight over
// the whole row first (weight [cols] or nullptr); then the rotation shape.split selects.
// out may alias x exactly (each row is read completely before it is written).
template <typename T, typename TT>
void rope_rows(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* weight,
               bool norm, float eps, const TT* cos, RopeTableStrides cos_strides, const TT* sin,
               RopeTableStrides sin_strides, const RopeShape& shape, int64_t row_begin,
               int64_t row_end);

// One row's fp32 result, not rounded to T (the FP8-output ops quantize it): row r of x (token
// (r / seq, r % seq)) into out[cols]; `scratch` holds cols floats. rope_rows is this, rounded.
template <typename T, typename TT>
void rope_row_f32(float* out, float* scratch, const T* xr, int64_t r, const T* weight, bool norm,
                  float eps, const TT* cos, RopeTableStrides cos_strides, const TT* sin,
                  RopeTableStrides sin_strides, const RopeShape& shape);

}  // namespace cpu
}  // namespace ltx_kernels
