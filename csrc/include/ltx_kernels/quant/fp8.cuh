// FP8 quantization kernels. Element rule and codec: common/fp8_util.h (GPU uses the integer
// encoder fp8_encode_fast, bit-identical to formats.h's minifloat_encode for every float).
// Bytes: quantizers read x once (sizeof(T) per element) and write one byte per element plus
// 4 bytes per scale; dequantizers read one byte (+ the scale, cached) and write sizeof(T).
//
// quant_group_regs: per-token groups held in registers. TPG lanes of a warp own one group
//     (TPG = next power of two >= group / VEC, at most 32), so a warp quantizes 32 / TPG
//     groups at once: amax by xor shuffles inside the TPG lanes, then encode from registers.
// quant_group_loop: groups too large for registers (or odd shapes): one warp per group, two
//     passes (the second mostly from L1/L2).
// quant_block_regs: one CTA per (block_n x block_k) tile, the tile in registers (NV accesses
//     per thread), amax by block reduction, then encode.
// quant_block_loop: tiles too large for registers: two passes.
// amax_kernel / finalize_scale / quant_scaled: per tensor (grid reduction by atomicMax on the
//     bits of non-negative floats, scale = amax / fmax, then encode with that device scale).
// dequant: one kernel for all granularities, the 256-entry decode table in shared memory.
#pragma once

#include "ltx_kernels/common/fp8_util.h"
#include "ltx_kernels/common/reduce.cuh"
#include "ltx_kernels/common/vec.cuh"

namespace ltx_kernels {
namespace fp8_detail {

// warp_max / block_max: common/reduce.cuh

// a / b for non-negative a, b; 32-bit when the kernel's index space fits (a 64-bit division
// costs ~70 instructions, more than quantizing the 8-16 elements it locates).
__device__ __forceinline__ int64_t div_idx(int64_t a, int64_t b, bool fits32) {
  return fits32 ? int64_t(uint32_t(a) / uint32_t(b)) : a / b;
}

template <int VEC>
__device__ __forceinline__ void store_codes(uint8_t* p, const Packed<uint8_t, VEC>& c) {
  *reinterpret_cast<Packed<uint8_t, VEC>*>(p) = c;
}

// x: [rows, gpr * group] (row stride xs); q likewise (row stride qs); sc[r*s_row + g*s_col].
template <typename T, class F, int VEC, int NV, int TPG>
__global__ void __launch_bounds__(256)
    quant_group_regs(uint8_t* __restrict__ q, int64_t qs, float* __restrict__ sc, int64_t s_row,
                     int64_t s_col, const T* __restrict__ x, int64_t xs, int64_t rows,
                     int64_t gpr, int group) {
  constexpr int GPW = 32 / TPG;  // groups per warp
  const int lane = threadIdx.x & 31;
  const int sub = lane / TPG;
  const int t = lane % TPG;
  const int nvec = group / VEC;
  const int64_t total = rows * gpr;
  const int64_t wpb = blockDim.x >> 5;
  const int64_t step = int64_t(gridDim.x) * wpb * GPW;
  const bool fits32 = total + step <= int64_t(UINT32_MAX);
  // `base` is warp-uniform, so every lane reaches the shuffles together.
  for (int64_t base = (int64_t(blockIdx.x) * wpb + (threadIdx.x >> 5)) * GPW; base < total;
       base += step) {
    const int64_t g = base + sub;
    const bool valid = g < total;
    const int64_t r = valid ? div_idx(g, gpr, fits32) : 0;
    const int64_t gi = valid ? g - r * gpr : 0;
    const T* xg = x + r * xs + gi * group;
    Packed<T, VEC> v[NV];
    float m = 0.f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = t + k * TPG;
      if (valid && i < nvec) {
        v[k] = load_stream<T, VEC>(xg + int64_t(i) * VEC);
#pragma unroll
        for (int j = 0; j < VEC; ++j) m = fp8_absmax(m, to_f32(v[k].v[j]));
      }
    }
    m = warp_max(m, TPG);
    const float s = fp8_scale_from_amax<F>(m);
    const Fp8Divisor dv = fp8_divisor(s);
    if (valid) {
      uint8_t* qg = q + r * qs + gi * group;
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int i = t + k * TPG;
        if (i < nvec) {
          Packed<uint8_t, VEC> c;
#pragma unroll
          for (int j = 0; j < VEC; ++j) c.v[j] = fp8_quantize_div<F>(to_f32_keep_nan_sign(v[k].v[j]), dv);
          store_codes<VEC>(qg + int64_t(i) * VEC, c);
        }
      }
      if (t == 0) sc[r * s_row + gi * s_col] = s;
    }
  }
}

