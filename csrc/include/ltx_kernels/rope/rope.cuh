// RoPE kernels (with and without a fused whole-row RMSNorm). Layouts: common/rope_util.h.
//
// A row is cut into "chunks", each owned by one thread:
//   interleaved: N consecutive elements (N even: N/2 rotation pairs), table entries j..j+N
//   split:       N elements of the first half and the N elements d/2 further (N pairs),
//                table entries j..j+N
// VECTOR chunks are one 16-byte access of x (N = 16 / sizeof(T)); otherwise N = 2
// (interleaved) or 1 (split) with element accesses, for any alignment and head width.
//
// Bytes per row: x read once (streaming), out written once (streaming); cos/sin and the weight
// through the read-only cached path (one table row serves every batch entry and, when shared,
// every head; the weight serves every row), so they cost DRAM traffic about once.
//
// norm_rope_regs: whole row in registers (NV chunks per thread); a warp per row for short
//     rows (4 rows per 128-thread block), a block of <= 256 threads per row otherwise.
// norm_rope_loop: any width and the element path: two passes, the second mostly from L2.
// rope_flat:      no norm: one thread per chunk over rows * chunks, grid-stride.
#pragma once

#include "ltx_kernels/common/reduce.cuh"
#include "ltx_kernels/common/rope_util.h"
#include "ltx_kernels/common/vec.cuh"

namespace ltx_kernels {
namespace rope_detail {

template <typename T, typename TT>
struct Params {
  T* out;  // (rows, cols), row stride out_stride
  int64_t out_stride;
  const T* x;  // (rows, cols), row stride x_stride
  int64_t x_stride;
  const T* w;  // (cols) or nullptr
  const TT* cos;  // see RopeTableStrides
  RopeTableStrides cs;
  const TT* sin;
  RopeTableStrides ss;
  int64_t rows;  // batch * seq
  int64_t seq;
  int cols;
  int head_dim;
  float eps;
  int64_t batch;  // rows / seq
  bool s_major;   // tables shared by the batch (stride 0): visit the B rows of one position
                  // one after another, so the table row is read from DRAM once, not B times
};

// Work item i -> (x row, batch index, position). s_major orders items position-first.
template <typename T, typename TT>
__device__ __forceinline__ void row_coords(const Params<T, TT>& p, int64_t i, int64_t& row,
                                           int64_t& b, int64_t& s) {
  if (p.s_major) {
    s = i / p.batch;
    b = i - s * p.batch;
    row = b * p.seq + s;
  } else {
    b = i / p.seq;
    s = i - b * p.seq;
    row = i;
  }
}

// Where chunk k of a row lives: x offset of its (first) part, offset of the second part
// (split only), head index and table offset inside the head.
template <bool SPLIT, int N>
struct ChunkPos {
  int x0, x1, head, j;
  __device__ __forceinline__ ChunkPos(int k, int head_dim) {
    if constexpr (SPLIT) {
      const int half = head_dim >> 1;
      const int per_head = half / N;  // half % N == 0
      head = k / per_head;
      j = (k - head * per_head) * N;
      x0 = head * head_dim + j;
      x1 = x0 + half;
    } else {
      const int e = k * N;  // head_dim % N == 0
      head = e / head_dim;
      j = e - head * head_dim;
      x0 = e;
      x1 = e;
    }
  }
};

template <int N, bool SPLIT>
__host__ __device__ constexpr int chunks_per_row(int cols) {
  return SPLIT ? cols / (2 * N) : cols / N;
}

// x chunk: one 16-byte access (VECTOR) or N element loads.
template <typename T, int N, bool VECTOR, bool STREAM>
__device__ __forceinline__ Packed<T, N> load_x(const T* p) {
  if constexpr (VECTOR) {
    return STREAM ? load_stream<T, N>(p) : load_cached<T, N>(p);
  } else {
    Packed<T, N> r;
#pragma unroll
    for (int i = 0; i < N; ++i) r.v[i] = p[i];
    return r;
  }
}

template <typename T, int N, bool VECTOR>
__device__ __forceinline__ void store_x(T* p, const Packed<T, N>& v) {
  if constexpr (VECTOR) {
    store_stream<T, N>(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) p[i] = v.v[i];
  }
}

// N table (or weight) values as fp32 through the read-only path. VECTOR: p is 16-byte aligned
// and N * sizeof(TT) is a multiple of 16 (TT is float or T, N = 16 / sizeof(T)).
template <typename TT, int N, bool VECTOR>
__device__ __forceinline__ void load_f32(const TT* p, float (&f)[N]) {
  if constexpr (VECTOR) {
    constexpr int K = kVec16<TT>;
    static_assert(N % K == 0, "table access must be whole 16-byte pieces");
#pragma unroll
    for (int q = 0; q < N / K; ++q) {
      const Packed<TT, K> v = load_cached<TT, K>(p + q * K);
#pragma unroll
      for (int i = 0; i < K; ++i) f[q * K + i] = to_f32(v.v[i]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) f[i] = to_f32(p[i]);
  }
}

// Normalise (scale, weight) then rotate one chunk held in registers, and store it.
//   a: the chunk (interleaved) or its first half (split); b: the second half (split only).
template <typename T, typename TT, bool SPLIT, int N, bool VECTOR>
__device__ __forceinline__ void rotate_store(const Params<T, TT>& p, T* orow, const TT* crow,
                                             const TT* srow, const ChunkPos<SPLIT, N>& c,
                                             const Packed<T, N>& a, const Packed<T, N>& b,
                                             float scale) {
  float ya[N], yb[N], co[N], si[N];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    ya[i] = to_f32(a.v[i]) * scale;
    yb[i] = SPLIT ? to_f32(b.v[i]) * scale : 0.f;
  }
  if (p.w != nullptr) {
    float wa[N];
    load_f32<T, N, VECTOR>(p.w + c.x0, wa);
#pragma unroll
    for (int i = 0; i < N; ++i) ya[i] *= wa[i];
    if constexpr (SPLIT) {
      float wb[N];
      load_f32<T, N, VECTOR>(p.w + c.x1, wb);
#pragma unroll
      for (int i = 0; i < N; ++i) yb[i] *= wb[i];
    }
  }
  load_f32<TT, N, VECTOR>(crow + int64_t(c.head) * p.cs.h + c.j, co);
  load_f32<TT, N, VECTOR>(srow + int64_t(c.head) * p.ss.h + c.j, si);
  Packed<T, N> oa, ob;
  if constexpr (SPLIT) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
      oa.v[i] = from_f32<T>(ya[i] * co[i] - yb[i] * si[i]);
      ob.v[i] = from_f32<T>(yb[i] * co[i] + ya[i] * si[i]);
    }
    store_x<T, N, VECTOR>(orow + c.x0, oa);
    store_x<T, N, VECTOR>(orow + c.x1, ob);
  } else {
    static_assert(SPLIT || N % 2 == 0, "interleaved chunks hold whole pairs");
#pragma unroll
    for (int i = 0; i < N; i += 2) {
      oa.v[i] = from_f32<T>(ya[i] * co[i] - ya[i + 1] * si[i]);
      oa.v[i + 1] = from_f32<T>(ya[i] * si[i + 1] + ya[i + 1] * co[i + 1]);
    }
    store_x<T, N, VECTOR>(orow + c.x0, oa);
  }
}

