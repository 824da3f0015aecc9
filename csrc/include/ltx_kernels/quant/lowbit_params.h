// Parameters of the low-bit family (LTX-2 FP6, OCP FP6, NVFP4), built once by the torch adapter
// and taken by both backends: cpu/lowbit.h and quant/lowbit.h. No CUDA, no torch. Every tensor
// is contiguous (row-major); float values are of the params' dtype, arithmetic in fp32. Each
// struct serves a quantizer (values in, codes out) and its dequantizer (the reverse). Bit-level
// contracts: common/formats_lowbit.h and docs/semantics.md, sections "FP6" and "NVFP4".
#pragma once

#include <cstdint>

#include "ltx_kernels/common/dtype.h"

namespace ltx_kernels {

// fp6_pack / fp6_unpack: LTX-2 FP6 is E4M3 without exponent bits 6..5; 4 values <-> 3 bytes,
// big-endian. fp6_pack drops bits 6..5 of every code (not checked: an E4M3 value outside the
// subset packs as a different value); fp6_unpack writes zeros there.
struct Fp6PackParams {
  uint8_t* codes;   // [groups * 4] E4M3 bytes
  uint8_t* packed;  // [groups * 3]
  int64_t groups;
};

// quantize_fp6_block / dequantize_fp6_block (LTX-2 weights): values [rows, cols], cols % 4 == 0,
// block_cols % 4 == 0; scales [ceil(rows / br), ceil(cols / bc)] fp32 = amax / 0.1171875
// (NaN-ignoring amax; 0 for an all-zero block); packed [rows, 3 cols / 4] =
// fp6_pack(e4m3_rne(w / scale)); w / 0 -> code 0, NaN -> code 0. Dequantized:
// out = e4m3(unpacked) * scale (one fp32 product, rounded once).
struct Fp6BlockParams {
  DType dtype;
  void* values;
  uint8_t* packed;
  float* scales;
  int64_t rows, cols;
  int block_rows, block_cols;
};

// quantize_fp6 / dequantize_fp6: OCP FP6, one code per byte (low 6 bits; bits 7..6 ignored when
// decoding), RNE, saturating, NaN -> +0.
struct Fp6Params {
  DType dtype;
  void* values;    // [n]
  uint8_t* codes;  // [n]
  int64_t n;
  int format;      // 0 = E2M3, 1 = E3M2
};

// quantize_nvfp4 / dequantize_nvfp4: values [rows, cols], cols % 16 == 0; packed [rows, cols / 2]
// (element 2j in the high nibble when hi_first, else the low one); block_scales
// [roundup(rows, 128), roundup(cols / 16, 4)] E4M3 bytes in the cuBLASLt 128x4 swizzled layout
// (nvfp4_scale_offset), every byte written (padding 0); per_tensor_scale: one fp32 s_t on the
// values' device.
//   s_b = e4m3_rne(min((amax_16 / 6) / s_t, 448))  (two fp32 divisions, NaN-ignoring amax; a NaN
//         or non-positive ratio gives s_b = 0)
//   q   = e2m1_rne_sat(x / (s_t * s_b))            (q = 0 when the product is 0)
//   dequantized: (q * s_b) * s_t in fp32, rounded once
struct Nvfp4Params {
  DType dtype;
  void* values;
  uint8_t* packed;
  uint8_t* block_scales;
  const float* per_tensor_scale;
  int64_t rows, cols;
  bool hi_first;
};

}  // namespace ltx_kernels