// One warp per group, two passes; any group size.
template <typename T, class F, int VEC>
__global__ void __launch_bounds__(256)
    quant_group_loop(uint8_t* __restrict__ q, int64_t qs, float* __restrict__ sc, int64_t s_row,
                     int64_t s_col, const T* __restrict__ x, int64_t xs, int64_t rows,
                     int64_t gpr, int group) {
  const int lane = threadIdx.x & 31;
  const int nvec = group / VEC;
  const int64_t total = rows * gpr;
  const int64_t wpb = blockDim.x >> 5;
  const bool fits32 = total + int64_t(gridDim.x) * wpb <= int64_t(UINT32_MAX);
  for (int64_t g = int64_t(blockIdx.x) * wpb + (threadIdx.x >> 5); g < total;
       g += int64_t(gridDim.x) * wpb) {
    const int64_t r = div_idx(g, gpr, fits32);
    const int64_t gi = g - r * gpr;
    const T* xg = x + r * xs + gi * group;
    float m = 0.f;
    for (int i = lane; i < nvec; i += 32) {
      const Packed<T, VEC> v = load_cached<T, VEC>(xg + int64_t(i) * VEC);
#pragma unroll
      for (int j = 0; j < VEC; ++j) m = fp8_absmax(m, to_f32(v.v[j]));
    }
    m = warp_max(m, 32);
    const float s = fp8_scale_from_amax<F>(m);
    const Fp8Divisor dv = fp8_divisor(s);
    uint8_t* qg = q + r * qs + gi * group;
    for (int i = lane; i < nvec; i += 32) {
      const Packed<T, VEC> v = load_stream<T, VEC>(xg + int64_t(i) * VEC);
      Packed<uint8_t, VEC> c;
#pragma unroll
      for (int j = 0; j < VEC; ++j) c.v[j] = fp8_quantize_div<F>(to_f32_keep_nan_sign(v.v[j]), dv);
      store_codes<VEC>(qg + int64_t(i) * VEC, c);
    }
    if (lane == 0) sc[r * s_row + gi * s_col] = s;
  }
}

struct BlockArgs {
  int64_t rows, cols;      // w: [rows, cols]
  int64_t bn, bk;          // tile
  int64_t tiles_k, tiles;  // ceil(cols / bk), total tiles
};

// One CTA per tile (grid-stride over tiles, CTA-uniform), the tile in registers.
template <typename T, class F, int VEC, int NV>
__global__ void __launch_bounds__(512, 2)
    quant_block_regs(uint8_t* __restrict__ q, int64_t qs, float* __restrict__ sc, int64_t s_row,
                     int64_t s_col, const T* __restrict__ w, int64_t ws, BlockArgs a) {
  __shared__ float smem[32];
  for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    const int64_t tb = tile / a.tiles_k;
    const int64_t tc = tile - tb * a.tiles_k;
    const int64_t r0 = tb * a.bn, c0 = tc * a.bk;
    const int h = int(a.bn < a.rows - r0 ? a.bn : a.rows - r0);
    const int cpr = int((a.bk < a.cols - c0 ? a.bk : a.cols - c0) / VEC);
    const int nch = h * cpr;
    Packed<T, VEC> v[NV];
    float m = 0.f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = threadIdx.x + k * blockDim.x;
      if (i < nch) {
        const int rr = i / cpr, cc = i - rr * cpr;
        v[k] = load_stream<T, VEC>(w + (r0 + rr) * ws + c0 + int64_t(cc) * VEC);
#pragma unroll
        for (int j = 0; j < VEC; ++j) m = fp8_absmax(m, to_f32(v[k].v[j]));
      }
    }
    m = block_max(m, smem);
    const float s = fp8_scale_from_amax<F>(m);
    const Fp8Divisor dv = fp8_divisor(s);
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = threadIdx.x + k * blockDim.x;
      if (i < nch) {
        const int rr = i / cpr, cc = i - rr * cpr;
        Packed<uint8_t, VEC> c;
#pragma unroll
        for (int j = 0; j < VEC; ++j) c.v[j] = fp8_quantize_div<F>(to_f32_keep_nan_sign(v[k].v[j]), dv);
        store_codes<VEC>(q + (r0 + rr) * qs + c0 + int64_t(cc) * VEC, c);
      }
    }
    if (threadIdx.x == 0) sc[tb * s_row + tc * s_col] = s;
  }
}

