// RoPE launchers: pick the access path (16-byte vectors when every pointer, stride and the
// head width allow it, elements otherwise), the register-resident or looping norm kernel and
// the launch shape. See rope.cuh for the kernels and their byte counts.
#include <algorithm>

#include "ltx_kernels/common/device.h"
#include "ltx_kernels/common/rowwise_launch.h"
#include "ltx_kernels/rope/rope.cuh"
#include "ltx_kernels/cuda/ops.h"

namespace ltx_kernels {
namespace {

using rope_detail::Params;

template <typename T, typename TT, bool SPLIT, int N>
cudaError_t launch_norm_vector(const Params<T, TT>& p, cudaStream_t stream) {
  using namespace rope_detail;
  // the shape: norm_rope_shape (common/rowwise_launch.h); a split chunk is two accesses
  constexpr int S = SPLIT ? 2 : 1;
  const RowRegShape sh = norm_rope_shape(chunks_per_row<N, SPLIT>(p.cols), SPLIT);
  const unsigned grid = unsigned(std::min<int64_t>(sh.kind == RowRegShape::kWarp ? (p.rows + 3) / 4 : p.rows,
                                                   kRowwiseMaxGrid));
  if (sh.kind == RowRegShape::kWarp) {  // one warp per row, 4 rows per block
#define LTX_WARP_CASE(NV) norm_rope_regs<T, TT, SPLIT, N, NV, true><<<grid, 128, 0, stream>>>(p)
    if (sh.nv == 2 / S) LTX_WARP_CASE(2 / S);
    else if (sh.nv == 4 / S) LTX_WARP_CASE(4 / S);
    else LTX_WARP_CASE(8 / S);
#undef LTX_WARP_CASE
  } else if (sh.kind == RowRegShape::kBlock) {  // one block per row, row in registers
#define LTX_BLOCK_CASE(NV) \
  norm_rope_regs<T, TT, SPLIT, N, NV, false><<<grid, unsigned(sh.threads), 0, stream>>>(p)
    if (sh.nv == 4 / S) LTX_BLOCK_CASE(4 / S);
    else if (sh.nv == 8 / S) LTX_BLOCK_CASE(8 / S);
    else LTX_BLOCK_CASE(16 / S);  // up to 256 threads
#undef LTX_BLOCK_CASE
  } else {
    norm_rope_loop<T, TT, SPLIT, N, true><<<grid, unsigned(sh.threads), 0, stream>>>(p);
  }
  return cudaGetLastError();
}

template <typename T, typename TT, bool SPLIT, int N, bool VECTOR>
cudaError_t launch_norm_loop(const Params<T, TT>& p, cudaStream_t stream) {
  const int nch = rope_detail::chunks_per_row<N, SPLIT>(p.cols);
  const unsigned threads = unsigned(warp_rounded_threads(nch, 512));  // the loop kernel's limit
  const unsigned grid = unsigned(std::min<int64_t>(p.rows, kRowwiseMaxGrid));
  rope_detail::norm_rope_loop<T, TT, SPLIT, N, VECTOR><<<grid, threads, 0, stream>>>(p);
  return cudaGetLastError();
}

template <typename T, typename TT, bool SPLIT, int N, bool VECTOR>
cudaError_t launch_flat(const Params<T, TT>& p, cudaStream_t stream) {
  const int64_t total = p.rows * int64_t(rope_detail::chunks_per_row<N, SPLIT>(p.cols));
  rope_detail::rope_flat<T, TT, SPLIT, N, VECTOR><<<unsigned(flat_grid(total, 1, 256)), 256, 0, stream>>>(p);
  return cudaGetLastError();
}

bool strides_divisible(const RopeTableStrides& t, int64_t n) {
  return t.b % n == 0 && t.h % n == 0 && t.s % n == 0;
}

template <typename T, typename TT, bool SPLIT>
cudaError_t run(Params<T, TT> p, bool norm, cudaStream_t stream) {
  constexpr int V = kVec16<T>;
  const int unit = SPLIT ? p.head_dim / 2 : p.head_dim;  // elements a chunk may not straddle
  const bool vec_ok = unit % V == 0 && p.cols % V == 0 && p.out_stride % V == 0 &&
                      p.x_stride % V == 0 && aligned_to(p.out, 16) && aligned_to(p.x, 16) &&
                      (p.w == nullptr || aligned_to(p.w, 16)) && aligned_to(p.cos, 16) &&
                      aligned_to(p.sin, 16) && strides_divisible(p.cs, V) &&
                      strides_divisible(p.ss, V);
  constexpr int NE = SPLIT ? 1 : 2;  // element path: one pair per chunk
  if (norm) {
    if (vec_ok) return launch_norm_vector<T, TT, SPLIT, V>(p, stream);
    return launch_norm_loop<T, TT, SPLIT, NE, false>(p, stream);
  }
  if (vec_ok) return launch_flat<T, TT, SPLIT, V, true>(p, stream);
  return launch_flat<T, TT, SPLIT, NE, false>(p, stream);
}

template <typename T, typename TT>
cudaError_t dispatch(T* out, int64_t os, const T* x, int64_t xs, const T* w, bool norm, float eps,
                     const TT* cos, RopeTableStrides cs, const TT* sin, RopeTableStrides ss,
                     const RopeShape& shape, cudaStream_t stream) {
  const int64_t rows = shape.batch * shape.seq;
  if (rows <= 0 || shape.cols <= 0) return cudaSuccess;
  if (shape.cols > int64_t(INT32_MAX) || shape.head_dim <= 0 || shape.head_dim % 2 != 0 ||
      shape.cols % shape.head_dim != 0)
    return cudaErrorInvalidValue;
  // Batch-broadcast tables: visit the B rows of one position together so that each table row
  // comes from DRAM once, when the tables are too large to stay in L2 across the batch (LTX-Video
  // [2, 6144, 4096] with fp32 tables: 201 MB). When they fit in L2 (LTX-Video [2, 2688, 2048]:
  // 44 MB in a 60 MB L2), row order stays batch-major, the faster order there. The rms_norm_rope
  // rows of benchmarks/results/h200/rope.json run both cases.
  bool s_major = false;
  if (shape.batch > 1 && cs.b == 0 && ss.b == 0) {
    const int l2 = current_device_props().l2_bytes;
    if (l2 > 0) {
      const int64_t table_bytes = 2 * shape.seq * shape.cols * int64_t(sizeof(TT)) /
                                  (shape.split ? 2 : 1);
      s_major = table_bytes > int64_t(l2);
    }
  }
  Params<T, TT> p{out, os, x, xs, norm ? w : nullptr, cos, cs, sin, ss, rows, shape.seq,
                  int(shape.cols), int(shape.head_dim), eps, shape.batch, s_major};
  return shape.split ? run<T, TT, true>(p, norm, stream) : run<T, TT, false>(p, norm, stream);
}

cudaError_t run_op(const RopeParams& p, bool norm, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return dispatch_tables<T>(p.tables, [&](auto table_tag) {
      using TT = type_of<decltype(table_tag)>;
      return dispatch<T, TT>(p.out.ptr<T>(), p.out.layout.stride, p.x.ptr<T>(), p.x.layout.stride,
                             static_cast<const T*>(p.weight), norm, p.eps, static_cast<const TT*>(p.tables.cos),
                             p.tables.cos_strides, static_cast<const TT*>(p.tables.sin), p.tables.sin_strides,
                             p.shape, stream);
    });
  });
}

}  // namespace

cudaError_t rms_norm_rope(const RopeParams& p, cudaStream_t stream) {
  if (p.shape.split || p.shape.head_dim != p.shape.cols) return cudaErrorInvalidValue;
  return run_op(p, true, stream);
}

cudaError_t rms_norm_split_rope(const RopeParams& p, cudaStream_t stream) {
  if (!p.shape.split) return cudaErrorInvalidValue;
  return run_op(p, true, stream);
}

cudaError_t apply_rope(const RopeParams& p, cudaStream_t stream) { return run_op(p, false, stream); }

}  // namespace ltx_kernels
