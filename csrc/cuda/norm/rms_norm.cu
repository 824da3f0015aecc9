// RMSNorm launcher: picks the vector width, the register-resident or looping kernel and
// the launch shape. See rms_norm.cuh for the kernels and their byte counts.
#include "ltx_kernels/norm/rms_norm.cuh"
#include "ltx_kernels/cuda/ops.h"

namespace ltx_kernels {
namespace {

constexpr int64_t kMaxGrid = int64_t(1) << 30;  // rows beyond this are covered by grid-stride

template <typename T, int VEC, int NV, bool PRELOAD_W>
void warp_rows(T* out, int64_t os, const T* x, int64_t xs, const T* w, int64_t rows, int cols,
               float eps, cudaStream_t stream) {
  const int64_t grid = std::min<int64_t>((rows + 3) / 4, kMaxGrid);  // 4 rows per block
  norm_detail::rms_norm_regs<T, VEC, NV, true, PRELOAD_W>
      <<<unsigned(grid), 128, 0, stream>>>(out, os, x, xs, w, rows, cols, eps);
}

template <typename T, int VEC, int NV, bool PRELOAD_W>
void block_rows(T* out, int64_t os, const T* x, int64_t xs, const T* w, int64_t rows, int cols,
                float eps, cudaStream_t stream) {
  const int nvec = cols / VEC;
  const unsigned threads = unsigned(((nvec + NV - 1) / NV + 31) / 32 * 32);
  const unsigned grid = unsigned(std::min<int64_t>(rows, kMaxGrid));
  norm_detail::rms_norm_regs<T, VEC, NV, false, PRELOAD_W>
      <<<grid, threads, 0, stream>>>(out, os, x, xs, w, rows, cols, eps);
}

// Two launch shapes, chosen by problem size (measured on the H200, benchmarks/results/h200):
//  - small problems (x <= 32 MB: one wave or less, latency bound): spread each row over as
//    many threads as possible (<= 256) with the weight issued alongside x;
//  - large problems (bandwidth bound): fewer threads per row with 4-16 accesses each and the
//    weight loaded at the store, which keeps registers low and bf16 near the copy ceiling.
template <typename T, int VEC>
cudaError_t launch(T* out, int64_t os, const T* x, int64_t xs, const T* w, int64_t rows,
                   int cols, float eps, cudaStream_t stream) {
  const int nvec = cols / VEC;
  const bool small = rows * int64_t(cols) * int64_t(sizeof(T)) <= (int64_t(32) << 20);
#define LTX_ARGS out, os, x, xs, w, rows, cols, eps, stream
  if (nvec > 256 * 16) {  // too wide for registers: two passes
    const unsigned grid = unsigned(std::min<int64_t>(rows, kMaxGrid));
    norm_detail::rms_norm_loop<T, VEC><<<grid, 512, 0, stream>>>(out, os, x, xs, w, rows, cols, eps);
  } else if (small) {
    if (nvec <= 32) warp_rows<T, VEC, 1, true>(LTX_ARGS);
    else if (nvec <= 64) warp_rows<T, VEC, 2, true>(LTX_ARGS);
    else if (nvec <= 256) block_rows<T, VEC, 1, true>(LTX_ARGS);
    else if (nvec <= 512) block_rows<T, VEC, 2, true>(LTX_ARGS);
    else if (nvec <= 1024) block_rows<T, VEC, 4, true>(LTX_ARGS);
    else if (nvec <= 2048) block_rows<T, VEC, 8, true>(LTX_ARGS);
    else block_rows<T, VEC, 16, false>(LTX_ARGS);
  } else {
    if (nvec <= 32) warp_rows<T, VEC, 1, false>(LTX_ARGS);
    else if (nvec <= 64) warp_rows<T, VEC, 2, false>(LTX_ARGS);
    else if (nvec <= 128) warp_rows<T, VEC, 4, false>(LTX_ARGS);
    else if (nvec <= 256) warp_rows<T, VEC, 8, false>(LTX_ARGS);
    else if (nvec <= 128 * 4) block_rows<T, VEC, 4, false>(LTX_ARGS);
    else if (nvec <= 128 * 8) block_rows<T, VEC, 8, false>(LTX_ARGS);
    else block_rows<T, VEC, 16, false>(LTX_ARGS);  // up to 256 threads
  }
#undef LTX_ARGS
  return cudaGetLastError();
}

template <typename T>
cudaError_t rms_norm_typed(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* weight,
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

}  // namespace

cudaError_t rms_norm(const RmsNormParams& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return rms_norm_typed<T>(p.out.ptr<T>(), p.out.layout.stride, p.x.ptr<T>(), p.x.layout.stride,
                             static_cast<const T*>(p.weight), p.x.layout.rows, p.x.layout.cols, p.eps,
                             stream);
  });
}

}  // namespace ltx_kernels
