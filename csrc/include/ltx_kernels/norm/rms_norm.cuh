// RMSNorm kernels. DRAM bytes per row: read cols*sizeof(T), write cols*sizeof(T); the weight is
// re-read for every row through the read-only path, where it stays in L1/L2 (DRAM traffic once
// per call, not per row).
//
// rms_norm_regs: the whole row lives in registers (NV accesses of VEC elements per thread), so
//     x is read from memory exactly once; one warp per row (4 rows per block) or one block
//     per row. The launcher (rms_norm.cu) picks the shape.
// rms_norm_loop: rows too wide for registers: two passes, the second mostly from L2.
#pragma once

#include "ltx_kernels/common/reduce.cuh"
#include "ltx_kernels/common/vec.cuh"

namespace ltx_kernels {
namespace norm_detail {

// Threads per row is 32 (WARP_ROWS) or blockDim.x. Each thread owns accesses
// tid + k * threads_per_row, k < NV, each of VEC elements.
template <typename T, int VEC, int NV, bool WARP_ROWS, bool PRELOAD_W>
__global__ void __launch_bounds__(WARP_ROWS ? 128 : 256) rms_norm_regs(T* __restrict__ out, int64_t out_stride,
                                                      const T* __restrict__ x, int64_t x_stride,
                                                      const T* __restrict__ w, int64_t rows,
                                                      int cols, float eps) {
  __shared__ float smem[32];
  const int tpr = WARP_ROWS ? 32 : blockDim.x;
  const int tid = WARP_ROWS ? (threadIdx.x & 31) : threadIdx.x;
  const int rows_per_block = WARP_ROWS ? (blockDim.x >> 5) : 1;
  const int row_in_block = WARP_ROWS ? (threadIdx.x >> 5) : 0;
  const int nvec = cols / VEC;  // cols % VEC == 0 on this path

  for (int64_t row = int64_t(blockIdx.x) * rows_per_block + row_in_block; row < rows;
       row += int64_t(gridDim.x) * rows_per_block) {
    const T* xr = x + row * x_stride;
    Packed<T, VEC> v[NV];
    // PRELOAD_W: the weight is issued with x, so no dependent load sits between reduce and
    // store (pays on small problems, which are latency bound); otherwise it is loaded at the
    // store, which keeps registers (and occupancy) for the bandwidth-bound large problems.
    constexpr bool kPreloadW = PRELOAD_W;
    Packed<T, VEC> wv[NV];
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = tid + k * tpr;
      if (i < nvec) {
        v[k] = load_stream<T, VEC>(xr + int64_t(i) * VEC);
        if (kPreloadW && w != nullptr) wv[k] = load_cached<T, VEC>(w + int64_t(i) * VEC);
      }
    }
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      if (tid + k * tpr < nvec) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float f = to_f32(v[k].v[j]);
          ss += f * f;
        }
      }
    }
    ss = WARP_ROWS ? warp_sum(ss) : block_sum(ss, smem);
    const float rstd = rsqrtf(ss / float(cols) + eps);
    T* orow = out + row * out_stride;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = tid + k * tpr;
      if (i < nvec) {
        if (!kPreloadW && w != nullptr) wv[k] = load_cached<T, VEC>(w + int64_t(i) * VEC);
        Packed<T, VEC> o;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float wj = w != nullptr ? to_f32(wv[k].v[j]) : 1.f;
          o.v[j] = from_f32<T>(to_f32(v[k].v[j]) * rstd * wj);
        }
        store_stream<T, VEC>(orow + int64_t(i) * VEC, o);
      }
    }
  }
}

// Any width: one block per row, two passes over the row.
template <typename T, int VEC>
__global__ void __launch_bounds__(512) rms_norm_loop(T* __restrict__ out, int64_t out_stride,
                                                      const T* __restrict__ x, int64_t x_stride,
                                                      const T* __restrict__ w, int64_t rows,
                                                      int cols, float eps) {
  __shared__ float smem[32];
  const int nvec = cols / VEC;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * x_stride;
    float ss = 0.f;
    for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
      Packed<T, VEC> v = load_cached<T, VEC>(xr + int64_t(i) * VEC);
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float f = to_f32(v.v[j]);
        ss += f * f;
      }
    }
    ss = block_sum(ss, smem);
    const float rstd = rsqrtf(ss / float(cols) + eps);
    T* orow = out + row * out_stride;
    for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
      Packed<T, VEC> v = load_stream<T, VEC>(xr + int64_t(i) * VEC);
      Packed<T, VEC> wv;
      if (w != nullptr) wv = load_cached<T, VEC>(w + int64_t(i) * VEC);
      Packed<T, VEC> o;
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float wj = w != nullptr ? to_f32(wv.v[j]) : 1.f;
        o.v[j] = from_f32<T>(to_f32(v.v[j]) * rstd * wj);
      }
      store_stream<T, VEC>(orow + int64_t(i) * VEC, o);
    }
  }
}

}  // namespace norm_detail
}  // namespace ltx_kernels
