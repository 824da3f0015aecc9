// FP8 quantization kernels. Element rule and codec: common/fp8_util.h (sm_89+ encode with the
// hardware conversion, two elements at a time where the scale is the group's own
// (fp8_quantize_bounded); older GPUs with the integer encoder fp8_encode_fast; both
// bit-identical to formats.h's minifloat_encode).
// Bytes: quantizers read x once (sizeof(T) per element) and write one byte per element plus
// 4 bytes per scale; dequantizers read one byte (+ the scale, cached) and write sizeof(T).
//
// Design of the quantizers (per token group, 128 x 128 block). They move 3 bytes per bf16
// element, so on an H200 (~4.3 TB/s) they are only at the copy ceiling if two things hold:
//   - Enough bytes in flight: every SM needs roughly 25-35 KB of outstanding loads. Each
//     thread issues all the 16-byte loads of its share of a group (or tile) before it uses
//     any, and the group kernel also issues the NEXT group's loads before it reduces and
//     encodes the current one: 4 loads x 16 bytes x 2 batches per thread, 768 threads per SM,
//     so ~48-96 KB per SM stay outstanding. The block kernel holds 8 loads (128 bytes) per
//     thread, three 256-thread CTAs per SM (96 KB).
//   - Few instructions per element, or the SM's instruction throughput, not HBM, sets the time: at
//     4.3 TB/s an H200 has about 0.75 warp-instructions to spend per bf16 element. The
//     element rule is a true division, x / s, computed exactly as one multiply and two FMAs
//     (Fp8Divisor in common/fp8_util.h), after which the paired hardware conversion encodes
//     two elements at once. Data stays in the raw 16-byte words it was loaded as: the
//     absolute maximum is taken on packed bf16x2 / f16x2 pairs (one AND and half a
//     three-input max per element), bf16 widens to fp32 by a shift or an AND, the signs of
//     four elements are gathered by one byte permute and OR-ed into four codes by one LOP3,
//     and two conversions write the two halves of a 32-bit code word directly. The fast
//     path is ~5 instructions per element per thread for the encode (~10 in all with loads,
//     maximum, shuffles and per-group work), about a third of a per-element formulation with
//     16-bit element registers and byte-wise code packing (~0.85 warp-instructions per
//     element: instruction-bound).
//   Per-group work (the division of the group index into row and group by a multiply-high,
//   pointer arithmetic, the shuffle reduction, the scale and its reciprocal) is shared by the
//   32 elements a thread owns (4 accesses of 8 bf16).
//   Launch shapes (lanes per group, accesses per lane, threads, grid) come from
//   common/rowwise_launch.h.
//
// quant_group_vec: per-token groups, vectorized. TPG lanes of a warp own one group, NV
//     16-byte accesses each (segment_shape: 4 accesses per lane before lanes are added), so a
//     warp quantizes 32 / TPG groups at once: amax by xor shuffles inside the TPG lanes, then
//     encode from registers, the next batch's loads already in flight.
// quant_group_regs: the same shape for element-wise accesses (unaligned or odd strides).
// quant_group_loop: groups too large for registers (or odd shapes): one warp per group, two
//     passes (the second mostly from L1/L2).
// quant_block_vec: one CTA per (block_n x block_k) tile, the tile in registers as raw 16-byte
//     words (NV accesses per thread, all issued up front), amax by block reduction, then encode.
// quant_block_regs: the same for element-wise accesses.
// quant_block_loop: tiles too large for registers: two passes.
// amax_kernel / finalize_scale / quant_scaled: per tensor (grid reduction by atomicMax on the
//     bits of non-negative floats, scale = amax / fmax, then encode with that device scale).
// dequant: one kernel for all granularities: the hardware fp8x2 -> f16x2 conversion, the
//     256-entry decode table in shared memory for chunks with a NaN code (and before sm_89).
#pragma once

#include <type_traits>

#include "ltx_kernels/common/fp8_util.h"
#include "ltx_kernels/common/reduce.cuh"
#include "ltx_kernels/common/rowwise_launch.h"
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