// Any tile size: two passes per tile.
template <typename T, class F, int VEC>
__global__ void __launch_bounds__(256)
    quant_block_loop(uint8_t* __restrict__ q, int64_t qs, float* __restrict__ sc, int64_t s_row,
                     int64_t s_col, const T* __restrict__ w, int64_t ws, BlockArgs a) {
  __shared__ float smem[32];
  for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    const int64_t tb = tile / a.tiles_k;
    const int64_t tc = tile - tb * a.tiles_k;
    const int64_t r0 = tb * a.bn, c0 = tc * a.bk;
    const int64_t h = a.bn < a.rows - r0 ? a.bn : a.rows - r0;
    const int64_t cpr = (a.bk < a.cols - c0 ? a.bk : a.cols - c0) / VEC;
    const int64_t nch = h * cpr;
    float m = 0.f;
    for (int64_t i = threadIdx.x; i < nch; i += blockDim.x) {
      const int64_t rr = i / cpr, cc = i - rr * cpr;
      const Packed<T, VEC> v = load_cached<T, VEC>(w + (r0 + rr) * ws + c0 + cc * VEC);
#pragma unroll
      for (int j = 0; j < VEC; ++j) m = fp8_absmax(m, to_f32(v.v[j]));
    }
    m = block_max(m, smem);
    const float s = fp8_scale_from_amax<F>(m);
    const Fp8Divisor dv = fp8_divisor(s);
    for (int64_t i = threadIdx.x; i < nch; i += blockDim.x) {
      const int64_t rr = i / cpr, cc = i - rr * cpr;
      const Packed<T, VEC> v = load_stream<T, VEC>(w + (r0 + rr) * ws + c0 + cc * VEC);
      Packed<uint8_t, VEC> c;
#pragma unroll
      for (int j = 0; j < VEC; ++j) c.v[j] = fp8_quantize_div<F>(to_f32_keep_nan_sign(v.v[j]), dv);
      store_codes<VEC>(q + (r0 + rr) * qs + c0 + cc * VEC, c);
    }
    if (threadIdx.x == 0) sc[tb * s_row + tc * s_col] = s;
  }
}

// amax over x[0, n) into *amax_bits (pre-zeroed): non-negative floats order like their bits.
template <typename T, int VEC>
__global__ void __launch_bounds__(256)
    amax_kernel(unsigned int* __restrict__ amax_bits, const T* __restrict__ x, int64_t n) {
  __shared__ float smem[32];
  float m = 0.f;
  const int64_t nv = n / VEC;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < nv;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Packed<T, VEC> v = load_cached<T, VEC>(x + i * VEC);
#pragma unroll
    for (int j = 0; j < VEC; ++j) m = fp8_absmax(m, to_f32(v.v[j]));
  }
  m = block_max(m, smem);
  if (threadIdx.x == 0) atomicMax(amax_bits, __float_as_uint(m));
}

template <class F>
__global__ void finalize_scale(float* scale) {
  scale[0] = fp8_scale_from_amax<F>(__uint_as_float(*reinterpret_cast<unsigned int*>(scale)));
}

template <typename T, class F, int VEC>
__global__ void __launch_bounds__(256)
    quant_scaled(uint8_t* __restrict__ q, const float* __restrict__ scale, const T* __restrict__ x,
                 int64_t n) {
  const float s = __ldg(scale);
  const Fp8Divisor dv = fp8_divisor(s);
  const int64_t nv = n / VEC;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < nv;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Packed<T, VEC> v = load_stream<T, VEC>(x + i * VEC);
    Packed<uint8_t, VEC> c;
#pragma unroll
    for (int j = 0; j < VEC; ++j) c.v[j] = fp8_quantize_div<F>(to_f32_keep_nan_sign(v.v[j]), dv);
    store_codes<VEC>(q + i * VEC, c);
  }
}

// out[r, c] = decode(q[r, c]) * sc[(r / br) * s_row + (c / bc) * s_col]; VEC divides bc.
// Rows on grid.y (grid-stride), VEC-wide column chunks on grid.x: no 64-bit division per element.
template <typename T, class F, int VEC>
__global__ void __launch_bounds__(256)
    dequant(T* __restrict__ out, int64_t os, const uint8_t* __restrict__ q, int64_t qs,
            const float* __restrict__ sc, int64_t s_row, int64_t s_col, int64_t rows, int cols,
            int64_t br, int bc) {
  __shared__ float table[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) table[i] = minifloat_decode<F>(uint8_t(i));
  __syncthreads();
  const int cpr = cols / VEC;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* srow = sc + (r / br) * s_row;
    const uint8_t* qrow = q + r * qs;
    T* orow = out + r * os;
    for (int v = blockIdx.x * blockDim.x + threadIdx.x; v < cpr; v += gridDim.x * blockDim.x) {
      const int c = v * VEC;
      const float s = __ldg(srow + int64_t(c / bc) * s_col);
      const Packed<uint8_t, VEC> cq = *reinterpret_cast<const Packed<uint8_t, VEC>*>(qrow + c);
      Packed<T, VEC> o;
#pragma unroll
      for (int j = 0; j < VEC; ++j) o.v[j] = from_f32<T>(table[cq.v[j]] * s);
      store_stream<T, VEC>(orow + c, o);
    }
  }
}

}  // namespace fp8_detail
}  // namespace ltx_kernels
