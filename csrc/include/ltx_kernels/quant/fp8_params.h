// Parameters of the FP8 family (DeepGEMM "1D2D" recipe), built once by the torch adapter and
// taken by both backends: cpu/ops.h and cuda/ops.h. No CUDA, no torch. Semantics in full:
// docs/semantics.md, section "FP8 block scaling".
//
// Rule (common/fp8_util.h): s = amax / fmax (fp32 dequant scale, amax ignores NaN; fmax 448 for
// E4M3, 57344 for E5M2), q = encode(x / s) with a true fp32 division, q = encode(x) when s == 0
// (exact zeros, never NaN/inf). Dequantization: out = round(decode(q) * s) (fp32 product, one
// rounding to out's type). Codes are raw bytes.
//
// Scales are addressed as scales[i * s_row + j * s_col] for the block (i, j) of
// (block_rows x block_cols) elements holding element (r, c): i = r / block_rows, j = c / block_cols.
//   per token group:  blocks (1, group);  scales [rows, cols / group], "row" (G, 1) or "mn_major" (1, M_pad)
//   block:            blocks (block_n, block_k), ragged at the edges; scales [ceil(rows / bn), ceil(cols / bk)]
//   per tensor:       one block; one scale (s_row = s_col = 0)
#pragma once

#include <cstdint>

#include "ltx_kernels/common/dtype.h"
#include "ltx_kernels/common/fp8_util.h"
#include "ltx_kernels/common/rows.h"

namespace ltx_kernels {

// quantize_fp8_per_token_group, quantize_fp8_block, quantize_fp8_per_tensor.
struct Fp8QuantizeParams {
  DType dtype;                 // of x
  Fp8Format format;            // of q
  OutRows q;                   // [rows, cols] codes; per tensor: one contiguous row of n
  InRows x;                    // [rows, cols]; per tensor: one contiguous row of n
  float* scales;               // written
  int64_t s_row, s_col;        // scale strides (elements)
  int64_t block_rows, block_cols;
  const float* given_scale;    // per tensor: the scale to use (one float, x's device), or nullptr
                               // to compute amax / fmax
};

// dequantize_fp8_per_token_group, dequantize_fp8_block, dequantize_fp8_per_tensor.
struct Fp8DequantizeParams {
  DType dtype;                 // of out
  Fp8Format format;            // of q
  OutRows out;                 // [rows, cols]
  InRows q;                    // [rows, cols] codes
  const float* scales;
  int64_t s_row, s_col;
  int64_t block_rows, block_cols;
};

}  // namespace ltx_kernels