// ---- 16-byte chunks as raw words (the vectorized quantizers) ----
// A chunk is one 16-byte load of kVec16<T> elements kept as four 32-bit words: no per-element
// 16-bit registers, the elements widened to fp32 only where the encoder needs them, the
// absolute maximum taken on the packed words (bf16x2 / f16x2 max), and the codes built as
// whole 32-bit words (four codes each) for 8- or 4-byte stores.

template <typename T>
__device__ __forceinline__ uint4 load_chunk(const T* p) {
  const int4 r = __ldcs(reinterpret_cast<const int4*>(p));
  return make_uint4(uint32_t(r.x), uint32_t(r.y), uint32_t(r.z), uint32_t(r.w));
}
__device__ __forceinline__ uint32_t chunk_word(const uint4& c, int i) {
  return i == 0 ? c.x : i == 1 ? c.y : i == 2 ? c.z : c.w;
}

// Lane-wise max of two non-negative 16-bit values m and |w| (a word of a 16-bit chunk).
template <typename T>
__device__ __forceinline__ uint32_t max_abs2(uint32_t m, uint32_t w) {
  const uint32_t a = w & 0x7fff7fffu;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 x = __hmax2(*reinterpret_cast<const __nv_bfloat162*>(&m),
                                     *reinterpret_cast<const __nv_bfloat162*>(&a));
    return *reinterpret_cast<const uint32_t*>(&x);
  } else {
    const __half2 x = __hmax2(*reinterpret_cast<const __half2*>(&m), *reinterpret_cast<const __half2*>(&a));
    return *reinterpret_cast<const uint32_t*>(&x);
  }
}

// Running NaN-ignoring max of |x| over chunks, packed: two lanes for 16-bit types (max.bf16x2 /
// max.f16x2 return the non-NaN operand, as fmaxf; max is exact), one fp32 for float.
template <typename T>
struct ChunkMax {
  uint32_t m = 0;  // two non-negative 16-bit values
  __device__ __forceinline__ void add(const uint4& c) {
#pragma unroll
    for (int i = 0; i < 4; ++i) m = max_abs2<T>(m, chunk_word(c, i));
  }
  __device__ __forceinline__ float get() const {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      return fmaxf(__uint_as_float(m << 16), __uint_as_float(m & 0xffff0000u));
    } else {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&m));
      return fmaxf(f.x, f.y);
    }
  }
};
template <>
struct ChunkMax<float> {
  float m = 0.f;
  __device__ __forceinline__ void add(const uint4& c) {
#pragma unroll
    for (int i = 0; i < 4; ++i) m = fp8_absmax(m, __uint_as_float(chunk_word(c, i)));
  }
  __device__ __forceinline__ float get() const { return m; }
};

// Elements 4j .. 4j + 3 of a chunk as fp32 (a half NaN becomes the canonical NaN: callers take
// signs from chunk_signs) and their sign bits at bits 7, 15, 23, 31 (other bits unspecified).
template <typename T>
__device__ __forceinline__ void chunk_quad(const uint4& c, int j, float (&f)[4], uint32_t& sg) {
  if constexpr (std::is_same_v<T, float>) {
    const uint32_t w0 = chunk_word(c, 0), w1 = chunk_word(c, 1), w2 = chunk_word(c, 2),
                   w3 = chunk_word(c, 3);
    f[0] = __uint_as_float(w0);
    f[1] = __uint_as_float(w1);
    f[2] = __uint_as_float(w2);
    f[3] = __uint_as_float(w3);
    sg = __byte_perm(__byte_perm(w0, w1, 0x0073u), __byte_perm(w2, w3, 0x7300u), 0x7610u);
  } else {
    const uint32_t w0 = chunk_word(c, 2 * j), w1 = chunk_word(c, 2 * j + 1);
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      f[0] = __uint_as_float(w0 << 16);
      f[1] = __uint_as_float(w0 & 0xffff0000u);
      f[2] = __uint_as_float(w1 << 16);
      f[3] = __uint_as_float(w1 & 0xffff0000u);
    } else {
      const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&w0));
      const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&w1));
      f[0] = a.x;
      f[1] = a.y;
      f[2] = b.x;
      f[3] = b.y;
    }
    sg = __byte_perm(w0, w1, 0x7531u);  // the high byte of each 16-bit element
  }
}

