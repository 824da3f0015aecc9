// Sequence-parallel copy kernels and the IPC barrier (layouts: distributed/distributed_params.h).
//
// One token (all its rows) is handled by `tpt` consecutive threads of a 256-thread block; each
// thread moves up to 4 words of V bytes per token, issuing all its loads before its stores (ILP),
// so a block covers 256 / tpt tokens. Index math: one 64-bit division per token, 32-bit ones per
// word. Bytes moved per call: 2 * B * T * H * D * elem_size (read once, written once).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/distributed/distributed_params.h"
#include "ltx_kernels/common/vec.cuh"

namespace ltx_kernels {
namespace distributed_detail {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

struct FlagPtrs {
  uint32_t* flags[kSpMaxWorld];
};

__device__ __forceinline__ bool stopped(const int* status) {
  return status != nullptr && *reinterpret_cast<const volatile int*>(status) != 0;
}

template <int V>
__device__ __forceinline__ void copy_word(char* dst, const char* src) {
  store_stream<uint8_t, V>(reinterpret_cast<uint8_t*>(dst),
                           load_stream<uint8_t, V>(reinterpret_cast<const uint8_t*>(src)));
}

// X [B, T, H, D] <-> head groups. TO_BUF: X -> groups; else groups -> X.
template <int V, bool TO_BUF>
__global__ void __launch_bounds__(kThreads, 4)
    heads_kernel(const __grid_constant__ SpHeadsLayout l, char* x, int wpr, int tpt_log2,
                 const int* status) {
  if (stopped(status)) return;
  const int tpt = 1 << tpt_log2;
  const int lane = int(threadIdx.x) & (tpt - 1);
  const int64_t per_block = kThreads >> tpt_log2;
  const int64_t tokens = l.B * l.T;
  const int Hl = int(l.H / l.W);
  const int wpt = int(l.H) * wpr;  // words per token
  const int64_t row_bytes = int64_t(wpr) * V;
  for (int64_t tok = int64_t(blockIdx.x) * per_block + (threadIdx.x >> tpt_log2); tok < tokens;
       tok += int64_t(gridDim.x) * per_block) {
    const int64_t b = tok / l.T, t = tok - b * l.T;
    char* xt = x + b * l.sb + t * l.st;                      // (H, D) of this token
    const int64_t brow = (b * l.buf_T + l.t0 + t) * Hl;      // first row of the token in a group
    for (int j0 = lane; j0 < wpt; j0 += kUnroll * tpt) {
      Packed<uint8_t, V> v[kUnroll];
      char* dst[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int j = j0 + u * tpt;
        dst[u] = nullptr;
        if (j < wpt) {
          const int h = j / wpr, k = j - h * wpr;
          const int w = h / Hl, hl = h - w * Hl;
          char* xp = xt + h * l.sh + int64_t(k) * V;
          char* bp = l.group[w] + (brow + hl) * row_bytes + int64_t(k) * V;
          const char* src = TO_BUF ? xp : bp;
          dst[u] = TO_BUF ? bp : xp;
          v[u] = load_stream<uint8_t, V>(reinterpret_cast<const uint8_t*>(src));
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (dst[u] != nullptr) store_stream<uint8_t, V>(reinterpret_cast<uint8_t*>(dst[u]), v[u]);
    }
  }
}

// Y [B, T_total, Hl, D] <-> token segments. TO_BUF: Y -> segments; else segments -> Y.
template <int V, bool TO_BUF>
__global__ void __launch_bounds__(kThreads, 4)
    tokens_kernel(const __grid_constant__ SpTokensLayout l, char* y, int wpr, int tpt_log2,
                  const int* status) {
  if (stopped(status)) return;
  const int tpt = 1 << tpt_log2;
  const int lane = int(threadIdx.x) & (tpt - 1);
  const int64_t per_block = kThreads >> tpt_log2;
  const int64_t tokens = l.B * l.T;
  const int wpt = int(l.Hl) * wpr;
  const int64_t row_bytes = int64_t(wpr) * V;
  for (int64_t tok = int64_t(blockIdx.x) * per_block + (threadIdx.x >> tpt_log2); tok < tokens;
       tok += int64_t(gridDim.x) * per_block) {
    const int64_t b = tok / l.T, tt = tok - b * l.T;
    // segment of token tt: the largest s with prefix[s] <= tt (empty segments are skipped since
    // prefix[s + 1] > tt for the one found)
    int lo = 0, hi = int(l.W) - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (l.prefix[mid] <= tt) lo = mid;
      else hi = mid - 1;
    }
    const int s = lo;
    const int64_t t = tt - l.prefix[s];
    char* yt = y + b * l.sb + tt * l.st;
    char* st = l.seg[s] + (b * l.seg_T[s] + t) * l.seg_hs * row_bytes;
    for (int j0 = lane; j0 < wpt; j0 += kUnroll * tpt) {
      Packed<uint8_t, V> v[kUnroll];
      char* dst[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int j = j0 + u * tpt;
        dst[u] = nullptr;
        if (j < wpt) {
          const int hl = j / wpr, k = j - hl * wpr;
          char* yp = yt + hl * l.sh + int64_t(k) * V;
          char* bp = st + hl * row_bytes + int64_t(k) * V;
          const char* src = TO_BUF ? yp : bp;
          dst[u] = TO_BUF ? bp : yp;
          v[u] = load_stream<uint8_t, V>(reinterpret_cast<const uint8_t*>(src));
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (dst[u] != nullptr) store_stream<uint8_t, V>(reinterpret_cast<uint8_t*>(dst[u]), v[u]);
    }
  }
}

__device__ __forceinline__ uint64_t globaltimer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void st_release_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t ld_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// One block of kSpMaxWorld threads; thread i signals rank i and waits for rank i.
__global__ void barrier_kernel(const __grid_constant__ FlagPtrs p, int rank, int world,
                               int* status, uint64_t timeout_ns) {
  __shared__ uint32_t epoch;
  __shared__ int missing;
  __shared__ int failed_before;
  uint32_t* mine = p.flags[rank];
  if (threadIdx.x == 0) {
    volatile uint32_t* counter = mine + kSpMaxWorld;  // only this rank's kernels touch it
    epoch = *counter + 1u;
    *counter = epoch;
    missing = world;
    failed_before = *reinterpret_cast<volatile int*>(status) != 0;
  }
  __syncthreads();
  const uint32_t e = epoch;
  const int i = int(threadIdx.x);
  if (i < world && !failed_before) {
    __threadfence_system();  // this rank's earlier stores (previous kernels) before the flag
    st_release_sys(p.flags[i] + rank, e);
    const uint64_t start = globaltimer_ns();
    while (true) {
      const uint32_t v = ld_acquire_sys(mine + i);
      if (int32_t(v - e) >= 0) break;
      if (globaltimer_ns() - start > timeout_ns) {
        atomicMin(&missing, i);
        break;
      }
      __nanosleep(256);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0 && missing < world && !failed_before) *status = 1 + missing;
}

}  // namespace distributed_detail
}  // namespace ltx_kernels
