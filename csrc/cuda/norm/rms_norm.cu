// RMSNorm launcher: picks the vector width, the register-resident or looping kernel and
// the launch shape. See rms_norm.cuh for the kernels and their byte counts.
#include "ltx_kernels/norm/rms_norm.cuh"
#include "ltx_kernels/norm/rms_norm.h"

namespace ltx_kernels {
namespace {

constexpr int64_t kMaxGrid = int64_t(1) << 30;  // rows beyond this are covered by grid-stride

template <typename T, int VEC>
cudaError_t launch(T* out, int64_t os, const T* x, int64_t xs, const T* w, int64_t rows,
                   int cols, float eps, cudaStream_t stream) {
  using namespace norm_detail;
  const int nvec = cols / VEC;
  if (nvec <= 32 * 2) {  // one warp per row, 4 rows per block
    const int64_t grid = std::min<int64_t>((rows + 3) / 4, kMaxGrid);
#define LTX_WARP_CASE(NV)                                                                     \
  rms_norm_regs<T, VEC, NV, true><<<unsigned(grid), 128, 0, stream>>>(out, os, x, xs, w, rows, \
                                                                      cols, eps)
    if (nvec <= 32) LTX_WARP_CASE(1);
    else LTX_WARP_CASE(2);
#undef LTX_WARP_CASE
  } else if (nvec <= 256 * 16) {  // one block of <= 256 threads per row, row in registers
    const unsigned grid = unsigned(std::min<int64_t>(rows, kMaxGrid));
    auto threads = [&](int nv) { return ((nvec + nv - 1) / nv + 31) / 32 * 32; };
#define LTX_BLOCK_CASE(NV)                                                                 \
  rms_norm_regs<T, VEC, NV, false><<<grid, threads(NV), 0, stream>>>(out, os, x, xs, w, rows, \
                                                                     cols, eps)
    if (nvec <= 256) LTX_BLOCK_CASE(1);
    else if (nvec <= 256 * 2) LTX_BLOCK_CASE(2);
    else if (nvec <= 256 * 4) LTX_BLOCK_CASE(4);
    else if (nvec <= 256 * 8) LTX_BLOCK_CASE(8);
    else LTX_BLOCK_CASE(16);
#undef LTX_BLOCK_CASE
  } else {
    const unsigned grid = unsigned(std::min<int64_t>(rows, kMaxGrid));
    rms_norm_loop<T, VEC><<<grid, 512, 0, stream>>>(out, os, x, xs, w, rows, cols, eps);
  }
  return cudaGetLastError();
}

}  // namespace

template <typename T>
cudaError_t rms_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* weight,
                     int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  constexpr int V = kVec16<T>;
  const bool vec_ok = cols % V == 0 && out_stride % V == 0 && x_stride % V == 0 &&
                      aligned_to(out, 16) && aligned_to(x, 16) &&
                      (weight == nullptr || aligned_to(weight, 16));
  if (vec_ok) return launch<T, V>(out, out_stride, x, x_stride, weight, rows, int(cols), eps, stream);
  return launch<T, 1>(out, out_stride, x, x_stride, weight, rows, int(cols), eps, stream);
}

template cudaError_t rms_norm<float>(float*, int64_t, const float*, int64_t, const float*, int64_t,
                                     int64_t, float, cudaStream_t);
template cudaError_t rms_norm<__half>(__half*, int64_t, const __half*, int64_t, const __half*,
                                      int64_t, int64_t, float, cudaStream_t);
template cudaError_t rms_norm<__nv_bfloat16>(__nv_bfloat16*, int64_t, const __nv_bfloat16*, int64_t,
                                             const __nv_bfloat16*, int64_t, int64_t, float,
                                             cudaStream_t);

}  // namespace ltx_kernels