// Element e of a chunk as fp32 with a NaN's sign kept (the per-element rule).
template <typename T>
__device__ __forceinline__ float chunk_elem(const uint4& c, int e) {
  constexpr int kPerWord = 4 / int(sizeof(T));
  const uint32_t w = chunk_word(c, e / kPerWord);
  if constexpr (kPerWord == 1) {
    return __uint_as_float(w);
  } else {
    const uint16_t h = uint16_t(w >> (16 * (e % 2)));
    if constexpr (std::is_same_v<T, __nv_bfloat16>) return __uint_as_float(uint32_t(h) << 16);
    else return to_f32_keep_nan_sign(__ushort_as_half(h));
  }
}

// The codes of a chunk of one group (scale from the group's own amax) as kVec16<T> / 4 words,
// byte e of word w the code of element 4w + e; bit for bit fp8_quantize_value<F, true>(x, s).
// Fast path (sm_89+, scale in the Markstein range): per element one multiply and two FMAs
// (the correctly rounded quotient, fp8_util.h), half a paired hardware conversion, and per four
// elements one byte permute (the signs) and one LOP3 (the signs into the codes), which restores
// the signs of -0, of negative quotients that underflow and of NaN exactly as
// fp8_quantize_bounded does. Otherwise the per-element rule.
template <class F, typename T>
__device__ __forceinline__ void encode_chunk_words(const uint4& c, const Fp8Divisor& dv,
                                                   uint32_t (&out)[kVec16<T> / 4]) {
  constexpr int W = kVec16<T> / 4;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if (!dv.ieee) {
    constexpr __nv_fp8_interpretation_t kind = F::kExp == 4 ? __NV_E4M3 : __NV_E5M2;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      float f[4];
      uint32_t sg;
      chunk_quad<T>(c, j, f, sg);
      float qv[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {  // fp8_markstein_div written out (the form the records time)
        const float q0 = f[e] * dv.r;
        qv[e] = fmaf(fmaf(-q0, dv.s, f[e]), dv.r, q0);
      }
      out[j] = cvt_fp8x4<kind>(qv) | (sg & 0x80808080u);
    }
    return;
  }
#endif
#pragma unroll
  for (int j = 0; j < W; ++j) {
    uint32_t w = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) w |= uint32_t(fp8_quantize_div<F>(chunk_elem<T>(c, 4 * j + e), dv)) << (8 * e);
    out[j] = w;
  }
}

template <int W>
__device__ __forceinline__ void store_code_words(uint8_t* p, const uint32_t (&w)[W]) {
  if constexpr (W == 4) {
    __stcs(reinterpret_cast<int4*>(p), make_int4(int(w[0]), int(w[1]), int(w[2]), int(w[3])));
  } else if constexpr (W == 2) {
    __stcs(reinterpret_cast<int2*>(p), make_int2(int(w[0]), int(w[1])));
  } else {
    static_assert(W == 1, "1, 2 or 4 words");
    __stcs(reinterpret_cast<int*>(p), int(w[0]));
  }
}

