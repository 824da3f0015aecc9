// FP8 quantization launchers: vector width, register-resident or looping kernel, launch shape.
// See fp8.cuh for the kernels and their byte counts, common/fp8_util.h for the element rule.
#include <algorithm>
#include <type_traits>

#include "ltx_kernels/common/device.h"
#include "ltx_kernels/common/rowwise_launch.h"
#include "ltx_kernels/quant/fp8.cuh"
#include "ltx_kernels/cuda/ops.h"

namespace ltx_kernels {
namespace {

using namespace fp8_detail;

constexpr int kThreads = 256;

// SMs of the current device (132 if the query fails).
int sm_count() {
  const int n = current_device_props().sm_count;
  return n > 0 ? n : 132;
}

// The (accesses per lane, lanes per group) pairs that segment_shape picks, as template arguments.
template <class Fn>
void with_segment_shape(const SegmentShape& sh, Fn&& fn) {
  using std::integral_constant;
  if (sh.tpg == 1) {
    if (sh.nv == 1) fn(integral_constant<int, 1>{}, integral_constant<int, 1>{});
    else if (sh.nv == 2) fn(integral_constant<int, 2>{}, integral_constant<int, 1>{});
    else fn(integral_constant<int, 4>{}, integral_constant<int, 1>{});
  } else if (sh.tpg == 2) {
    fn(integral_constant<int, 4>{}, integral_constant<int, 2>{});
  } else if (sh.tpg == 4) {
    fn(integral_constant<int, 4>{}, integral_constant<int, 4>{});
  } else if (sh.tpg == 8) {
    fn(integral_constant<int, 4>{}, integral_constant<int, 8>{});
  } else if (sh.tpg == 16) {
    fn(integral_constant<int, 4>{}, integral_constant<int, 16>{});
  } else if (sh.nv <= 4) {
    fn(integral_constant<int, 4>{}, integral_constant<int, 32>{});
  } else {
    fn(integral_constant<int, 8>{}, integral_constant<int, 32>{});
  }
}

template <typename T, class F, int VEC>
cudaError_t group_launch(uint8_t* q, int64_t qs, float* sc, int64_t sr, int64_t scc, const T* x,
                         int64_t xs, int64_t rows, int64_t cols, int group, cudaStream_t st) {
  const int64_t gpr = cols / group;
  const int64_t groups = rows * gpr;
  // launch shape: common/rowwise_launch.h (3 CTAs of 256 resident per SM: the kernels' bounds)
  const SegmentShape sh = segment_shape(group / VEC, groups, sm_count(), 3);
  if (!sh.in_regs) {
    quant_group_loop<T, F, VEC><<<unsigned(flat_grid(groups, 1, kThreads / 32)), kThreads, 0, st>>>(
        q, qs, sc, sr, scc, x, xs, rows, gpr, group);
    return cudaGetLastError();
  }
  // M-major scales (sr == 1): walk the groups column by column so a warp's scales are adjacent
  const bool col_order = sr == 1 && gpr > 1 && rows > 1;
  const FastDiv32 gdiv = make_fast_div32(uint32_t(std::min<int64_t>(col_order ? rows : gpr, INT32_MAX)));
  with_segment_shape(sh, [&](auto nv, auto tpg) {
    constexpr int NV = decltype(nv)::value, TPG = decltype(tpg)::value;
    if constexpr (VEC == kVec16<T>) {
      quant_group_vec<T, F, NV, TPG><<<unsigned(sh.grid), sh.threads, 0, st>>>(
          q, qs, sc, sr, scc, x, xs, rows, gpr, group, gdiv, col_order);
    } else {  // element-wise accesses (unaligned or odd shapes)
      quant_group_regs<T, F, VEC, NV, TPG><<<unsigned(sh.grid), sh.threads, 0, st>>>(
          q, qs, sc, sr, scc, x, xs, rows, gpr, group);
    }
  });
  return cudaGetLastError();
}

template <typename T, class F, int VEC>
cudaError_t block_launch(uint8_t* q, int64_t qs, float* sc, int64_t sr, int64_t scc, const T* w,
                         int64_t ws, BlockArgs a, cudaStream_t st) {
  // accesses in a full tile, clipped to the matrix (a small matrix needs no 128 x 128 CTA)
  const int64_t chunks = std::min(a.bn, a.rows) * (std::min(a.bk, a.cols) / VEC);
  // 8 accesses per thread (128 x 128 bf16: 256 threads), else 16 (128 x 128 fp32: 256), else two
  // passes; whole 16-byte chunks as raw words (quant_block_vec), else element-wise accesses
  // (unaligned or odd shapes: quant_block_regs)
  const TileShape s8 = tile_shape(chunks, a.tiles, 8, kThreads, kRowwiseMaxGrid);
  const TileShape s16 = tile_shape(chunks, a.tiles, 16, kThreads, kRowwiseMaxGrid);
  auto regs = [&](auto nv) {
    constexpr int NV = decltype(nv)::value;
    const TileShape& s = NV == 8 ? s8 : s16;
    if constexpr (VEC == kVec16<T>) {
      quant_block_vec<T, F, NV><<<unsigned(s.grid), s.threads, 0, st>>>(q, qs, sc, sr, scc, w, ws, a);
    } else {
      quant_block_regs<T, F, VEC, NV><<<unsigned(s.grid), s.threads, 0, st>>>(q, qs, sc, sr, scc, w, ws, a);
    }
  };
  if (s8.in_regs) regs(std::integral_constant<int, 8>{});
  else if (s16.in_regs) regs(std::integral_constant<int, 16>{});
  else quant_block_loop<T, F, VEC><<<unsigned(s8.grid), kThreads, 0, st>>>(q, qs, sc, sr, scc, w, ws, a);
  return cudaGetLastError();
}

template <typename T, class F, int VEC>
cudaError_t tensor_launch(uint8_t* q, float* scale, const T* x, int64_t n, bool compute,
                          cudaStream_t st) {
  const unsigned grid = unsigned(std::min<int64_t>(flat_grid(n / VEC, 1, kThreads), 132 * 8));
  if (compute) {
    cudaError_t e = cudaMemsetAsync(scale, 0, sizeof(float), st);
    if (e != cudaSuccess) return e;
    amax_kernel<T, VEC><<<grid, kThreads, 0, st>>>(reinterpret_cast<unsigned int*>(scale), x, n);
    finalize_scale<F><<<1, 1, 0, st>>>(scale);
  }
  if (compute)
    quant_scaled<T, F, VEC, true><<<grid, kThreads, 0, st>>>(q, scale, x, n);
  else
    quant_scaled<T, F, VEC, false><<<grid, kThreads, 0, st>>>(q, scale, x, n);
  return cudaGetLastError();
}

template <typename T, class F, int VEC>
cudaError_t dequant_launch(T* out, int64_t os, const uint8_t* q, int64_t qs, const float* sc,
                           int64_t sr, int64_t scc, int64_t rows, int64_t cols, int64_t br,
                           int64_t bc, cudaStream_t st) {
  if (cols > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  bc = std::min(bc, cols);  // c / bc == c / cols == 0 for every column when bc >= cols
  int bc_shift = -1;
  for (int k = 0; k < 31; ++k)
    if (int64_t(1) << k == bc) bc_shift = k;
  constexpr int CPT = 4;  // chunks per thread
  const DequantShape d = dequant_shape(rows, cols / VEC, CPT);  // (common/rowwise_launch.h)
  dequant<T, F, VEC, CPT><<<dim3(unsigned(d.gx), unsigned(d.gy)), unsigned(d.threads), 0, st>>>(
      out, os, q, qs, sc, sr, scc, rows, int(cols), br, int(bc), bc_shift);
  return cudaGetLastError();
}

template <typename T>
cudaError_t group_typed(uint8_t* q, int64_t q_stride, float* scales, int64_t s_row,
                                         int64_t s_col, const T* x, int64_t x_stride, int64_t rows,
                                         int64_t cols, int64_t group, Fp8Format fmt,
                                         cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (group <= 0 || cols % group != 0 || group > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  constexpr int V = kVec16<T>;
  const bool vec_ok = group % V == 0 && x_stride % V == 0 && q_stride % V == 0 &&
                      aligned_to(x, 16) && aligned_to(q, V);
  const int g = int(group);
  if (fmt == Fp8Format::E5M2) {
    if (vec_ok) return group_launch<T, E5M2, V>(q, q_stride, scales, s_row, s_col, x, x_stride, rows, cols, g, stream);
    return group_launch<T, E5M2, 1>(q, q_stride, scales, s_row, s_col, x, x_stride, rows, cols, g, stream);
  }
  if (vec_ok) return group_launch<T, E4M3, V>(q, q_stride, scales, s_row, s_col, x, x_stride, rows, cols, g, stream);
  return group_launch<T, E4M3, 1>(q, q_stride, scales, s_row, s_col, x, x_stride, rows, cols, g, stream);
}

template <typename T>
cudaError_t block_typed(uint8_t* q, int64_t q_stride, float* scales, int64_t s_row,
                               int64_t s_col, const T* w, int64_t w_stride, int64_t rows,
                               int64_t cols, int64_t block_n, int64_t block_k, Fp8Format fmt,
                               cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (block_n <= 0 || block_k <= 0) return cudaErrorInvalidValue;
  BlockArgs a;
  a.rows = rows;
  a.cols = cols;
  a.bn = block_n;
  a.bk = block_k;
  a.tiles_k = (cols + block_k - 1) / block_k;
  a.tiles = ((rows + block_n - 1) / block_n) * a.tiles_k;
  constexpr int V = kVec16<T>;
  const bool vec_ok = cols % V == 0 && block_k % V == 0 && w_stride % V == 0 && q_stride % V == 0 &&
                      aligned_to(w, 16) && aligned_to(q, V);
  if (fmt == Fp8Format::E5M2) {
    if (vec_ok) return block_launch<T, E5M2, V>(q, q_stride, scales, s_row, s_col, w, w_stride, a, stream);
    return block_launch<T, E5M2, 1>(q, q_stride, scales, s_row, s_col, w, w_stride, a, stream);
  }
  if (vec_ok) return block_launch<T, E4M3, V>(q, q_stride, scales, s_row, s_col, w, w_stride, a, stream);
  return block_launch<T, E4M3, 1>(q, q_stride, scales, s_row, s_col, w, w_stride, a, stream);
}

template <typename T>
cudaError_t tensor_typed(uint8_t* q, float* scale, const T* x, int64_t n,
                                    bool compute_scale, Fp8Format fmt, cudaStream_t stream) {
  if (n <= 0) {
    if (compute_scale) return cudaMemsetAsync(scale, 0, sizeof(float), stream);
    return cudaSuccess;
  }
  constexpr int V = kVec16<T>;
  const bool vec_ok = n % V == 0 && aligned_to(x, 16) && aligned_to(q, V);
  if (fmt == Fp8Format::E5M2) {
    if (vec_ok) return tensor_launch<T, E5M2, V>(q, scale, x, n, compute_scale, stream);
    return tensor_launch<T, E5M2, 1>(q, scale, x, n, compute_scale, stream);
  }
  if (vec_ok) return tensor_launch<T, E4M3, V>(q, scale, x, n, compute_scale, stream);
  return tensor_launch<T, E4M3, 1>(q, scale, x, n, compute_scale, stream);
}

template <typename T>
cudaError_t dequant_typed(T* out, int64_t out_stride, const uint8_t* q, int64_t q_stride,
                           const float* scales, int64_t s_row, int64_t s_col, int64_t rows,
                           int64_t cols, int64_t block_rows, int64_t block_cols, Fp8Format fmt,
                           cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (block_rows <= 0 || block_cols <= 0) return cudaErrorInvalidValue;
  constexpr int V = kVec16<T>;
  const bool vec_ok = cols % V == 0 && block_cols % V == 0 && out_stride % V == 0 &&
                      q_stride % V == 0 && aligned_to(out, 16) && aligned_to(q, V);
#define LTX_ARGS out, out_stride, q, q_stride, scales, s_row, s_col, rows, cols, block_rows, block_cols, stream
  if (fmt == Fp8Format::E5M2) {
    if (vec_ok) return dequant_launch<T, E5M2, V>(LTX_ARGS);
    return dequant_launch<T, E5M2, 1>(LTX_ARGS);
  }
  if (vec_ok) return dequant_launch<T, E4M3, V>(LTX_ARGS);
  return dequant_launch<T, E4M3, 1>(LTX_ARGS);
#undef LTX_ARGS
}

cudaError_t dequantize(const Fp8DequantizeParams& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return dequant_typed<T>(p.out.ptr<T>(), p.out.layout.stride, p.q.ptr<uint8_t>(), p.q.layout.stride, p.scales,
                            p.s_row, p.s_col, p.q.layout.rows, p.q.layout.cols, p.block_rows, p.block_cols, p.format,
                            stream);
  });
}

}  // namespace

cudaError_t quantize_fp8_per_token_group(const Fp8QuantizeParams& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return group_typed<T>(p.q.ptr<uint8_t>(), p.q.layout.stride, p.scales, p.s_row, p.s_col, p.x.ptr<T>(),
                          p.x.layout.stride, p.x.layout.rows, p.x.layout.cols, p.block_cols, p.format, stream);
  });
}

