// Activation launchers: choose dense (flat) or strided-row kernels, the vector width and the
// launch shape. See activation.cuh for the kernels and their byte counts.
#include <algorithm>

#include "ltx_kernels/activation/activation.cuh"
#include "ltx_kernels/cuda/ops.h"

namespace ltx_kernels {
namespace {

using namespace act_detail;

constexpr int kThreads = kRowwiseThreads;  // the CTA size flat_grid and row_tile_shape assume

// Launch shapes: row_tile_shape (strided rows) and flat_grid (dense arrays) in
// common/rowwise_launch.h.
dim3 block_of(const RowTileShape& t) { return dim3(unsigned(t.tx), unsigned(t.ty)); }

template <typename T, class Act>
cudaError_t elementwise(T* out, int64_t os, const T* x, int64_t xs, int64_t rows, int64_t cols,
                        cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  constexpr int V = kVec16<T>;
  constexpr int U = 4;
  const bool aligned = aligned_to(out, 16) && aligned_to(x, 16);
  if (rows == 1 || (os == cols && xs == cols)) {  // dense: one flat array of rows*cols
    const int64_t n = rows * cols;
    if (aligned) {
      act_flat<T, V, U, Act><<<unsigned(flat_grid(n / V, U)), kThreads, 0, stream>>>(out, x, n);
    } else {
      act_flat<T, 1, U, Act><<<unsigned(flat_grid(n, U)), kThreads, 0, stream>>>(out, x, n);
    }
    return cudaGetLastError();
  }
  if (aligned && cols % V == 0 && os % V == 0 && xs % V == 0) {
    const RowTileShape t = row_tile_shape(rows, cols / V, U);
    act_rows<T, V, U, Act><<<unsigned(t.grid), block_of(t), 0, stream>>>(out, os, x, xs, rows, cols);
  } else {
    const RowTileShape t = row_tile_shape(rows, cols, U);
    act_rows<T, 1, U, Act><<<unsigned(t.grid), block_of(t), 0, stream>>>(out, os, x, xs, rows, cols);
  }
  return cudaGetLastError();
}

template <typename T, class Act>
cudaError_t and_mul(T* out, int64_t os, const T* x, int64_t xs, int64_t rows, int64_t d,
                    bool act_first, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return cudaSuccess;
  constexpr int V = kVec16<T>;
  constexpr int U = 1;  // two loads (act half, mul half) per step
  const int64_t act_off = act_first ? 0 : d;
  const int64_t mul_off = act_first ? d : 0;
  const bool vec = aligned_to(out, 16) && aligned_to(x, 16) && d % V == 0 &&
                   (rows == 1 || (os % V == 0 && xs % V == 0));
  if (vec) {
    const RowTileShape t = row_tile_shape(rows, d / V, U);
    act_and_mul_rows<T, V, U, Act>
        <<<unsigned(t.grid), block_of(t), 0, stream>>>(out, os, x, xs, rows, d, act_off, mul_off);
  } else {
    const RowTileShape t = row_tile_shape(rows, d, U);
    act_and_mul_rows<T, 1, U, Act>
        <<<unsigned(t.grid), block_of(t), 0, stream>>>(out, os, x, xs, rows, d, act_off, mul_off);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t gated_attention_typed(T* out, int64_t out_stride, const T* x, int64_t x_stride,
                                  const T* gate, int64_t gate_stride, int64_t rows, int64_t heads,
                                  int64_t head_dim, cudaStream_t stream) {
  if (rows <= 0 || heads <= 0 || head_dim <= 0) return cudaSuccess;
  const int64_t cols = heads * head_dim;
  if (cols > int64_t(INT32_MAX)) return cudaErrorInvalidValue;  // 32-bit head index below
  constexpr int V = kVec16<T>;
  constexpr int U = 4;
  const bool vec = aligned_to(out, 16) && aligned_to(x, 16) && head_dim % V == 0 &&
                   (rows == 1 || (out_stride % V == 0 && x_stride % V == 0));
  const bool dense = rows == 1 || (out_stride == cols && x_stride == cols && gate_stride == heads);
  if (vec && dense && rows * (cols / V) < (int64_t(1) << 31)) {
    // one flat pass, as torch.compile's pointwise kernel: the row kernel's per-row loop and 64-bit
    // offsets are instructions this kernel, at the copy rate, cannot spare (the gated_attention
    // rows of benchmarks/results/h200/activation.json time it beside torch.compile's)
    const uint32_t nvec = uint32_t(rows * (cols / V));
    gated_attention_flat<T, V, U><<<unsigned(flat_grid(nvec, U)), kThreads, 0, stream>>>(
        out, x, gate, nvec, make_fast_div32(uint32_t(head_dim / V)));
  } else if (vec) {
    const RowTileShape t = row_tile_shape(rows, cols / V, U);
    gated_attention_rows<T, V, U><<<unsigned(t.grid), block_of(t), 0, stream>>>(
        out, out_stride, x, x_stride, gate, gate_stride, rows, cols, make_fast_div32(uint32_t(head_dim / V)));
  } else {
    const RowTileShape t = row_tile_shape(rows, cols, U);
    gated_attention_rows<T, 1, U><<<unsigned(t.grid), block_of(t), 0, stream>>>(
        out, out_stride, x, x_stride, gate, gate_stride, rows, cols, make_fast_div32(uint32_t(head_dim)));
  }
  return cudaGetLastError();
}

template <class Act>
cudaError_t elementwise_op(const ActivationParams& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return elementwise<T, ActFor<Act, T>>(p.out.ptr<T>(), p.out.layout.stride, p.x.ptr<T>(), p.x.layout.stride,
                               p.x.layout.rows, p.x.layout.cols, stream);
  });
}

template <class Act>
cudaError_t and_mul_op(const AndMulParams& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return and_mul<T, ActFor<Act, T>>(p.out.ptr<T>(), p.out.layout.stride, p.x.ptr<T>(), p.x.layout.stride,
                           p.x.layout.rows, p.out.layout.cols, p.act_first, stream);
  });
}

}  // namespace

cudaError_t gelu(const ActivationParams& p, cudaStream_t stream) { return elementwise_op<GeluErf>(p, stream); }
cudaError_t gelu_tanh(const ActivationParams& p, cudaStream_t stream) { return elementwise_op<GeluTanh>(p, stream); }
cudaError_t silu(const ActivationParams& p, cudaStream_t stream) { return elementwise_op<Silu>(p, stream); }

cudaError_t gelu_and_mul(const AndMulParams& p, cudaStream_t stream) {
  return p.tanh_approx ? and_mul_op<GeluTanh>(p, stream) : and_mul_op<GeluErf>(p, stream);
}

cudaError_t silu_and_mul(const AndMulParams& p, cudaStream_t stream) { return and_mul_op<Silu>(p, stream); }

cudaError_t gated_attention(const GatedAttentionParams& p, cudaStream_t stream) {
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return gated_attention_typed<T>(p.out.ptr<T>(), p.out.layout.stride, p.x.ptr<T>(), p.x.layout.stride,
                                    p.gate.ptr<T>(), p.gate.layout.stride, p.x.layout.rows, p.heads,
                                    p.head_dim, stream);
  });
}

}  // namespace ltx_kernels
