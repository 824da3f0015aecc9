// FP8 quantization kernels. Element rule and codec: common/fp8_util.h (sm_89+ encode with the
// hardware conversion, two elements at a time where the scale is the group's own
// (fp8_quantize_bounded); older GPUs with the integer encoder fp8_encode_fast; both
// bit-identical to formats.h's minifloat_encode).
// Bytes: quantizers read x once (sizeof(T) per element) and write one byte per element plus
// 4 bytes per scale; dequantizers read one byte (+ the scale, cached) and write sizeof(T).
//
// quant_group_regs: per-token groups held in registers. TPG lanes of a warp own one group, NV
//     16-byte accesses each (the launcher fills NV up to 4 before it adds lanes), so a warp
//     quantizes 32 / TPG groups at once: amax by xor shuffles inside the TPG lanes, then
//     encode from registers.
// quant_group_loop: groups too large for registers (or odd shapes): one warp per group, two
//     passes (the second mostly from L1/L2).
// quant_block_regs: one CTA per (block_n x block_k) tile, the tile in registers (NV accesses
//     per thread), amax by block reduction, then encode.
// quant_block_loop: tiles too large for registers: two passes.
// amax_kernel / finalize_scale / quant_scaled: per tensor (grid reduction by atomicMax on the
//     bits of non-negative floats, scale = amax / fmax, then encode with that device scale).
// dequant: one kernel for all granularities: the hardware fp8x2 -> f16x2 conversion, the
//     256-entry decode table in shared memory for chunks with a NaN code (and before sm_89).
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

// One chunk of a group whose scale came from the group's own amax (fp8_quantize_bounded:
// two elements per hardware conversion); odd widths take the per-element rule.
template <class F, typename T, int VEC>
__device__ __forceinline__ Packed<uint8_t, VEC> encode_chunk(const Packed<T, VEC>& v,
                                                             const Fp8Divisor& dv) {
  Packed<uint8_t, VEC> c;
  float f[VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) f[j] = to_f32_keep_nan_sign(v.v[j]);
  if constexpr (VEC % 2 == 0) {
    fp8_quantize_bounded<F, VEC>(f, dv, c.v);
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j) c.v[j] = fp8_quantize_div<F>(f[j], dv);
  }
  return c;
}

// x: [rows, gpr * group] (row stride xs); q likewise (row stride qs); sc[r*s_row + g*s_col].
// Grid-stride over warp-sized batches of groups with the next batch's loads issued before the
// current batch is encoded (ncu on the H200: without that overlap the kernel was latency bound,
// 38% of DRAM bandwidth at 43% occupancy with neither memory nor issue saturated).
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
  // group g -> (row, group in row); loads of its chunks into v (nothing for g >= total)
  auto locate = [&](int64_t g, int64_t& r, int64_t& gi) {
    r = g < total ? div_idx(g, gpr, fits32) : 0;
    gi = g < total ? g - r * gpr : 0;
  };
  auto load = [&](int64_t g, int64_t r, int64_t gi, Packed<T, VEC>(&v)[NV]) {
    const T* xg = x + r * xs + gi * group;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = t + k * TPG;
      if (g < total && i < nvec) v[k] = load_stream<T, VEC>(xg + int64_t(i) * VEC);
    }
  };
  // `base` is warp-uniform, so every lane reaches the shuffles together.
  int64_t base = (int64_t(blockIdx.x) * wpb + (threadIdx.x >> 5)) * GPW;
  int64_t g = base + sub, r, gi;
  locate(g, r, gi);
  Packed<T, VEC> v[NV];
  load(g, r, gi, v);
  for (; base < total; base += step) {
    const int64_t gn = base + step + sub;
    int64_t rn, gin;
    locate(gn, rn, gin);
    Packed<T, VEC> vn[NV];
    load(gn, rn, gin, vn);  // in flight while this batch is encoded
    float m = 0.f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = t + k * TPG;
      if (g < total && i < nvec) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) m = fp8_absmax(m, to_f32(v[k].v[j]));
      }
    }
    m = warp_max(m, TPG);
    const float s = fp8_scale_from_amax<F>(m);
    const Fp8Divisor dv = fp8_divisor(s);
    if (g < total) {
      uint8_t* qg = q + r * qs + gi * group;
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int i = t + k * TPG;
        if (i < nvec) store_codes<VEC>(qg + int64_t(i) * VEC, encode_chunk<F>(v[k], dv));
      }
      if (t == 0) sc[r * s_row + gi * s_col] = s;
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) v[k] = vn[k];
    g = gn;
    r = rn;
    gi = gin;
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
      store_codes<VEC>(qg + int64_t(i) * VEC, encode_chunk<F>(v, dv));
    }
    if (lane == 0) sc[r * s_row + gi * s_col] = s;
  }
}

struct BlockArgs {
  int64_t rows, cols;      // w: [rows, cols]
  int64_t bn, bk;          // tile
  int64_t tiles_k, tiles;  // ceil(cols / bk), total tiles
};

