// Low-bit family kernels (see lowbit.h for the contracts, formats_lowbit.h for the codecs).
// All memory bound; bytes per element moved (read + written):
//   fp6_pack      1 + 0.75        fp6_unpack        0.75 + 1
//   quantize_fp6_block  sizeof(T) + 0.75 (+ the tile re-read in pass 2, served by L1/L2)
//   dequantize_fp6_block 0.75 + sizeof(T)
//   quantize_nvfp4  sizeof(T) + 0.5 + 1/16     dequantize_nvfp4  0.5 + 1/16 + sizeof(T)
// Every kernel is grid-stride over int64 work items; no barrier sits in divergent code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/common/formats_lowbit.h"
#include "ltx_kernels/common/reduce.cuh"
#include "ltx_kernels/common/vec.cuh"

namespace ltx_kernels {
namespace lowbit_detail {

// warp_max / block_max: common/reduce.cuh

// Grid-stride loop over the quads of 4 groups: f(g0) with g0 the quad's first group.
template <class F>
__device__ __forceinline__ void for_each_quad(int64_t groups, F f) {
  const int64_t quads = (groups + 3) / 4;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < quads;
       i += int64_t(gridDim.x) * blockDim.x)
    f(i * 4);
}

// ---- LTX-2 FP6 pack / unpack: one thread per 4 groups (16 E4M3 bytes <-> 12 packed bytes).
// VEC: x 16-byte aligned and out 4-byte aligned (pack) / the reverse (unpack).
template <bool VEC>
__global__ void fp6_pack_kernel(uint8_t* __restrict__ out, const uint8_t* __restrict__ x,
                                int64_t groups) {
  for_each_quad(groups, [&](int64_t g0) {
    if (VEC && g0 + 4 <= groups) {
      const Packed<uint8_t, 16> in = load_stream<uint8_t, 16>(x + g0 * 4);  // (16,)
      uint32_t o[3];                                                           // (12 bytes,)
      uint8_t* ob = reinterpret_cast<uint8_t*>(o);
#pragma unroll
      for (int g = 0; g < 4; ++g) {
        uint8_t v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) v[k] = fp6_e4m3_drop(in.v[g * 4 + k]);
        fp6_pack4(v, ob + g * 3);
      }
      uint32_t* op = reinterpret_cast<uint32_t*>(out + g0 * 3);
      op[0] = o[0];
      op[1] = o[1];
      op[2] = o[2];
    } else {
      for (int64_t g = g0; g < groups && g < g0 + 4; ++g) {
        uint8_t v[4];
        for (int k = 0; k < 4; ++k) v[k] = fp6_e4m3_drop(x[g * 4 + k]);
        uint8_t b[3];
        fp6_pack4(v, b);
        out[g * 3] = b[0];
        out[g * 3 + 1] = b[1];
        out[g * 3 + 2] = b[2];
      }
    }
  });
}

template <bool VEC>
__global__ void fp6_unpack_kernel(uint8_t* __restrict__ out, const uint8_t* __restrict__ packed,
                                  int64_t groups) {
  for_each_quad(groups, [&](int64_t g0) {
    if (VEC && g0 + 4 <= groups) {
      const uint32_t* ip = reinterpret_cast<const uint32_t*>(packed + g0 * 3);
      uint32_t w[3] = {__ldcs(ip), __ldcs(ip + 1), __ldcs(ip + 2)};
      const uint8_t* ib = reinterpret_cast<const uint8_t*>(w);
      Packed<uint8_t, 16> o;
#pragma unroll
      for (int g = 0; g < 4; ++g) {
        uint8_t v[4];
        fp6_unpack4(ib + g * 3, v);
#pragma unroll
        for (int k = 0; k < 4; ++k) o.v[g * 4 + k] = fp6_e4m3_restore(v[k]);
      }
      store_stream<uint8_t, 16>(out + g0 * 4, o);
    } else {
      for (int64_t g = g0; g < groups && g < g0 + 4; ++g) {
        const uint8_t b[3] = {packed[g * 3], packed[g * 3 + 1], packed[g * 3 + 2]};
        uint8_t v[4];
        fp6_unpack4(b, v);
        for (int k = 0; k < 4; ++k) out[g * 4 + k] = fp6_e4m3_restore(v[k]);
      }
    }
  });
}

// 4 consecutive elements as floats (VEC: one aligned 4-element access).
template <typename T, bool VEC>
__device__ __forceinline__ void load4(const T* p, float f[4]) {
  if constexpr (VEC) {
    const Packed<T, 4> v = *reinterpret_cast<const Packed<T, 4>*>(p);
#pragma unroll
    for (int k = 0; k < 4; ++k) f[k] = to_f32(v.v[k]);
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) f[k] = to_f32(p[k]);
  }
}