// Per-token groups, vectorized (every chunk a whole aligned 16-byte access). TPG lanes own one
// group, NV chunks each (chunk i = t + k * TPG: each load instruction of a warp reads TPG * 16
// contiguous bytes per group), so a warp quantizes 32 / TPG groups at a time; the warps
// grid-stride over warp-sized batches of groups and issue the next batch's loads before the
// current batch is reduced and encoded (2 * NV * 16 bytes in flight per thread).
// The group index is split into (row, group in row) by a multiply-high (FastDiv32) while the
// index space fits 31 bits, else by a 64-bit division.
// __launch_bounds__(256, 3): at most 80 registers, three CTAs (768 threads) resident per SM, the
// count the launcher passes to segment_shape.
template <typename T, class F, int NV, int TPG>
__global__ void __launch_bounds__(kRowwiseThreads, 3)
    quant_group_vec(uint8_t* __restrict__ q, int64_t qs, float* __restrict__ sc, int64_t s_row,
                    int64_t s_col, const T* __restrict__ x, int64_t xs, int64_t rows,
                    int64_t gpr, int group, FastDiv32 gdiv, bool col_order) {
  constexpr int VEC = kVec16<T>;
  constexpr int W = VEC / 4;
  constexpr int GPW = 32 / TPG;  // groups per warp
  constexpr bool PREFETCH = NV <= 4;  // 8 accesses per lane: 128 bytes in flight without it
  const int lane = threadIdx.x & 31;
  const int sub = lane / TPG;
  const int t = lane % TPG;
  const int nvec = group / VEC;
  const int64_t total = rows * gpr;
  const int64_t wpb = blockDim.x >> 5;
  const int64_t step = int64_t(gridDim.x) * wpb * GPW;
  const bool fits31 = total + step < (int64_t(1) << 31);
  // group g -> its first element, first code and scale (g clamped to a valid group). Row order
  // (g = r * gpr + gi) puts a warp's groups side by side in one row; column order (g = gi * rows
  // + r, taken for M-major scales, s_row == 1) puts them in consecutive rows of one group column,
  // so that the warp's scales are consecutive floats (one 32-byte store instead of 32 / TPG
  // scattered ones). `gdiv` divides by the inner count (gpr, or rows in column order).
  const int64_t inner = col_order ? rows : gpr;
  struct Ptrs {
    const T* x;
    uint8_t* q;
    float* s;
  };
  auto locate = [&](int64_t g) {
    g = g < total ? g : 0;
    int64_t outer, in;
    if (fits31) {
      const uint32_t gg = uint32_t(g);
      const uint32_t oo = fast_div(gg, gdiv);
      outer = oo;
      in = gg - oo * uint32_t(inner);
    } else {
      outer = g / inner;
      in = g - outer * inner;
    }
    const int64_t r = col_order ? in : outer, gi = col_order ? outer : in;
    return Ptrs{x + r * xs + gi * group + t * VEC, q + r * qs + gi * group + t * VEC,
                sc + r * s_row + gi * s_col};
  };
  // Unpredicated loads (a predicated load keeps the register's old value, which costs a copy
  // per register per batch): past the last group the pointers are group 0's, and a chunk past
  // the group's end reads the group's first chunk instead; neither enters the result.
  auto load = [&](const Ptrs& p, uint4 (&v)[NV]) {
#pragma unroll
    for (int k = 0; k < NV; ++k)
      v[k] = load_chunk(t + k * TPG < nvec ? p.x + k * TPG * VEC : p.x - t * VEC);
  };
  // `base` is warp-uniform, so every lane reaches the shuffles together.
  int64_t base = (int64_t(blockIdx.x) * wpb + (threadIdx.x >> 5)) * GPW;
  int64_t g = base + sub;
  Ptrs p = locate(g);
  uint4 v[NV];
  if constexpr (PREFETCH) load(p, v);
#pragma unroll 2  // (renames the prefetch buffers instead of copying them)
  for (; base < total; base += step) {
    const int64_t gn = g + step;
    if constexpr (!PREFETCH) load(p, v);
    const Ptrs pn = locate(gn);
    uint4 vn[PREFETCH ? NV : 1];
    if constexpr (PREFETCH) load(pn, vn);  // in flight while this batch is reduced and encoded
    ChunkMax<T> cm;
#pragma unroll
    for (int k = 0; k < NV; ++k)
      if (g < total && t + k * TPG < nvec) cm.add(v[k]);
    const float m = warp_max(cm.get(), TPG);
    const float s = fp8_scale_from_amax<F>(m);
    const Fp8Divisor dv = fp8_divisor(s);
    if (g < total) {
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        if (t + k * TPG < nvec) {
          uint32_t c[W];
          encode_chunk_words<F, T>(v[k], dv, c);
          store_code_words<W>(p.q + k * TPG * VEC, c);
        }
      }
      if (t == 0) *p.s = s;
    }
    if constexpr (PREFETCH) {
#pragma unroll
      for (int k = 0; k < NV; ++k) v[k] = vn[k];
    }
    g = gn;
    p = pn;
  }
}

// x: [rows, gpr * group] (row stride xs); q likewise (row stride qs); sc[r*s_row + g*s_col].
// Grid-stride over warp-sized batches of groups with the next batch's loads issued before the
// current batch is encoded (without that overlap the kernel is latency bound: well under half of
// DRAM bandwidth, with neither memory nor issue saturated).
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
// (a (512, 1) build takes over 100 registers, so 2 CTAs, too few loads in flight). A thread's
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