template <typename T, int N>
__device__ __forceinline__ float sum_sq(const Packed<T, N>& v) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const float f = to_f32(v.v[i]);
    s += f * f;
  }
  return s;
}

// Threads per row: 32 (WARP_ROWS) or blockDim.x. Thread tid owns chunks tid + k * tpr, k < NV.
template <typename T, typename TT, bool SPLIT, int N, int NV, bool WARP_ROWS>
__global__ void __launch_bounds__(WARP_ROWS ? 128 : 256) norm_rope_regs(const Params<T, TT> p) {
  __shared__ float smem[32];
  const int tpr = WARP_ROWS ? 32 : blockDim.x;
  const int tid = WARP_ROWS ? (threadIdx.x & 31) : threadIdx.x;
  const int rows_per_block = WARP_ROWS ? (blockDim.x >> 5) : 1;
  const int row_in_block = WARP_ROWS ? (threadIdx.x >> 5) : 0;
  const int nch = chunks_per_row<N, SPLIT>(p.cols);

  // Uniform per block in the block-per-row case (barriers inside block_sum).
  for (int64_t item = int64_t(blockIdx.x) * rows_per_block + row_in_block; item < p.rows;
       item += int64_t(gridDim.x) * rows_per_block) {
    int64_t row, b, s;
    row_coords(p, item, row, b, s);
    const T* xr = p.x + row * p.x_stride;
    Packed<T, N> va[NV];
    Packed<T, N> vb[SPLIT ? NV : 1];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = tid + k * tpr;
      if (i < nch) {
        const ChunkPos<SPLIT, N> c(i, p.head_dim);
        va[k] = load_x<T, N, true, true>(xr + c.x0);
        ss += sum_sq(va[k]);
        if constexpr (SPLIT) {
          vb[k] = load_x<T, N, true, true>(xr + c.x1);
          ss += sum_sq(vb[k]);
        }
      }
    }
    ss = WARP_ROWS ? warp_sum(ss) : block_sum(ss, smem);
    const float rstd = rsqrtf(ss / float(p.cols) + p.eps);
    const TT* crow = p.cos + b * p.cs.b + s * p.cs.s;
    const TT* srow = p.sin + b * p.ss.b + s * p.ss.s;
    T* orow = p.out + row * p.out_stride;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = tid + k * tpr;
      if (i < nch) {
        const ChunkPos<SPLIT, N> c(i, p.head_dim);
        rotate_store<T, TT, SPLIT, N, true>(p, orow, crow, srow, c, va[k], vb[SPLIT ? k : 0], rstd);
      }
    }
  }
}

