// CPU reference backend for the activation family. Plain C++, no torch: rows
// [row_begin, row_end) of the same row layouts as the CUDA core (activation/activation.h),
// fp32 arithmetic, so the adapter can split rows over threads. T in {float, half_t, bfloat16_t}.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/host_types.h"

namespace ltx_kernels {
namespace cpu {

// out: [rows, cols] stride out_stride; x: [rows, cols] stride x_stride; out may alias x exactly.
template <typename T>
void gelu(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t row_begin,
          int64_t row_end, int64_t cols);
template <typename T>
void gelu_tanh(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t row_begin,
               int64_t row_end, int64_t cols);
template <typename T>
void silu(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t row_begin,
          int64_t row_end, int64_t cols);

// out: [rows, d]; x: [rows, 2d]. act_first: act(x[:, :d]) * x[:, d:]; else x[:, :d] * act(x[:, d:]).
template <typename T>
void gelu_and_mul(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t row_begin,
                  int64_t row_end, int64_t d, bool tanh_approx, bool act_first);
template <typename T>
void silu_and_mul(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t row_begin,
                  int64_t row_end, int64_t d, bool act_first);

// out, x: [rows, heads * head_dim]; gate: [rows, heads] stride gate_stride.
template <typename T>
void gated_attention(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* gate,
                     int64_t gate_stride, int64_t row_begin, int64_t row_end, int64_t heads,
                     int64_t head_dim);

}  // namespace cpu
}  // namespace ltx_kernels
