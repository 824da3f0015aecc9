// CPU reference backend for FP8 quantization. Plain C++, no torch; the same layouts and the
// same element rule as the CUDA core (common/fp8_util.h), with formats.h's reference codec.
// Each function covers a row range (or tile-row range) so the adapter can parallelise.
// T in {float, half_t, bfloat16_t}; codes are raw bytes.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/fp8_util.h"
#include "ltx_kernels/common/host_types.h"

namespace ltx_kernels {
namespace cpu {

// x [rows, cols] -> q [rows, cols], scales[r * s_row + g * s_col] for groups of `group` columns.
template <typename T>
void quantize_fp8_per_token_group(uint8_t* q, int64_t q_stride, float* scales, int64_t s_row,
                                  int64_t s_col, const T* x, int64_t x_stride, int64_t row_begin,
                                  int64_t row_end, int64_t cols, int64_t group, Fp8Format fmt);

// Tile rows [tile_row_begin, tile_row_end) of w [rows, cols] in (block_n x block_k) tiles.
template <typename T>
void quantize_fp8_block(uint8_t* q, int64_t q_stride, float* scales, int64_t s_row, int64_t s_col,
                        const T* w, int64_t w_stride, int64_t tile_row_begin, int64_t tile_row_end,
                        int64_t rows, int64_t cols, int64_t block_n, int64_t block_k, Fp8Format fmt);

// max |x| over rows [row_begin, row_end), NaN ignored.
template <typename T>
float fp8_amax(const T* x, int64_t x_stride, int64_t row_begin, int64_t row_end, int64_t cols);

// q = encode(x / scale) (encode(x) when scale == 0) over rows [row_begin, row_end).
template <typename T>
void quantize_fp8_scaled(uint8_t* q, int64_t q_stride, const T* x, int64_t x_stride,
                         int64_t row_begin, int64_t row_end, int64_t cols, float scale,
                         Fp8Format fmt);

// out[r, c] = decode(q[r, c]) * scales[(r / block_rows) * s_row + (c / block_cols) * s_col].
template <typename T>
void dequantize_fp8(T* out, int64_t out_stride, const uint8_t* q, int64_t q_stride,
                    const float* scales, int64_t s_row, int64_t s_col, int64_t row_begin,
                    int64_t row_end, int64_t cols, int64_t block_rows, int64_t block_cols,
                    Fp8Format fmt);

}  // namespace cpu
}  // namespace ltx_kernels