cudaError_t quantize_fp8_block(const Fp8QuantizeParams& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return block_typed<T>(p.q.ptr<uint8_t>(), p.q.layout.stride, p.scales, p.s_row, p.s_col, p.x.ptr<T>(),
                          p.x.layout.stride, p.x.layout.rows, p.x.layout.cols, p.block_rows, p.block_cols, p.format,
                          stream);
  });
}

cudaError_t quantize_fp8_per_tensor(const Fp8QuantizeParams& p, cudaStream_t stream) {
  if (p.given_scale != nullptr) {
    const cudaError_t err =
        cudaMemcpyAsync(p.scales, p.given_scale, sizeof(float), cudaMemcpyDeviceToDevice, stream);
    if (err != cudaSuccess) return err;
  }
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return tensor_typed<T>(p.q.ptr<uint8_t>(), p.scales, p.x.ptr<T>(), p.x.layout.cols, p.given_scale == nullptr,
                           p.format, stream);
  });
}

cudaError_t dequantize_fp8_per_token_group(const Fp8DequantizeParams& p, cudaStream_t stream) {
  return dequantize(p, stream);
}
cudaError_t dequantize_fp8_block(const Fp8DequantizeParams& p, cudaStream_t stream) { return dequantize(p, stream); }
cudaError_t dequantize_fp8_per_tensor(const Fp8DequantizeParams& p, cudaStream_t stream) {
  return dequantize(p, stream);
}

}  // namespace ltx_kernels