// Tile `tile` (row-major over the tiles): its indices (tb, tc), first element (r0, c0) and extent
// (h rows, cw columns; the last tile of a row or column is cut at the matrix edge).
struct BlockTile {
  int64_t tb, tc, r0, c0, h, cw;
};
__device__ __forceinline__ BlockTile block_tile(const BlockArgs& a, int64_t tile) {
  BlockTile t;
  t.tb = tile / a.tiles_k;
  t.tc = tile - t.tb * a.tiles_k;
  t.r0 = t.tb * a.bn;
  t.c0 = t.tc * a.bk;
  t.h = a.bn < a.rows - t.r0 ? a.bn : a.rows - t.r0;
  t.cw = a.bk < a.cols - t.c0 ? a.bk : a.cols - t.c0;
  return t;
}

// One CTA per tile (grid-stride over tiles, CTA-uniform), the tile in registers.
// (256, 3): a 128 x 128 tile is 256 threads x 8 (bf16) or 16 (fp32) accesses; at 3 CTAs per SM
// (ncu: the (512, 1) build used 111 registers, 2 CTAs, 21% of DRAM bandwidth). A thread's
// chunks are one column chunk in rows rr0, rr0 + rstep, ... whenever blockDim.x is a multiple of
// the chunks per tile row (no division per chunk).
template <typename T, class F, int VEC, int NV>
__global__ void __launch_bounds__(256, NV <= 8 ? 3 : 2)  // (16 fp32 accesses spill at 3)
    quant_block_regs(uint8_t* __restrict__ q, int64_t qs, float* __restrict__ sc, int64_t s_row,
                     int64_t s_col, const T* __restrict__ w, int64_t ws, BlockArgs a) {
  __shared__ float smem[32];
  for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    const BlockTile t = block_tile(a, tile);
    const int64_t r0 = t.r0, c0 = t.c0;
    const int h = int(t.h);
    const int cpr = int(t.cw / VEC);
    const int nch = h * cpr;
    const bool even = int(blockDim.x) % cpr == 0;
    const int rstep = int(blockDim.x) / cpr;
    const int rr0 = int(threadIdx.x) / cpr, cc0 = int(threadIdx.x) - rr0 * cpr;
    auto offset = [&](int k, int i, int64_t stride) {  // element offset of chunk i (= tid + k * blockDim)
      int rr = rr0 + k * rstep, cc = cc0;
      if (!even) {
        rr = i / cpr;
        cc = i - rr * cpr;
      }
      return (r0 + rr) * stride + c0 + int64_t(cc) * VEC;
    };
    Packed<T, VEC> v[NV];
    float m = 0.f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = threadIdx.x + k * blockDim.x;
      if (i < nch) {
        v[k] = load_stream<T, VEC>(w + offset(k, i, ws));
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
      if (i < nch) store_codes<VEC>(q + offset(k, i, qs), encode_chunk<F>(v[k], dv));
    }
    if (threadIdx.x == 0) sc[t.tb * s_row + t.tc * s_col] = s;
  }
}

// Any tile size: two passes per tile.
template <typename T, class F, int VEC>
__global__ void __launch_bounds__(256)
    quant_block_loop(uint8_t* __restrict__ q, int64_t qs, float* __restrict__ sc, int64_t s_row,
                     int64_t s_col, const T* __restrict__ w, int64_t ws, BlockArgs a) {
  __shared__ float smem[32];
  for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    const BlockTile t = block_tile(a, tile);
    const int64_t cpr = t.cw / VEC;
    const int64_t nch = t.h * cpr;
    float m = 0.f;
    for (int64_t i = threadIdx.x; i < nch; i += blockDim.x) {
      const int64_t rr = i / cpr, cc = i - rr * cpr;
      const Packed<T, VEC> v = load_cached<T, VEC>(w + (t.r0 + rr) * ws + t.c0 + cc * VEC);
#pragma unroll
      for (int j = 0; j < VEC; ++j) m = fp8_absmax(m, to_f32(v.v[j]));
    }
    m = block_max(m, smem);
    const float s = fp8_scale_from_amax<F>(m);
    const Fp8Divisor dv = fp8_divisor(s);
    for (int64_t i = threadIdx.x; i < nch; i += blockDim.x) {
      const int64_t rr = i / cpr, cc = i - rr * cpr;
      const Packed<T, VEC> v = load_stream<T, VEC>(w + (t.r0 + rr) * ws + t.c0 + cc * VEC);
      store_codes<VEC>(q + (t.r0 + rr) * qs + t.c0 + cc * VEC, encode_chunk<F>(v, dv));
    }
    if (threadIdx.x == 0) sc[t.tb * s_row + t.tc * s_col] = s;
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

// BOUNDED: the scale is the tensor's own amax / fmax (fp8_quantize_bounded); a given scale
// may make x / s overflow and takes the per-element rule.
template <typename T, class F, int VEC, bool BOUNDED>
__global__ void __launch_bounds__(256)
    quant_scaled(uint8_t* __restrict__ q, const float* __restrict__ scale, const T* __restrict__ x,
                 int64_t n) {
  const float s = __ldg(scale);
  const Fp8Divisor dv = fp8_divisor(s);
  const int64_t nv = n / VEC;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < nv;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Packed<T, VEC> v = load_stream<T, VEC>(x + i * VEC);
    if constexpr (BOUNDED) {
      store_codes<VEC>(q + i * VEC, encode_chunk<F>(v, dv));
    } else {
      Packed<uint8_t, VEC> c;
#pragma unroll
      for (int j = 0; j < VEC; ++j) c.v[j] = fp8_quantize_div<F>(to_f32_keep_nan_sign(v.v[j]), dv);
      store_codes<VEC>(q + i * VEC, c);
    }
  }
}

