// Low-bit family launchers: vector path when the pointers allow it, scalar otherwise; 256
// threads per block, grid capped and covered by grid-stride loops. Kernels in lowbit.cuh.
#include <algorithm>

#include "ltx_kernels/quant/lowbit.cuh"
#include "ltx_kernels/quant/lowbit.h"

namespace ltx_kernels {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t(1) << 20;

unsigned grid_for(int64_t items) {
  return unsigned(std::max<int64_t>(1, std::min<int64_t>((items + kThreads - 1) / kThreads, kMaxBlocks)));
}

}  // namespace

cudaError_t fp6_pack(uint8_t* out, const uint8_t* x, int64_t groups, cudaStream_t stream) {
  if (groups <= 0) return cudaSuccess;
  const unsigned grid = grid_for((groups + 3) / 4);
  if (aligned_to(x, 16) && aligned_to(out, 4))
    lowbit_detail::fp6_pack_kernel<true><<<grid, kThreads, 0, stream>>>(out, x, groups);
  else
    lowbit_detail::fp6_pack_kernel<false><<<grid, kThreads, 0, stream>>>(out, x, groups);
  return cudaGetLastError();
}

cudaError_t fp6_unpack(uint8_t* out, const uint8_t* packed, int64_t groups, cudaStream_t stream) {
  if (groups <= 0) return cudaSuccess;
  const unsigned grid = grid_for((groups + 3) / 4);
  if (aligned_to(out, 16) && aligned_to(packed, 4))
    lowbit_detail::fp6_unpack_kernel<true><<<grid, kThreads, 0, stream>>>(out, packed, groups);
  else
    lowbit_detail::fp6_unpack_kernel<false><<<grid, kThreads, 0, stream>>>(out, packed, groups);
  return cudaGetLastError();
}

template <typename T>
cudaError_t quantize_fp6_block(uint8_t* packed, float* scales, const T* w, int64_t rows,
                               int64_t cols, int block_rows, int block_cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols % 4 != 0 || block_rows <= 0 || block_cols <= 0 || block_cols % 4 != 0 ||
      int64_t(block_rows) * block_cols > (int64_t(1) << 24))
    return cudaErrorInvalidValue;
  const int64_t tiles = ((rows + block_rows - 1) / block_rows) * ((cols + block_cols - 1) / block_cols);
  const unsigned grid = unsigned(std::min<int64_t>(tiles, kMaxBlocks));
  if (aligned_to(w, 4 * int(sizeof(T))))
    lowbit_detail::quantize_fp6_block_kernel<T, true>
        <<<grid, kThreads, 0, stream>>>(packed, scales, w, rows, cols, block_rows, block_cols);
  else
    lowbit_detail::quantize_fp6_block_kernel<T, false>
        <<<grid, kThreads, 0, stream>>>(packed, scales, w, rows, cols, block_rows, block_cols);
  return cudaGetLastError();
}

template <typename T>
cudaError_t dequantize_fp6_block(T* out, const uint8_t* packed, const float* scales, int64_t rows,
                                 int64_t cols, int block_rows, int block_cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols % 4 != 0 || block_rows <= 0 || block_cols <= 0 || block_cols % 4 != 0)
    return cudaErrorInvalidValue;
  const unsigned grid = grid_for(rows * (cols / 4));
  if (aligned_to(out, 4 * int(sizeof(T))))
    lowbit_detail::dequantize_fp6_block_kernel<T, true>
        <<<grid, kThreads, 0, stream>>>(out, packed, scales, rows, cols, block_rows, block_cols);
  else
    lowbit_detail::dequantize_fp6_block_kernel<T, false>
        <<<grid, kThreads, 0, stream>>>(out, packed, scales, rows, cols, block_rows, block_cols);
  return cudaGetLastError();
}

template <typename T>
cudaError_t quantize_fp6(uint8_t* codes, const T* x, int64_t n, int fmt, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  lowbit_detail::quantize_fp6_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(codes, x, n, fmt);
  return cudaGetLastError();
}

template <typename T>
cudaError_t dequantize_fp6(T* out, const uint8_t* codes, int64_t n, int fmt, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  lowbit_detail::dequantize_fp6_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(out, codes, n, fmt);
  return cudaGetLastError();
}

template <typename T>
cudaError_t quantize_nvfp4(uint8_t* packed, uint8_t* block_scales, const T* x,
                           const float* per_tensor_scale, int64_t rows, int64_t cols,
                           bool hi_first, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols % 16 != 0) return cudaErrorInvalidValue;
  const int64_t items = (rows + 127) / 128 * 128 * ((cols / 16 + 3) / 4 * 4);
  if (aligned_to(x, 16) && aligned_to(packed, 8))
    lowbit_detail::quantize_nvfp4_kernel<T, true><<<grid_for(items), kThreads, 0, stream>>>(
        packed, block_scales, x, per_tensor_scale, rows, cols, hi_first);
  else
    lowbit_detail::quantize_nvfp4_kernel<T, false><<<grid_for(items), kThreads, 0, stream>>>(
        packed, block_scales, x, per_tensor_scale, rows, cols, hi_first);
  return cudaGetLastError();
}

template <typename T>
cudaError_t dequantize_nvfp4(T* out, const uint8_t* packed, const uint8_t* block_scales,
                             const float* per_tensor_scale, int64_t rows, int64_t cols,
                             bool hi_first, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols % 16 != 0) return cudaErrorInvalidValue;
  const int64_t items = rows * (cols / 16);
  if (aligned_to(out, 16) && aligned_to(packed, 8))
    lowbit_detail::dequantize_nvfp4_kernel<T, true><<<grid_for(items), kThreads, 0, stream>>>(
        out, packed, block_scales, per_tensor_scale, rows, cols, hi_first);
  else
    lowbit_detail::dequantize_nvfp4_kernel<T, false><<<grid_for(items), kThreads, 0, stream>>>(
        out, packed, block_scales, per_tensor_scale, rows, cols, hi_first);
  return cudaGetLastError();
}

#define LTX_INST(T)                                                                              \
  template cudaError_t quantize_fp6_block<T>(uint8_t*, float*, const T*, int64_t, int64_t, int,  \
                                             int, cudaStream_t);                                \
  template cudaError_t dequantize_fp6_block<T>(T*, const uint8_t*, const float*, int64_t,        \
                                               int64_t, int, int, cudaStream_t);                \
  template cudaError_t quantize_fp6<T>(uint8_t*, const T*, int64_t, int, cudaStream_t);          \
  template cudaError_t dequantize_fp6<T>(T*, const uint8_t*, int64_t, int, cudaStream_t);        \
  template cudaError_t quantize_nvfp4<T>(uint8_t*, uint8_t*, const T*, const float*, int64_t,    \
                                         int64_t, bool, cudaStream_t);                          \
  template cudaError_t dequantize_nvfp4<T>(T*, const uint8_t*, const uint8_t*, const float*,     \
                                           int64_t, int64_t, bool, cudaStream_t);
LTX_INST(float)
LTX_INST(__half)
LTX_INST(__nv_bfloat16)
#undef LTX_INST

}  // namespace ltx_kernels