// Vectorized tiles (every chunk a whole aligned 16-byte access): one CTA per tile (grid-stride
// over tiles, CTA-uniform), NV chunks per thread as raw words, all loads issued before the
// packed absolute maximum, the CTA reduction and the encode; 32-bit tile and chunk index
// arithmetic. A 128 x 128 bf16 tile is 256 threads x 8 chunks (128 bytes in flight per
// thread; __launch_bounds__(256, 3): three such CTAs, 96 KB of loads, resident per SM), a
// 128 x 128 fp32 tile 256 threads x 16 chunks (two CTAs, 128 KB). A thread's chunks are one
// column chunk in rows rr0, rr0 + rstep, ... whenever blockDim.x is a multiple of the chunks
// per tile row.
// (sm_100+ compiles the same code to more registers: fewer resident CTAs there instead of spills)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
#define LTX_FP8_BLOCK_VEC_MIN_CTAS(NV) ((NV) <= 8 ? 2 : 1)
#else
#define LTX_FP8_BLOCK_VEC_MIN_CTAS(NV) ((NV) <= 8 ? 3 : 2)
#endif
template <typename T, class F, int NV>
__global__ void __launch_bounds__(256, LTX_FP8_BLOCK_VEC_MIN_CTAS(NV))
    quant_block_vec(uint8_t* __restrict__ q, int64_t qs, float* __restrict__ sc, int64_t s_row,
                    int64_t s_col, const T* __restrict__ w, int64_t ws, BlockArgs a) {
  constexpr int VEC = kVec16<T>;
  constexpr int W = VEC / 4;
  __shared__ float smem[32];
  const bool fits32 = a.tiles + int64_t(gridDim.x) <= int64_t(UINT32_MAX);
  for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    BlockTile t;
    t.tb = div_idx(tile, a.tiles_k, fits32);
    t.tc = tile - t.tb * a.tiles_k;
    t.r0 = t.tb * a.bn;
    t.c0 = t.tc * a.bk;
    t.h = a.bn < a.rows - t.r0 ? a.bn : a.rows - t.r0;
    t.cw = a.bk < a.cols - t.c0 ? a.bk : a.cols - t.c0;
    const int h = int(t.h);
    const int cpr = int(t.cw / VEC);
    const int nch = h * cpr;
    const int rstep = int(blockDim.x) / cpr;
    const int rr0 = int(threadIdx.x) / cpr, cc0 = int(threadIdx.x) - rr0 * cpr;
    float s;
    // EVEN (blockDim.x a multiple of cpr): chunk k at a fixed step from the thread's first;
    // otherwise (ragged edge tiles of odd widths) each chunk's row and column by a division.
    auto run = [&](auto even_tag) {
      constexpr bool EVEN = decltype(even_tag)::value;
      const int64_t first = (t.r0 + rr0) * ws + t.c0 + cc0 * VEC;
      const int64_t qfirst = (t.r0 + rr0) * qs + t.c0 + cc0 * VEC;
      auto offset = [&](int k, int64_t stride, int64_t first_k) {  // chunk i = tid + k * blockDim
        if constexpr (EVEN) {
          return first_k + int64_t(k * rstep) * stride;
        } else {
          const int i = threadIdx.x + k * blockDim.x;
          const int rr = i / cpr, cc = i - rr * cpr;
          return (t.r0 + rr) * stride + t.c0 + cc * VEC;
        }
      };
      uint4 v[NV];
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < nch) v[k] = load_chunk(w + offset(k, ws, first));
      }
      ChunkMax<T> cm;
#pragma unroll
      for (int k = 0; k < NV; ++k)
        if (int(threadIdx.x + k * blockDim.x) < nch) cm.add(v[k]);
      const float m = block_max(cm.get(), smem);
      s = fp8_scale_from_amax<F>(m);
      const Fp8Divisor dv = fp8_divisor(s);
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < nch) {
          uint32_t c[W];
          encode_chunk_words<F, T>(v[k], dv, c);
          store_code_words<W>(q + offset(k, qs, qfirst), c);
        }
      }
    };
    if (int(blockDim.x) % cpr == 0) run(std::true_type{});
    else run(std::false_type{});
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
// (with one chunk per thread, index arithmetic takes most of the SM's issue slots).
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