// decode(code) * s for VEC codes by the hardware conversion (cvt.rn.f16x2.{e4m3,e5m2}x2: every
// FP8 value is exact in fp16, hence in fp32), sm_89+ and VEC % 4 == 0. A chunk holding a NaN
// code (E4M3 0x7f/0xff; E5M2 0x7d-0x7f with either sign) returns false and takes the decode table,
// which keeps the NaN's sign (the conversion's NaN is canonical). Bit-identical to the table.
template <class F, int VEC, typename T>
__device__ __forceinline__ bool decode_chunk_hw(const Packed<uint8_t, VEC>& cq, float s,
                                                Packed<T, VEC>& o) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (VEC % 4 == 0) {
    constexpr uint32_t kNaNLow = F::kExp == 4 ? 0x7fu : 0x7du;  // smallest NaN magnitude code
    constexpr uint32_t kAdd = (0x80u - kNaNLow) * 0x01010101u;
    uint32_t w[VEC / 4];
    uint32_t nan = 0;
#pragma unroll
    for (int i = 0; i < VEC / 4; ++i) {
      w[i] = reinterpret_cast<const uint32_t*>(cq.v)[i];
      nan |= ((w[i] & 0x7f7f7f7fu) + kAdd) & 0x80808080u;  // a byte >= kNaNLow reaches 0x80
    }
    if (nan != 0) return false;
#pragma unroll
    for (int i = 0; i < VEC / 4; ++i) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const __half2_raw hr = __nv_cvt_fp8x2_to_halfraw2(
            __nv_fp8x2_storage_t(w[i] >> (16 * h)), F::kExp == 4 ? __NV_E4M3 : __NV_E5M2);
        const float2 f = __half22float2(__half2(hr));
        o.v[4 * i + 2 * h] = from_f32<T>(f.x * s);
        o.v[4 * i + 2 * h + 1] = from_f32<T>(f.y * s);
      }
    }
    return true;
  }
#endif
  return false;
}

// out[r, c] = decode(q[r, c]) * sc[(r / br) * s_row + (c / bc) * s_col]; VEC divides bc.
// Rows on grid.y (grid-stride), CPT VEC-wide column chunks per thread (all their code loads
// issued before any is decoded: more bytes in flight), no 64-bit division per element
// (ncu: the one-chunk-per-thread version spent 82% of the SM on index arithmetic).
// bc_shift: log2(bc) when bc is a power of two, else -1.
template <typename T, class F, int VEC, int CPT>
__global__ void __launch_bounds__(256)
    dequant(T* __restrict__ out, int64_t os, const uint8_t* __restrict__ q, int64_t qs,
            const float* __restrict__ sc, int64_t s_row, int64_t s_col, int64_t rows, int cols,
            int64_t br, int bc, int bc_shift) {
  __shared__ float table[256];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) table[i] = minifloat_decode<F>(uint8_t(i));
  __syncthreads();
  const int cpr = cols / VEC;
  const int span = int(blockDim.x) * CPT;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* srow = sc + (br == 1 ? r : r / br) * s_row;
    const uint8_t* qrow = q + r * qs;
    T* orow = out + r * os;
    for (int v0 = blockIdx.x * span + threadIdx.x; v0 < cpr; v0 += gridDim.x * span) {
      Packed<uint8_t, VEC> cq[CPT];
#pragma unroll
      for (int k = 0; k < CPT; ++k) {
        const int v = v0 + k * int(blockDim.x);
        if (v < cpr) cq[k] = *reinterpret_cast<const Packed<uint8_t, VEC>*>(qrow + v * VEC);
      }
#pragma unroll
      for (int k = 0; k < CPT; ++k) {
        const int v = v0 + k * int(blockDim.x);
        if (v < cpr) {
          const int c = v * VEC;
          const float s = __ldg(srow + int64_t(bc_shift >= 0 ? (c >> bc_shift) : (c / bc)) * s_col);
          Packed<T, VEC> o;
          if (!decode_chunk_hw<F, VEC>(cq[k], s, o)) {
#pragma unroll
            for (int j = 0; j < VEC; ++j) o.v[j] = from_f32<T>(table[cq[k].v[j]] * s);
          }
          store_stream<T, VEC>(orow + c, o);
        }
      }
    }
  }
}

}  // namespace fp8_detail
}  // namespace ltx_kernels
