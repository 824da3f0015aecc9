// CPU reference backend for the low-bit family (LTX-2 FP6, OCP FP6, NVFP4). Plain C++, no
// torch; same contracts as ltx_kernels/quant/lowbit.h. Work is split by ranges so the adapter
// can parallelise: groups / elements [begin, end), or rows (block rows for the FP6 blocks)
// [begin, end). T in {float, half_t, bfloat16_t}; arithmetic in fp32.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/host_types.h"

namespace ltx_kernels {
namespace cpu {

void fp6_pack(uint8_t* out, const uint8_t* x, int64_t group_begin, int64_t group_end);
void fp6_unpack(uint8_t* out, const uint8_t* packed, int64_t group_begin, int64_t group_end);

// Block rows [brow_begin, brow_end) of ceil(rows / block_rows).
template <typename T>
void quantize_fp6_block(uint8_t* packed, float* scales, const T* w, int64_t rows, int64_t cols,
                        int block_rows, int block_cols, int64_t brow_begin, int64_t brow_end);
// Rows [row_begin, row_end).
template <typename T>
void dequantize_fp6_block(T* out, const uint8_t* packed, const float* scales, int64_t rows,
                          int64_t cols, int block_rows, int block_cols, int64_t row_begin,
                          int64_t row_end);

template <typename T>
void quantize_fp6(uint8_t* codes, const T* x, int fmt, int64_t begin, int64_t end);
template <typename T>
void dequantize_fp6(T* out, const uint8_t* codes, int fmt, int64_t begin, int64_t end);

// Padded rows [row_begin, row_end) of roundup(rows, 128): writes the packed data of real
// rows and every scale byte of those rows (padding 0). s_t is the per-tensor scale value.
template <typename T>
void quantize_nvfp4(uint8_t* packed, uint8_t* block_scales, const T* x, float s_t, int64_t rows,
                    int64_t cols, bool hi_first, int64_t row_begin, int64_t row_end);
template <typename T>
void dequantize_nvfp4(T* out, const uint8_t* packed, const uint8_t* block_scales, float s_t,
                      int64_t cols, bool hi_first, int64_t row_begin, int64_t row_end);

}  // namespace cpu
}  // namespace ltx_kernels
