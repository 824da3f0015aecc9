// Neighborhood attention launcher: tile choice, launch shape, explicit instantiations. See
// natten.cuh for the kernel and its work accounting.
#include <algorithm>
#include <cmath>

#include "ltx_kernels/attention/natten.cuh"
#include "ltx_kernels/attention/natten.h"

namespace ltx_kernels {
namespace {

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Keys staged (and mostly computed) for the whole grid with box i: boxes x union of windows.
double tile_cost(const NaProblem& p, int i) {
  int t[3];
  na_tile_shape(i, t[0], t[1], t[2]);
  double boxes = 1.0, keys = 1.0;
  for (int a = 0; a < 3; ++a) {
    boxes *= double(cdiv(p.size[a], t[a]));
    keys *= double(std::min(t[a] + p.kernel[a] - 1, p.size[a]));
  }
  return boxes * keys;
}

template <typename T, int D>
cudaError_t launch(const natten_detail::NaKernelArgs& args, int64_t boxes, const NaProblem& p,
                   cudaStream_t stream) {
  using S = natten_detail::Smem<T, D>;
  auto kernel = natten_detail::na_fwd_kernel<T, D>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(S::kBytes));
  if (err != cudaSuccess) return err;
  const dim3 grid(unsigned(boxes), unsigned(p.heads), unsigned(p.batch));
  kernel<<<grid, natten_detail::kThreads, S::kBytes, stream>>>(args);
  return cudaGetLastError();
}

}  // namespace

int na_pick_tile(const NaProblem& p) {
  return na_argmin(kNaNumTiles, [&](int i) { return tile_cost(p, i); });
}

template <typename T>
cudaError_t na_forward(T* out, NaStrides os, const T* q, NaStrides qs, const T* k, NaStrides ks,
                       const T* v, NaStrides vs, const NaProblem& p, int tile, cudaStream_t stream) {
  if (p.batch <= 0 || p.heads <= 0 || p.size[0] <= 0 || p.size[1] <= 0 || p.size[2] <= 0) return cudaSuccess;
  if (p.dim != 32 && p.dim != 64 && p.dim != 128) return cudaErrorInvalidValue;
  if (p.heads > 65535 || p.batch > 65535) return cudaErrorInvalidValue;
  for (int a = 0; a < 3; ++a) {
    // union extents must fit the 10-bit key coordinates: box <= 64 plus kernel - 1
    if (p.kernel[a] < 1 || p.kernel[a] > 511 || p.size[a] < p.kernel[a]) return cudaErrorInvalidValue;
  }
  if (tile < 0) tile = na_pick_tile(p);
  if (tile >= kNaNumTiles) return cudaErrorInvalidValue;
  natten_detail::NaKernelArgs args{};
  args.q = q;
  args.k = k;
  args.v = v;
  args.out = out;
  args.qs = qs;
  args.ks = ks;
  args.vs = vs;
  args.os = os;
  na_tile_shape(tile, args.tile[0], args.tile[1], args.tile[2]);
  int64_t boxes = 1;
  for (int a = 0; a < 3; ++a) {
    args.n[a] = p.size[a];
    args.ker[a] = p.kernel[a];
    args.causal[a] = p.causal[a] ? 1 : 0;
    args.ntile[a] = int(cdiv(p.size[a], args.tile[a]));
    boxes *= args.ntile[a];
  }
  if (boxes > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  args.scale_log2 = p.scale * 1.4426950408889634f;
  switch (p.dim) {
    case 32: return launch<T, 32>(args, boxes, p, stream);
    case 64: return launch<T, 64>(args, boxes, p, stream);
    default: return launch<T, 128>(args, boxes, p, stream);
  }
}

template cudaError_t na_forward<__half>(__half*, NaStrides, const __half*, NaStrides, const __half*,
                                        NaStrides, const __half*, NaStrides, const NaProblem&, int,
                                        cudaStream_t);
template cudaError_t na_forward<__nv_bfloat16>(__nv_bfloat16*, NaStrides, const __nv_bfloat16*, NaStrides,
                                               const __nv_bfloat16*, NaStrides, const __nv_bfloat16*,
                                               NaStrides, const NaProblem&, int, cudaStream_t);

}  // namespace ltx_kernels
