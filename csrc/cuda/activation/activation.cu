// Activation launchers: choose dense (flat) or strided-row kernels, the vector width and the
// launch shape. See activation.cuh for the kernels and their byte counts.
#include <algorithm>

#include "ltx_kernels/activation/activation.cuh"
#include "ltx_kernels/activation/activation.h"

namespace ltx_kernels {
namespace {

using namespace act_detail;

constexpr int64_t kMaxGrid = int64_t(1) << 30;  // beyond this, grid-stride loops cover the rest
constexpr int kThreads = 256;

// Strided rows: TX threads per row (a power of two, enough that each thread makes about one
// pass of U vectors), TY = 256 / TX rows per block.
struct RowTile {
  dim3 block;
  unsigned grid;
};

RowTile row_tile(int64_t rows, int64_t nvec, int unroll) {
  const int64_t per_thread_row = (nvec + unroll - 1) / unroll;
  int tx = 1;
  while (tx < per_thread_row && tx < kThreads) tx <<= 1;
  const int ty = kThreads / tx;
  const int64_t grid = std::min<int64_t>((rows + ty - 1) / ty, kMaxGrid);
  return RowTile{dim3(unsigned(tx), unsigned(ty)), unsigned(std::max<int64_t>(grid, 1))};
}

unsigned flat_grid(int64_t nvec, int unroll) {
  const int64_t per_block = int64_t(kThreads) * unroll;
  return unsigned(std::max<int64_t>(1, std::min<int64_t>((nvec + per_block - 1) / per_block, kMaxGrid)));
}

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
      act_flat<T, V, U, Act><<<flat_grid(n / V, U), kThreads, 0, stream>>>(out, x, n);
    } else {
      act_flat<T, 1, U, Act><<<flat_grid(n, U), kThreads, 0, stream>>>(out, x, n);
    }
    return cudaGetLastError();
  }
  if (aligned && cols % V == 0 && os % V == 0 && xs % V == 0) {
    const RowTile t = row_tile(rows, cols / V, U);
    act_rows<T, V, U, Act><<<t.grid, t.block, 0, stream>>>(out, os, x, xs, rows, cols);
  } else {
    const RowTile t = row_tile(rows, cols, U);
    act_rows<T, 1, U, Act><<<t.grid, t.block, 0, stream>>>(out, os, x, xs, rows, cols);
  }
  return cudaGetLastError();
}

template <typename T, class Act>
cudaError_t and_mul(T* out, int64_t os, const T* x, int64_t xs, int64_t rows, int64_t d,
                    bool act_first, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return cudaSuccess;
  constexpr int V = kVec16<T>;
  constexpr int U = 2;  // two loads (act half, mul half) per step each
  const int64_t act_off = act_first ? 0 : d;
  const int64_t mul_off = act_first ? d : 0;
  const bool vec = aligned_to(out, 16) && aligned_to(x, 16) && d % V == 0 &&
                   (rows == 1 || (os % V == 0 && xs % V == 0));
  if (vec) {
    const RowTile t = row_tile(rows, d / V, U);
    act_and_mul_rows<T, V, U, Act>
        <<<t.grid, t.block, 0, stream>>>(out, os, x, xs, rows, d, act_off, mul_off);
  } else {
    const RowTile t = row_tile(rows, d, U);
    act_and_mul_rows<T, 1, U, Act>
        <<<t.grid, t.block, 0, stream>>>(out, os, x, xs, rows, d, act_off, mul_off);
  }
  return cudaGetLastError();
}

}  // namespace

template <typename T>
cudaError_t gelu(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t rows,
                 int64_t cols, cudaStream_t stream) {
  return elementwise<T, GeluErf>(out, out_stride, x, x_stride, rows, cols, stream);
}

template <typename T>
cudaError_t gelu_tanh(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t rows,
                      int64_t cols, cudaStream_t stream) {
  return elementwise<T, GeluTanh>(out, out_stride, x, x_stride, rows, cols, stream);
}

template <typename T>
cudaError_t silu(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t rows,
                 int64_t cols, cudaStream_t stream) {
  return elementwise<T, Silu>(out, out_stride, x, x_stride, rows, cols, stream);
}

template <typename T>
cudaError_t gelu_and_mul(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t rows,
                         int64_t d, bool tanh_approx, bool act_first, cudaStream_t stream) {
  if (tanh_approx)
    return and_mul<T, GeluTanh>(out, out_stride, x, x_stride, rows, d, act_first, stream);
  return and_mul<T, GeluErf>(out, out_stride, x, x_stride, rows, d, act_first, stream);
}

template <typename T>
cudaError_t silu_and_mul(T* out, int64_t out_stride, const T* x, int64_t x_stride, int64_t rows,
                         int64_t d, bool act_first, cudaStream_t stream) {
  return and_mul<T, Silu>(out, out_stride, x, x_stride, rows, d, act_first, stream);
}

template <typename T>
cudaError_t gated_attention(T* out, int64_t out_stride, const T* x, int64_t x_stride,
                            const T* gate, int64_t gate_stride, int64_t rows, int64_t heads,
                            int64_t head_dim, cudaStream_t stream) {
  if (rows <= 0 || heads <= 0 || head_dim <= 0) return cudaSuccess;
  const int64_t cols = heads * head_dim;
  if (cols > int64_t(INT32_MAX)) return cudaErrorInvalidValue;  // 32-bit head index below
  constexpr int V = kVec16<T>;
  constexpr int U = 4;
  const bool vec = aligned_to(out, 16) && aligned_to(x, 16) && head_dim % V == 0 &&
                   (rows == 1 || (out_stride % V == 0 && x_stride % V == 0));
  if (vec) {
    const RowTile t = row_tile(rows, cols / V, U);
    gated_attention_rows<T, V, U><<<t.grid, t.block, 0, stream>>>(
        out, out_stride, x, x_stride, gate, gate_stride, rows, cols, head_dim);
  } else {
    const RowTile t = row_tile(rows, cols, U);
    gated_attention_rows<T, 1, U><<<t.grid, t.block, 0, stream>>>(
        out, out_stride, x, x_stride, gate, gate_stride, rows, cols, head_dim);
  }
  return cudaGetLastError();
}

#define LTX_INSTANTIATE_ACTIVATION(T)                                                          \
  template cudaError_t gelu<T>(T*, int64_t, const T*, int64_t, int64_t, int64_t, cudaStream_t); \
  template cudaError_t gelu_tanh<T>(T*, int64_t, const T*, int64_t, int64_t, int64_t,          \
                                    cudaStream_t);                                             \
  template cudaError_t silu<T>(T*, int64_t, const T*, int64_t, int64_t, int64_t, cudaStream_t); \
  template cudaError_t gelu_and_mul<T>(T*, int64_t, const T*, int64_t, int64_t, int64_t, bool,  \
                                       bool, cudaStream_t);                                    \
  template cudaError_t silu_and_mul<T>(T*, int64_t, const T*, int64_t, int64_t, int64_t, bool,  \
                                       cudaStream_t);                                          \
  template cudaError_t gated_attention<T>(T*, int64_t, const T*, int64_t, const T*, int64_t,    \
                                          int64_t, int64_t, int64_t, cudaStream_t);

LTX_INSTANTIATE_ACTIVATION(float)
LTX_INSTANTIATE_ACTIVATION(__half)
LTX_INSTANTIATE_ACTIVATION(__nv_bfloat16)
#undef LTX_INSTANTIATE_ACTIVATION

}  // namespace ltx_kernels