// Any width, either access path: one block per row, two passes over the row.
template <typename T, typename TT, bool SPLIT, int N, bool VECTOR>
__global__ void __launch_bounds__(512) norm_rope_loop(const Params<T, TT> p) {
  __shared__ float smem[32];
  const int nch = chunks_per_row<N, SPLIT>(p.cols);
  for (int64_t item = blockIdx.x; item < p.rows; item += gridDim.x) {  // uniform per block
    int64_t row, b, s;
    row_coords(p, item, row, b, s);
    const T* xr = p.x + row * p.x_stride;
    float ss = 0.f;
    for (int i = threadIdx.x; i < nch; i += blockDim.x) {
      const ChunkPos<SPLIT, N> c(i, p.head_dim);
      ss += sum_sq(load_x<T, N, VECTOR, false>(xr + c.x0));
      if constexpr (SPLIT) ss += sum_sq(load_x<T, N, VECTOR, false>(xr + c.x1));
    }
    ss = block_sum(ss, smem);  // ends with a barrier: all reads above precede any write below
    const float rstd = rsqrtf(ss / float(p.cols) + p.eps);
    const TT* crow = p.cos + b * p.cs.b + s * p.cs.s;
    const TT* srow = p.sin + b * p.ss.b + s * p.ss.s;
    T* orow = p.out + row * p.out_stride;
    for (int i = threadIdx.x; i < nch; i += blockDim.x) {
      const ChunkPos<SPLIT, N> c(i, p.head_dim);
      const Packed<T, N> a = load_x<T, N, VECTOR, true>(xr + c.x0);
      Packed<T, N> bv = a;
      if constexpr (SPLIT) bv = load_x<T, N, VECTOR, true>(xr + c.x1);
      rotate_store<T, TT, SPLIT, N, VECTOR>(p, orow, crow, srow, c, a, bv, rstd);
    }
  }
}

// Rotation alone: one thread per chunk (p.w is nullptr, scale 1).
template <typename T, typename TT, bool SPLIT, int N, bool VECTOR>
__global__ void __launch_bounds__(256) rope_flat(const Params<T, TT> p) {
  const int nch = chunks_per_row<N, SPLIT>(p.cols);
  const int64_t total = p.rows * int64_t(nch);
  for (int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; g < total;
       g += int64_t(gridDim.x) * blockDim.x) {
    const int64_t item = g / nch;
    const int k = int(g - item * nch);
    int64_t row, b, s;
    row_coords(p, item, row, b, s);
    const ChunkPos<SPLIT, N> c(k, p.head_dim);
    const T* xr = p.x + row * p.x_stride;
    const Packed<T, N> a = load_x<T, N, VECTOR, true>(xr + c.x0);
    Packed<T, N> bv = a;
    if constexpr (SPLIT) bv = load_x<T, N, VECTOR, true>(xr + c.x1);
    rotate_store<T, TT, SPLIT, N, VECTOR>(p, p.out + row * p.out_stride,
                                          p.cos + b * p.cs.b + s * p.cs.s,
                                          p.sin + b * p.ss.b + s * p.ss.s, c, a, bv, 1.f);
  }
}

}  // namespace rope_detail
}  // namespace ltx_kernels