template <typename T, bool VEC>
__device__ __forceinline__ void store4(T* p, const float f[4]) {
  if constexpr (VEC) {
    Packed<T, 4> v;
#pragma unroll
    for (int k = 0; k < 4; ++k) v.v[k] = from_f32<T>(f[k]);
    *reinterpret_cast<Packed<T, 4>*>(p) = v;
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) p[k] = from_f32<T>(f[k]);
  }
}

// ---- Per-block FP6: one CTA per (block_rows x block_cols) tile, grid-stride over tiles.
// Pass 1 reads the tile for its amax; pass 2 reads it again (L1/L2 hit: 32 KB at 128x128 bf16)
// and writes 3 bytes per 4 elements. w: [rows, cols]; packed: [rows, 3 cols / 4];
// scales: [nbr, nbc].
template <typename T, bool VEC>
__global__ void quantize_fp6_block_kernel(uint8_t* __restrict__ packed, float* __restrict__ scales,
                                          const T* __restrict__ w, int64_t rows, int64_t cols,
                                          int br, int bc) {
  __shared__ float smem[32];
  const int64_t nbr = (rows + br - 1) / br, nbc = (cols + bc - 1) / bc;
  const int64_t prow = cols / 4 * 3;
  for (int64_t t = blockIdx.x; t < nbr * nbc; t += gridDim.x) {  // uniform per CTA
    const int64_t r0 = (t / nbc) * br, c0 = (t % nbc) * bc;
    const int h = int(rows - r0 < br ? rows - r0 : br);
    const int gw = int(cols - c0 < bc ? cols - c0 : bc) / 4;  // groups of 4 per tile row
    const int ng = h * gw;
    float amax = 0.f;
    for (int g = threadIdx.x; g < ng; g += blockDim.x) {
      float f[4];
      load4<T, VEC>(w + (r0 + g / gw) * cols + c0 + (g % gw) * 4, f);
#pragma unroll
      for (int k = 0; k < 4; ++k) amax = amax_step(amax, f[k]);
    }
    amax = block_max(amax, smem);
    const float s = div_rn(amax, kFp6E4M3Max);
    if (threadIdx.x == 0) scales[t] = s;
    for (int g = threadIdx.x; g < ng; g += blockDim.x) {
      const int64_t r = r0 + g / gw, c = c0 + (g % gw) * 4;
      float f[4];
      load4<T, VEC>(w + r * cols + c, f);
      uint8_t v[4], b[3];
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = fp6_block_code(f[k], s);
      fp6_pack4(v, b);
      uint8_t* o = packed + r * prow + c / 4 * 3;
      o[0] = b[0];
      o[1] = b[1];
      o[2] = b[2];
    }
  }
}

// One thread per group of 4 output elements.
template <typename T, bool VEC>
__global__ void dequantize_fp6_block_kernel(T* __restrict__ out, const uint8_t* __restrict__ packed,
                                            const float* __restrict__ scales, int64_t rows,
                                            int64_t cols, int br, int bc) {
  const int64_t gpr = cols / 4, nbc = (cols + bc - 1) / bc;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * gpr;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / gpr, c = (i % gpr) * 4;
    const uint8_t b[3] = {__ldcs(packed + i * 3), __ldcs(packed + i * 3 + 1),
                          __ldcs(packed + i * 3 + 2)};
    const float s = __ldg(scales + (r / br) * nbc + c / bc);
    uint8_t v[4];
    fp6_unpack4(b, v);
    float f[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) f[k] = minifloat_decode<E4M3>(fp6_e4m3_restore(v[k])) * s;
    store4<T, VEC>(out + r * cols + c, f);
  }
}

// ---- OCP FP6 codes, one element per thread-iteration.
template <typename T>
__global__ void quantize_fp6_kernel(uint8_t* __restrict__ codes, const T* __restrict__ x, int64_t n,
                                    int fmt) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float f = to_f32(x[i]);
    codes[i] = fmt == 0 ? narrow_encode<E2M3>(f) : narrow_encode<E3M2>(f);
  }
}

template <typename T>
__global__ void dequantize_fp6_kernel(T* __restrict__ out, const uint8_t* __restrict__ codes,
                                      int64_t n, int fmt) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const uint8_t c = uint8_t(codes[i] & 0x3f);
    out[i] = from_f32<T>(fmt == 0 ? narrow_decode<E2M3>(c) : narrow_decode<E3M2>(c));
  }
}

