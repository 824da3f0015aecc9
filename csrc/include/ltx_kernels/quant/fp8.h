// FP8 quantization (DeepGEMM "1D2D" recipe), framework-agnostic CUDA entry points.
// Rule (common/fp8_util.h): s = amax / fmax (fp32 dequant scale, amax ignores NaN; fmax 448
// for E4M3, 57344 for E5M2), q = encode(x / s) with a true fp32 division, q = encode(x) when
// s == 0 (exact zeros, never NaN/inf). Dequantization: y = out_dtype(decode(q) * s) (fp32
// product, one rounding to the output type). Codes are raw bytes (uint8_t).
// T in {float, __half, __nv_bfloat16}; all pointers device pointers; strides in elements.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/common/fp8_util.h"

namespace ltx_kernels {

// Per-token groups: x [rows, cols] (row stride x_stride), groups of `group` consecutive
// columns (cols % group == 0). q [rows, cols] (row stride q_stride). scales: logical
// [rows, cols / group] at scales[r * s_row + g * s_col] ("row": (G, 1); "mn_major": (1, M_pad)).
template <typename T>
cudaError_t quantize_fp8_per_token_group(uint8_t* q, int64_t q_stride, float* scales, int64_t s_row,
                                         int64_t s_col, const T* x, int64_t x_stride, int64_t rows,
                                         int64_t cols, int64_t group, Fp8Format fmt,
                                         cudaStream_t stream);

// Block scaling: w [rows, cols]; one scale per (block_n x block_k) tile, edge tiles cover what
// exists; scales logical [ceil(rows / block_n), ceil(cols / block_k)] at b * s_row + c * s_col.
template <typename T>
cudaError_t quantize_fp8_block(uint8_t* q, int64_t q_stride, float* scales, int64_t s_row,
                               int64_t s_col, const T* w, int64_t w_stride, int64_t rows,
                               int64_t cols, int64_t block_n, int64_t block_k, Fp8Format fmt,
                               cudaStream_t stream);

// Per tensor, x contiguous [n]. When compute_scale, scale[0] := amax(x) / fmax (0 for an
// all-zero x) first; otherwise scale[0] is read as given. Then q = encode(x / scale[0]).
template <typename T>
cudaError_t quantize_fp8_per_tensor(uint8_t* q, float* scale, const T* x, int64_t n,
                                    bool compute_scale, Fp8Format fmt, cudaStream_t stream);

// Dequantization for all three granularities: out[r, c] = decode(q[r, c]) *
// scales[(r / block_rows) * s_row + (c / block_cols) * s_col]. Per-token groups: block_rows 1,
// block_cols group; blocks: (block_n, block_k); per tensor: s_row = s_col = 0.
template <typename T>
cudaError_t dequantize_fp8(T* out, int64_t out_stride, const uint8_t* q, int64_t q_stride,
                           const float* scales, int64_t s_row, int64_t s_col, int64_t rows,
                           int64_t cols, int64_t block_rows, int64_t block_cols, Fp8Format fmt,
                           cudaStream_t stream);

}  // namespace ltx_kernels
