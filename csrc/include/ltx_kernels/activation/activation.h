// Activation family, framework-agnostic CUDA entry points. fp32 arithmetic inside;
// T in {float, __half, __nv_bfloat16}. Every op takes rows of a row layout (any leading shape
// collapsed to `rows`; innermost stride 1; row r at base + r * stride elements) and picks a
// 16-byte vector path when pointers, strides and widths allow it, a scalar path otherwise.
//
//   gelu(x)      = 0.5 x (1 + erf(x / sqrt(2)))
//   gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//   silu(x)      = x sigmoid(x)
//   *_and_mul(x) = act(x[:, :d]) * x[:, d:]   (act_first, vLLM / kernels-community)
//                = x[:, :d] * act(x[:, d:])   (!act_first, diffusers GEGLU: value, gate = chunk)
//   gated_attention(x, g)[r, h*D + j] = x[r, h*D + j] * 2 * sigmoid(g[r, h])   (LTX-2)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ltx_kernels {

// Elementwise. out: [rows, cols] row stride out_stride; x: [rows, cols] row stride x_stride.
// out may alias x exactly (in place). When both are dense (stride == cols, or one row) the
// rows*cols elements are processed as one flat array.
template <typename T>
cudaError_t gelu(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t rows,
                 int64_t cols, cudaStream_t stream);
template <typename T>
cudaError_t gelu_tanh(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t rows,
                      int64_t cols, cudaStream_t stream);
template <typename T>
cudaError_t silu(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t rows,
                 int64_t cols, cudaStream_t stream);

// Gated. out: [rows, d] row stride out_stride; x: [rows, 2d] row stride x_stride (no overlap
// with out). tanh_approx selects gelu_tanh instead of the exact gelu.
template <typename T>
cudaError_t gelu_and_mul(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t rows,
                         int64_t d, bool tanh_approx, bool act_first, cudaStream_t stream);
template <typename T>
cudaError_t silu_and_mul(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t rows,
                         int64_t d, bool act_first, cudaStream_t stream);

// Per-head gate. out, x: [rows, heads * head_dim] with their row strides; gate: [rows, heads]
// row stride gate_stride (innermost stride 1). out may alias x exactly.
template <typename T>
cudaError_t gated_attention(T* out, int64_t out_stride, const T* x, int64_t x_stride,
                            const T* gate, int64_t gate_stride, int64_t rows, int64_t heads,
                            int64_t head_dim, cudaStream_t stream);

}  // namespace ltx_kernels