// ---- NVFP4: one thread per 16-element block of the PADDED scale grid
// [roundup(rows,128), roundup(cols/16,4)]: real blocks quantize, padding writes a 0 scale.
// VEC: x 16-byte aligned and packed 8-byte aligned.
template <typename T, bool VEC>
__global__ void quantize_nvfp4_kernel(uint8_t* __restrict__ packed, uint8_t* __restrict__ scales,
                                      const T* __restrict__ x, const float* __restrict__ s_t_ptr,
                                      int64_t rows, int64_t cols, bool hi_first) {
  constexpr int V = kVec16<T>;
  const int64_t nb = cols / 16, pcols = (nb + 3) / 4 * 4, prows = (rows + 127) / 128 * 128;
  const float s_t = __ldg(s_t_ptr);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < prows * pcols;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / pcols, b = i % pcols;
    uint8_t code = 0;
    if (r < rows && b < nb) {
      const T* xb = x + r * cols + b * 16;  // (16,)
      float f[16];
      if constexpr (VEC) {
#pragma unroll
        for (int k = 0; k < 16 / V; ++k) {
          const Packed<T, V> v = load_stream<T, V>(xb + k * V);
#pragma unroll
          for (int e = 0; e < V; ++e) f[k * V + e] = to_f32(v.v[e]);
        }
      } else {
#pragma unroll
        for (int e = 0; e < 16; ++e) f[e] = to_f32(xb[e]);
      }
      float amax = 0.f;
#pragma unroll
      for (int e = 0; e < 16; ++e) amax = amax_step(amax, f[e]);
      code = nvfp4_block_scale_code(amax, s_t);
      const float d = s_t * minifloat_decode<E4M3>(code);  // fp32 product, then one division
      Packed<uint8_t, 8> o;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const uint8_t q0 = d != 0.f ? e2m1_encode(div_rn(f[2 * j], d)) : uint8_t(0);
        const uint8_t q1 = d != 0.f ? e2m1_encode(div_rn(f[2 * j + 1], d)) : uint8_t(0);
        o.v[j] = hi_first ? uint8_t(q0 << 4 | q1) : uint8_t(q1 << 4 | q0);
      }
      uint8_t* pb = packed + r * (cols / 2) + b * 8;  // (8,)
      if constexpr (VEC) {
        *reinterpret_cast<Packed<uint8_t, 8>*>(pb) = o;
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) pb[j] = o.v[j];
      }
    }
    scales[nvfp4_scale_offset(r, b, pcols)] = code;
  }
}

// One thread per real 16-element block. VEC: out 16-byte aligned and packed 8-byte aligned.
template <typename T, bool VEC>
__global__ void dequantize_nvfp4_kernel(T* __restrict__ out, const uint8_t* __restrict__ packed,
                                        const uint8_t* __restrict__ scales,
                                        const float* __restrict__ s_t_ptr, int64_t rows,
                                        int64_t cols, bool hi_first) {
  constexpr int V = kVec16<T>;
  const int64_t nb = cols / 16, pcols = (nb + 3) / 4 * 4;
  const float s_t = __ldg(s_t_ptr);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * nb;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / nb, b = i % nb;
    const float sb = minifloat_decode<E4M3>(__ldcs(scales + nvfp4_scale_offset(r, b, pcols)));
    const uint8_t* pb = packed + i * 8;  // == r * cols / 2 + b * 8
    Packed<uint8_t, 8> in;
    if constexpr (VEC) {
      in = *reinterpret_cast<const Packed<uint8_t, 8>*>(pb);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) in.v[j] = pb[j];
    }
    float f[16];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint8_t hi = uint8_t(in.v[j] >> 4), lo = uint8_t(in.v[j] & 0xf);
      f[2 * j] = e2m1_decode(hi_first ? hi : lo) * sb * s_t;
      f[2 * j + 1] = e2m1_decode(hi_first ? lo : hi) * sb * s_t;
    }
    T* ob = out + r * cols + b * 16;  // (16,)
    if constexpr (VEC) {
#pragma unroll
      for (int k = 0; k < 16 / V; ++k) {
        Packed<T, V> v;
#pragma unroll
        for (int e = 0; e < V; ++e) v.v[e] = from_f32<T>(f[k * V + e]);
        store_stream<T, V>(ob + k * V, v);
      }
    } else {
#pragma unroll
      for (int e = 0; e < 16; ++e) ob[e] = from_f32<T>(f[e]);
    }
  }
}

}  // namespace lowbit_detail
}  // namespace ltx_kernels
