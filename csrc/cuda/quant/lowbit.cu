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

// The vector instantiation of a kernel when `vec` (pointers aligned for it), else the scalar one.
template <class Kernel, class... Args>
cudaError_t launch(bool vec, Kernel vec_kernel, Kernel scalar_kernel, unsigned grid, cudaStream_t stream,
                   Args... args) {
  (vec ? vec_kernel : scalar_kernel)<<<grid, kThreads, 0, stream>>>(args...);
  return cudaGetLastError();
}

cudaError_t fp6_pack_raw(uint8_t* out, const uint8_t* x, int64_t groups, cudaStream_t stream) {
  if (groups <= 0) return cudaSuccess;
  const unsigned grid = grid_for((groups + 3) / 4);
  return launch(aligned_to(x, 16) && aligned_to(out, 4), lowbit_detail::fp6_pack_kernel<true>,
                lowbit_detail::fp6_pack_kernel<false>, grid, stream, out, x, groups);
}

}  // namespace

cudaError_t fp6_unpack(uint8_t* out, const uint8_t* packed, int64_t groups, cudaStream_t stream) {
  if (groups <= 0) return cudaSuccess;
  const unsigned grid = grid_for((groups + 3) / 4);
  return launch(aligned_to(out, 16) && aligned_to(packed, 4), lowbit_detail::fp6_unpack_kernel<true>,
                lowbit_detail::fp6_unpack_kernel<false>, grid, stream, out, packed, groups);
}

namespace {

template <typename T>
cudaError_t quantize_fp6_block_typed(uint8_t* packed, float* scales, const T* w, int64_t rows,
                               int64_t cols, int block_rows, int block_cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols % 4 != 0 || block_rows <= 0 || block_cols <= 0 || block_cols % 4 != 0 ||
      int64_t(block_rows) * block_cols > (int64_t(1) << 24))
    return cudaErrorInvalidValue;
  const int64_t tiles = ((rows + block_rows - 1) / block_rows) * ((cols + block_cols - 1) / block_cols);
  const unsigned grid = unsigned(std::min<int64_t>(tiles, kMaxBlocks));
  return launch(aligned_to(w, 4 * int(sizeof(T))), lowbit_detail::quantize_fp6_block_kernel<T, true>,
                lowbit_detail::quantize_fp6_block_kernel<T, false>, grid, stream, packed, scales, w, rows, cols,
                block_rows, block_cols);
}

template <typename T>
cudaError_t dequantize_fp6_block_typed(T* out, const uint8_t* packed, const float* scales, int64_t rows,
                                 int64_t cols, int block_rows, int block_cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols % 4 != 0 || block_rows <= 0 || block_cols <= 0 || block_cols % 4 != 0)
    return cudaErrorInvalidValue;
  const unsigned grid = grid_for(rows * (cols / 4));
  return launch(aligned_to(out, 4 * int(sizeof(T))), lowbit_detail::dequantize_fp6_block_kernel<T, true>,
                lowbit_detail::dequantize_fp6_block_kernel<T, false>, grid, stream, out, packed, scales, rows, cols,
                block_rows, block_cols);
}

template <typename T>
cudaError_t quantize_fp6_typed(uint8_t* codes, const T* x, int64_t n, int fmt, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  lowbit_detail::quantize_fp6_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(codes, x, n, fmt);
  return cudaGetLastError();
}

template <typename T>
cudaError_t dequantize_fp6_typed(T* out, const uint8_t* codes, int64_t n, int fmt, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  lowbit_detail::dequantize_fp6_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(out, codes, n, fmt);
  return cudaGetLastError();
}

template <typename T>
cudaError_t quantize_nvfp4_typed(uint8_t* packed, uint8_t* block_scales, const T* x,
                           const float* per_tensor_scale, int64_t rows, int64_t cols,
                           bool hi_first, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols % 16 != 0) return cudaErrorInvalidValue;
  const int64_t items = (rows + 127) / 128 * 128 * ((cols / 16 + 3) / 4 * 4);
  return launch(aligned_to(x, 16) && aligned_to(packed, 8), lowbit_detail::quantize_nvfp4_kernel<T, true>,
                lowbit_detail::quantize_nvfp4_kernel<T, false>, grid_for(items), stream, packed, block_scales, x,
                per_tensor_scale, rows, cols, hi_first);
}

}  // namespace

template <typename T>
cudaError_t dequantize_nvfp4(T* out, const uint8_t* packed, const uint8_t* block_scales,
                             const float* per_tensor_scale, int64_t rows, int64_t cols,
                             bool hi_first, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols % 16 != 0) return cudaErrorInvalidValue;
  const int64_t items = rows * (cols / 16);
  return launch(aligned_to(out, 16) && aligned_to(packed, 8), lowbit_detail::dequantize_nvfp4_kernel<T, true>,
                lowbit_detail::dequantize_nvfp4_kernel<T, false>, grid_for(items), stream, out, packed, block_scales,
                per_tensor_scale, rows, cols, hi_first);
}

template cudaError_t dequantize_nvfp4<float>(float*, const uint8_t*, const uint8_t*, const float*, int64_t, int64_t,
                                              bool, cudaStream_t);
template cudaError_t dequantize_nvfp4<__half>(__half*, const uint8_t*, const uint8_t*, const float*, int64_t, int64_t,
                                               bool, cudaStream_t);
template cudaError_t dequantize_nvfp4<__nv_bfloat16>(__nv_bfloat16*, const uint8_t*, const uint8_t*, const float*,
                                                      int64_t, int64_t, bool, cudaStream_t);

cudaError_t fp6_pack(const Fp6PackParams& p, cudaStream_t stream) {
  return fp6_pack_raw(p.packed, p.codes, p.groups, stream);
}

cudaError_t fp6_unpack(const Fp6PackParams& p, cudaStream_t stream) {
  return fp6_unpack(p.codes, p.packed, p.groups, stream);
}

cudaError_t quantize_fp6_block(const Fp6BlockParams& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return quantize_fp6_block_typed<T>(p.packed, p.scales, static_cast<const T*>(p.values), p.rows, p.cols,
                                       p.block_rows, p.block_cols, stream);
  });
}

cudaError_t dequantize_fp6_block(const Fp6BlockParams& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return dequantize_fp6_block_typed<T>(static_cast<T*>(p.values), p.packed, p.scales, p.rows, p.cols, p.block_rows,
                                         p.block_cols, stream);
  });
}

cudaError_t quantize_fp6(const Fp6Params& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return quantize_fp6_typed<T>(p.codes, static_cast<const T*>(p.values), p.n, p.format, stream);
  });
}

cudaError_t dequantize_fp6(const Fp6Params& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return dequantize_fp6_typed<T>(static_cast<T*>(p.values), p.codes, p.n, p.format, stream);
  });
}

cudaError_t quantize_nvfp4(const Nvfp4Params& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return quantize_nvfp4_typed<T>(p.packed, p.block_scales, static_cast<const T*>(p.values), p.per_tensor_scale,
                                   p.rows, p.cols, p.hi_first, stream);
  });
}

cudaError_t dequantize_nvfp4(const Nvfp4Params& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return dequantize_nvfp4<T>(static_cast<T*>(p.values), p.packed, p.block_scales, p.per_tensor_scale, p.rows,
                               p.cols, p.hi_first, stream);
  });
}

}  // namespace ltx_kernels
