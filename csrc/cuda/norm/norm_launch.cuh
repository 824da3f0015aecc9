// The one launcher of the row norms (rms_norm, add_rms_norm, layer_norm, the AdaLN norms and the
// gated residual): checks the vector path, takes the launch shape (common/rowwise_launch.h:
// norm_shape, or the one the params force) and runs the matching kernel of fused_norm.cuh with
// the op's Policy. Included by the norm family's translation units only.
#pragma once

#include <algorithm>

#include "ltx_kernels/common/rowwise_launch.h"
#include "ltx_kernels/common/dtype.h"
#include "ltx_kernels/norm/fused_norm.cuh"
#include "ltx_kernels/norm/fused_norm_params.h"

namespace ltx_kernels {
namespace fused_norm_detail {

constexpr int64_t kMaxGrid = int64_t(1) << 30;  // rows beyond this are covered by grid-stride

template <class P, typename T, int VEC, int NV, bool PRELOAD>
cudaError_t launch_warp_rows(const Args<T>& a, cudaStream_t stream) {
  const unsigned grid = unsigned(std::min<int64_t>((a.rows + 3) / 4, kMaxGrid));  // 4 rows per CTA
  fused_norm_regs<P, T, VEC, NV, true, PRELOAD><<<grid, 128, 0, stream>>>(a);
  return cudaGetLastError();
}

template <class P, typename T, int VEC, int NV, bool PRELOAD>
cudaError_t launch_block_rows(const Args<T>& a, cudaStream_t stream) {
  const unsigned grid = unsigned(std::min<int64_t>(a.rows, kMaxGrid));
  const unsigned threads = unsigned(norm_block_threads(a.cols / VEC, NV));
  fused_norm_regs<P, T, VEC, NV, false, PRELOAD><<<grid, threads, 0, stream>>>(a);
  return cudaGetLastError();
}

// Shape s (norm_shape_runs(s, nvec, VEC > 1) holds) -> its kernel. The scalar path (VEC == 1)
// compiles only the shapes norm_shape_runs allows it.
template <class P, typename T, int VEC>
cudaError_t launch(const Args<T>& a, const NormShape& s, cudaStream_t stream) {
  constexpr bool kVec = VEC > 1;
  if (s.kind == NormShape::kLoop) {
    const unsigned grid = unsigned(std::min<int64_t>(a.rows, kMaxGrid));
    fused_norm_loop<P, T, VEC><<<grid, 512, 0, stream>>>(a);
    return cudaGetLastError();
  }
  if (s.kind == NormShape::kWarp) {
    if constexpr (kVec) {
      if (s.preload) {
        return s.nv == 1 ? launch_warp_rows<P, T, VEC, 1, true>(a, stream)
                         : launch_warp_rows<P, T, VEC, 2, true>(a, stream);
      }
    }
    switch (s.nv) {
      case 1: return launch_warp_rows<P, T, VEC, 1, false>(a, stream);
      case 2: return launch_warp_rows<P, T, VEC, 2, false>(a, stream);
      case 4: return launch_warp_rows<P, T, VEC, 4, false>(a, stream);
      default: return launch_warp_rows<P, T, VEC, 8, false>(a, stream);
    }
  }
  if constexpr (kVec) {
    if (s.preload) {
      switch (s.nv) {
        case 1: return launch_block_rows<P, T, VEC, 1, true>(a, stream);
        case 2: return launch_block_rows<P, T, VEC, 2, true>(a, stream);
        default: return launch_block_rows<P, T, VEC, 4, true>(a, stream);
      }
    }
    if (s.nv == 1) return launch_block_rows<P, T, VEC, 1, false>(a, stream);
    if (s.nv == 2) return launch_block_rows<P, T, VEC, 2, false>(a, stream);
  }
  switch (s.nv) {
    case 4: return launch_block_rows<P, T, VEC, 4, false>(a, stream);
    case 8: return launch_block_rows<P, T, VEC, 8, false>(a, stream);
    default: return launch_block_rows<P, T, VEC, 16, false>(a, stream);
  }
}

template <typename T>
bool table_vec_ok(const ModTable<T>& t, int v) {
  return t.data == nullptr || (aligned_to(t.data, 16) && t.stride % v == 0);
}

// a with everything but its sizes filled; forced: a shape to run instead of norm_shape's
// (kind kAuto: none). The 16-byte vector path needs every pointer 16-byte aligned and every
// stride and cols a multiple of the vector width; otherwise the scalar path (VEC = 1) runs.
// A forced shape that the path cannot run is cudaErrorInvalidConfiguration.
template <class P, typename T>
cudaError_t run(Args<T> a, int64_t cols, const NormShape& forced, cudaStream_t stream) {
  if (a.rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  a.cols = int(cols);
  a.inv_cols = 1.f / float(cols);
  constexpr int V = kVec16<T>;
  auto ptr_ok = [](const void* p) { return p == nullptr || aligned_to(p, 16); };
  const bool vec = cols % V == 0 && a.out_stride % V == 0 && a.x_stride % V == 0 &&
                   a.res_out_stride % V == 0 && a.x2_stride % V == 0 && ptr_ok(a.out) &&
                   ptr_ok(a.res_out) && ptr_ok(a.x) && ptr_ok(a.x2) && ptr_ok(a.weight) &&
                   ptr_ok(a.bias) && table_vec_ok(a.gate, V) && table_vec_ok(a.scale, V) &&
                   table_vec_ok(a.shift, V);
  const int64_t nvec = vec ? cols / V : cols;
  NormShape s = forced;
  if (s.kind == NormShape::kAuto) {
    NormOpKind op;
    op.layer_norm = P::kLayerNorm;
    op.residual = P::kWritesResidual;
    op.modulate = P::kModulate;
    op.per_sample = P::kModulate && a.scale.rows_per_entry > 1;
    s = norm_shape(nvec, a.rows * cols * int64_t(sizeof(T)), op, vec);
  }
  if (!norm_shape_runs(s, nvec, vec)) return cudaErrorInvalidConfiguration;
  return vec ? launch<P, T, V>(a, s, stream) : launch<P, T, 1>(a, s, stream);
}

// A table the op reads must have rows_per_entry >= 1.
inline bool table_ok(const AnyModTable& t) { return t.data == nullptr || t.rows_per_entry >= 1; }

// One fused-norm op: its params as Args<T> of the params' dtype, run with Policy P.
template <class P>
cudaError_t run_op(const FusedNormParams& p, cudaStream_t stream) {
  if (!table_ok(p.gate) || !table_ok(p.scale) || !table_ok(p.shift)) return cudaErrorInvalidValue;
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    Args<T> a = fused_norm_args<T, Args<T>>(p);
    a.rows = p.x.layout.rows;
    return run<P>(a, p.x.layout.cols, p.shape, stream);
  });
}

}  // namespace fused_norm_detail
}  // namespace ltx_kernels
