// RMSNorm + RoPE with FP8 per-token-group output: launchers and explicit instantiations (a
// translation unit of its own: 5 (T, table type) pairs x 3 launch shapes x 2 ops).
// Kernels: fused_fp8.cuh (NormRopeOp, NormSplitRopeOp through fp8_rows). Like fused_fp8.cu,
// every entry checks its preconditions and returns an error rather than launching.
#include "ltx_kernels/quant/fused_fp8.cuh"
#include "ltx_kernels/cuda/ops.h"

namespace ltx_kernels {
namespace {

using namespace fused_fp8_detail;

template <typename T, typename TT>
cudaError_t rope_precheck(const Fp8GroupOut& o, const T* x, int64_t x_stride, const T* w,
                          const TT* cos, const RopeTableStrides& cs, const TT* sin,
                          const RopeTableStrides& ss, const RopeShape& sh) {
  if (sh.seq <= 0 || sh.head_dim <= 0 || sh.cols % sh.head_dim != 0 || sh.head_dim % 2 != 0)
    return cudaErrorInvalidValue;
  if (cudaError_t e = precheck<T>(o, sh.cols); e != cudaSuccess) return e;
  return rope_inputs_ok(x, x_stride, w, cos, cs, sin, ss);
}

template <typename T, typename TT>
cudaError_t rms_norm_rope_fp8_typed(const Fp8GroupOut& o, const T* x, int64_t x_stride, const T* weight,
                              const TT* cos, RopeTableStrides cs, const TT* sin,
                              RopeTableStrides ss, const RopeShape& shape, float eps,
                              cudaStream_t stream) {
  const int64_t rows = shape.batch * shape.seq;
  if (rows <= 0 || shape.cols <= 0) return cudaSuccess;
  if (shape.split || shape.head_dim != shape.cols) return cudaErrorInvalidValue;
  if (cudaError_t e = rope_precheck(o, x, x_stride, weight, cos, cs, sin, ss, shape); e != cudaSuccess)
    return e;
  using Op = NormRopeOp<T, TT>;
  return launch<Op, T>(Op{rope_args(x, x_stride, weight, cos, cs, sin, ss, shape, eps)}, o, rows,
                       shape.cols, stream);
}

template <typename T, typename TT>
cudaError_t rms_norm_split_rope_fp8_typed(const Fp8GroupOut& o, const T* x, int64_t x_stride,
                                    const T* weight, const TT* cos, RopeTableStrides cs,
                                    const TT* sin, RopeTableStrides ss, const RopeShape& shape,
                                    float eps, cudaStream_t stream) {
  const int64_t rows = shape.batch * shape.seq;
  if (rows <= 0 || shape.cols <= 0) return cudaSuccess;
  if (!shape.split || split_rope_fp8_cuda_unsupported(int(sizeof(T)), shape.head_dim) != nullptr)
    return cudaErrorInvalidValue;
  if (cudaError_t e = rope_precheck(o, x, x_stride, weight, cos, cs, sin, ss, shape); e != cudaSuccess)
    return e;
  using Op = NormSplitRopeOp<T, TT>;
  return launch<Op, T>(Op{rope_args(x, x_stride, weight, cos, cs, sin, ss, shape, eps)}, o, rows,
                       shape.cols, stream);
}

// The (T, table type) pair of the params, then `run` on typed pointers.
template <class Run>
cudaError_t dispatch(const RopeFp8Params& p, Run&& run) {
  const RopeParams& a = p.op;
  return dispatch_cuda(a.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return dispatch_tables<T>(a.tables, [&](auto table_tag) {
      using TT = type_of<decltype(table_tag)>;
      return run(a.x.ptr<T>(), static_cast<const T*>(a.weight), static_cast<const TT*>(a.tables.cos),
                 static_cast<const TT*>(a.tables.sin));
    });
  });
}

}  // namespace

cudaError_t rms_norm_rope_fp8(const RopeFp8Params& p, cudaStream_t stream) {
  const RopeParams& a = p.op;
  return dispatch(p, [&](const auto* x, const auto* w, const auto* cos, const auto* sin) {
    return rms_norm_rope_fp8_typed(p.q, x, a.x.layout.stride, w, cos, a.tables.cos_strides, sin, a.tables.sin_strides,
                                   a.shape, a.eps, stream);
  });
}

cudaError_t rms_norm_split_rope_fp8(const RopeFp8Params& p, cudaStream_t stream) {
  const RopeParams& a = p.op;
  return dispatch(p, [&](const auto* x, const auto* w, const auto* cos, const auto* sin) {
    return rms_norm_split_rope_fp8_typed(p.q, x, a.x.layout.stride, w, cos, a.tables.cos_strides, sin,
                                         a.tables.sin_strides, a.shape, a.eps, stream);
  });
}

}  // namespace ltx_kernels
