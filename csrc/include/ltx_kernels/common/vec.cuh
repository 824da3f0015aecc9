// Vector access for memory-bound kernels: a `Packed<T, N>` is N elements moved as one
// aligned access (16 bytes when N * sizeof(T) == 16), with streaming cache hints and
// float conversion. Device code only; no torch.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace ltx_kernels {

template <typename T, int N>
struct alignas(sizeof(T) * N) Packed {
  T v[N];
};

// Elements per 16-byte access.
template <typename T>
constexpr int kVec16 = 16 / int(sizeof(T));

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }
// Like to_f32, but a NaN keeps its sign: the hardware fp16 -> fp32 conversion returns a canonical
// (positive) NaN, which quantizers that promise "NaN keeps its sign" must not see.
__device__ __forceinline__ float to_f32_keep_nan_sign(float x) { return x; }
__device__ __forceinline__ float to_f32_keep_nan_sign(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f32_keep_nan_sign(__half x) {
  const float f = __half2float(x);
  return (__half_as_ushort(x) & 0x8000u) ? copysignf(f, -1.f) : f;
}

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Streaming load (evict-first): data read once.
template <typename T, int N>
__device__ __forceinline__ Packed<T, N> load_stream(const T* p) {
  Packed<T, N> r;
  if constexpr (sizeof(Packed<T, N>) == 16) {
    int4 raw = __ldcs(reinterpret_cast<const int4*>(p));
    r = *reinterpret_cast<Packed<T, N>*>(&raw);
  } else {
    r = *reinterpret_cast<const Packed<T, N>*>(p);
  }
  return r;
}

// Cached load: data reused across rows (weights, tables).
template <typename T, int N>
__device__ __forceinline__ Packed<T, N> load_cached(const T* p) {
  Packed<T, N> r;
  if constexpr (sizeof(Packed<T, N>) == 16) {
    int4 raw = __ldg(reinterpret_cast<const int4*>(p));
    r = *reinterpret_cast<Packed<T, N>*>(&raw);
  } else {
    r = *reinterpret_cast<const Packed<T, N>*>(p);
  }
  return r;
}

// Streaming store: output written once, not re-read by this kernel.
template <typename T, int N>
__device__ __forceinline__ void store_stream(T* p, const Packed<T, N>& v) {
  if constexpr (sizeof(Packed<T, N>) == 16) {
    __stcs(reinterpret_cast<int4*>(p), *reinterpret_cast<const int4*>(&v));
  } else {
    *reinterpret_cast<Packed<T, N>*>(p) = v;
  }
}

// A compiler barrier on the packed words of `p` (no instruction): the words count as redefined
// here, so float values converted from them before cannot be reused after, and are not kept
// alive across the barrier. Kernels that convert a register-resident row twice (once for a
// reduction, once for the output) call it between the two, which keeps the row packed (4
// registers per 16 bytes) instead of unpacked (8 for 8 bf16 elements) through the reduction.
template <typename T, int N>
__device__ __forceinline__ void repack_barrier(Packed<T, N>& p) {
  if constexpr (sizeof(Packed<T, N>) % 4 == 0) {
    uint32_t* w = reinterpret_cast<uint32_t*>(&p);
#pragma unroll
    for (int i = 0; i < int(sizeof(Packed<T, N>) / 4); ++i) asm volatile("" : "+r"(w[i]));
  } else {
    static_assert(sizeof(Packed<T, N>) == 2, "one 16-bit element or whole 32-bit words");
    asm volatile("" : "+h"(*reinterpret_cast<unsigned short*>(&p)));
  }
}

inline bool aligned_to(const void* p, int bytes) {
  return (reinterpret_cast<uintptr_t>(p) % uintptr_t(bytes)) == 0;
}

}  // namespace ltx_kernels
