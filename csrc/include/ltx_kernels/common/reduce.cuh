// Warp and block sum reductions in fp32.
#pragma once

#include <cuda_runtime.h>

namespace ltx_kernels {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024). Every thread gets
// the result. `smem` holds 32 floats; the call ends with a barrier so it may be reused.
__device__ __forceinline__ float block_sum(float v, float* smem) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  v = warp_sum(v);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  float t = lane < nwarps ? smem[lane] : 0.f;
  t = warp_sum(t);
  __syncthreads();
  return t;
}

// Max over groups of `width` lanes (a power of two <= 32, aligned groups); NaN-ignoring as fmaxf.
__device__ __forceinline__ float warp_max(float v, int width = 32) {
  for (int o = width >> 1; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Max over the block of NON-NEGATIVE values (absolute maxima: idle warps contribute 0).
// blockDim.x a multiple of 32; every thread gets the result; ends with a barrier.
__device__ __forceinline__ float block_max(float v, float* smem) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  v = warp_max(v);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  float t = lane < int(blockDim.x >> 5) ? smem[lane] : 0.f;
  t = warp_max(t);
  __syncthreads();
  return t;
}

}  // namespace ltx_kernels
