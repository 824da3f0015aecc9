// Low-bit formats (LTX-2 FP6, OCP FP6, NVFP4), framework-agnostic CUDA entry points.
// Raw pointers + cudaStream_t, cudaError_t back; every tensor contiguous (row-major).
// Float types T in {float, __half, __nv_bfloat16}; arithmetic in fp32. Bit-level contracts in
// docs/REFERENCE.md sections 3 and 4 and in common/formats_lowbit.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ltx_kernels {

// ---- LTX-2 FP6 (E4M3 bytes without exponent bits 6..5), 4 values -> 3 bytes big-endian.
// x: [groups * 4] E4M3 bytes; out: [groups * 3]. Bits 6..5 of every input byte are DROPPED
// (not checked): an E4M3 value outside the subset packs as a different value.
cudaError_t fp6_pack(uint8_t* out, const uint8_t* x, int64_t groups, cudaStream_t stream);
// packed: [groups * 3]; out: [groups * 4] E4M3 bytes with zeros in bits 6..5.
cudaError_t fp6_unpack(uint8_t* out, const uint8_t* packed, int64_t groups, cudaStream_t stream);

// Per-block FP6 (LTX-2 weights): w [rows, cols] (cols % 4 == 0, block_cols % 4 == 0);
// scales [ceil(rows/br), ceil(cols/bc)] fp32 = amax / 0.1171875 (NaN-ignoring amax; 0 for an
// all-zero block); packed [rows, 3 cols / 4] = fp6_pack(e4m3_rne(w / scale)); w / 0 -> code 0,
// NaN -> code 0.
template <typename T>
cudaError_t quantize_fp6_block(uint8_t* packed, float* scales, const T* w, int64_t rows,
                               int64_t cols, int block_rows, int block_cols, cudaStream_t stream);
// out [rows, cols] = e4m3(unpacked) * scale (one fp32 product, rounded once to T).
template <typename T>
cudaError_t dequantize_fp6_block(T* out, const uint8_t* packed, const float* scales, int64_t rows,
                                 int64_t cols, int block_rows, int block_cols, cudaStream_t stream);

// ---- OCP FP6, one code per byte (low 6 bits). fmt 0 = E2M3, 1 = E3M2.
template <typename T>
cudaError_t quantize_fp6(uint8_t* codes, const T* x, int64_t n, int fmt, cudaStream_t stream);
// Bits 7..6 of each code are ignored.
template <typename T>
cudaError_t dequantize_fp6(T* out, const uint8_t* codes, int64_t n, int fmt, cudaStream_t stream);

// ---- NVFP4. x [rows, cols], cols % 16 == 0; per_tensor_scale: ONE fp32 on the device (s_t).
// packed [rows, cols / 2]: element 2j in the high nibble when hi_first, else the low nibble.
// block_scales: [roundup(rows, 128), roundup(cols / 16, 4)] E4M3 bytes in the cuBLASLt 128x4
// swizzled layout (nvfp4_scale_offset), every byte written (padding 0).
//   s_b = e4m3_rne(min((amax_16 / 6) / s_t, 448))  (two fp32 divisions, NaN-ignoring amax;
//         a NaN or non-positive ratio gives s_b = 0)
//   q   = e2m1_rne_sat(x / (s_t * s_b))           (fp32 product, one fp32 division; q = 0 when
//         the product is 0)
template <typename T>
cudaError_t quantize_nvfp4(uint8_t* packed, uint8_t* block_scales, const T* x,
                           const float* per_tensor_scale, int64_t rows, int64_t cols,
                           bool hi_first, cudaStream_t stream);
// out [rows, cols] = (q * s_b) * s_t in fp32, rounded once to T.
template <typename T>
cudaError_t dequantize_nvfp4(T* out, const uint8_t* packed, const uint8_t* block_scales,
                             const float* per_tensor_scale, int64_t rows, int64_t cols,
                             bool hi_first, cudaStream_t stream);

}  // namespace ltx_kernels
