// Activation kernels. All are memory bound: each input element is read once (streaming
// loads), each output element written once (streaming stores); the per-head gate of
// gated_attention is a small table re-read by many threads (read-only cached loads).
//
// Bytes per element (T = element size):
//   act_flat / act_rows     read T, write T
//   act_and_mul_rows        read 2T, write T            (per output element)
//   gated_attention_flat / gated_attention_rows    read T + T/head_dim, write T
//
// act_flat: dense tensors as one flat array; each thread moves U 16-byte vectors per step
//     (loads first, then math and stores, so U accesses are in flight per thread).
// *_rows:   strided rows; a block is TX x TY threads, threadIdx.y picks the row, threadIdx.x
//     walks the row in steps of TX*U vectors; rows by grid stride (64-bit row offsets).
// The activation is a template functor (Act::f(float) -> float): one kernel, three activations.
#pragma once

#include <type_traits>

#include "ltx_kernels/activation/gelu_erfc.h"
#include "ltx_kernels/common/rowwise_launch.h"
#include "ltx_kernels/common/vec.cuh"

namespace ltx_kernels {
namespace act_detail {

// ---- the activations, fp32 in and out ---------------------------------------------------------
// The CPU backend (ltx_kernels/cpu/activation_math.h) computes the same formulas, with the same
// special values: gelu(-inf) = gelu_tanh(-inf) = silu(-inf) = -0, +inf -> +inf, NaN -> NaN.

// 0.5 x erfc(-x / sqrt 2), no cancellation for x << 0; host and device (gelu_erfc.h).
struct GeluErf {
  __device__ __forceinline__ static float f(float x) { return gelu_erfc_f32(x); }
};
// The same for results rounded to bf16 / fp16: (28 + 1.5 x^2) u instead of 11u, a third of the
// instructions (gelu_erfc.h).
struct GeluErf16 {
  __device__ __forceinline__ static float f(float x) { return gelu_erfc_fast_f32(x); }
};
// The activation the kernels of element type T run for Act: GeluErf16 for 16-bit T.
template <class Act, typename T>
using ActFor = std::conditional_t<std::is_same<Act, GeluErf>::value && sizeof(T) == 2, GeluErf16, Act>;

// The logistic-form activations below are instruction bound at memory speed if written with
// the IEEE-accurate expf (8 instructions) and __fdividef (whose denormal-divisor guard adds 4),
// so they use the hardware approximations, with the error bounds the CUDA documentation gives:
//   exp_approx(t): ex2.approx.ftz of t * log2(e), the instruction sequence of __expf less its
//   scaling of subnormal results (they flush to 0 here: an absolute error below 2^-126, which
//   1 + e cannot see); __expf is documented to at most 2 + floor(1.173 |t|) ulps;
//   rcp_approx(d): rcp.approx.ftz.f32, at most 1 ulp (PTX ISA); d = 1 + e lies in [1, 2^126]
//   (larger e is cut off first), so the flush to zero never applies.
// tests/bounds.py carries these bounds into the tests' error budgets.
//   exp2_approx(a): the ex2.approx.ftz instruction itself (2^a), for callers whose argument is
//   already in log2 units.
__device__ __forceinline__ float exp2_approx(float a) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
  return r;
}
__device__ __forceinline__ float exp_approx(float t) { return exp2_approx(t * 1.4426950408889634f); }
__device__ __forceinline__ float rcp_approx(float d) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return r;
}

// 0.5 x (1 + tanh(v)) == x * sigmoid(2v) == x / (1 + e^(-2v)): no cancellation of 1 + tanh(v)
// near -1. e^(-2v) > 2^126 (x < -10.0, exact value above -1.2e-37) gives -0 explicitly, which
// also keeps x = -inf (-inf * 0 = NaN) at its limit -0.
// -2v log2(e) = x (k0 + k1 x^2) is evaluated with the constants folded (4 roundings, k0 and k1
// included, instead of 7: 4 instructions fewer) and goes straight to ex2.approx.ftz.
struct GeluTanh {
  static constexpr float kK0 = -2.3022082f;    // -2 sqrt(2 / pi) log2(e)
  static constexpr float kK1 = -0.10294324f;   // kK0 * 0.044715
  __device__ __forceinline__ static float f(float x) {
    const float e = exp2_approx(x * fmaf(x * x, kK1, kK0));
    return e > 0x1p126f ? -0.f : x * rcp_approx(1.f + e);
  }
};

// x / (1 + e^-x); -0 once e^-x > 2^126 (x < -87.3, exact value above -1.1e-36) and at x = -inf.
struct Silu {
  __device__ __forceinline__ static float f(float x) {
    const float e = exp_approx(-x);
    return e > 0x1p126f ? -0.f : x * rcp_approx(1.f + e);
  }
};

// 2 * sigmoid(g), LTX-2's per-head attention gate; 0 for e^-g > 2^126 (g < -87.3) and g = -inf.
__device__ __forceinline__ float gate2(float g) {
  const float e = exp_approx(-g);
  return e > 0x1p126f ? 0.f : 2.f * rcp_approx(1.f + e);
}

// ---- elementwise, dense -----------------------------------------------------------------------

// out, x: [n] contiguous, both 16-byte aligned when VEC > 1. The n % VEC leftover elements are
// done by the first threads of block 0.
template <typename T, int VEC, int U, class Act>
__global__ void __launch_bounds__(256) act_flat(T* __restrict__ out, const T* __restrict__ x,
                                                int64_t n) {
  const int64_t nvec = n / VEC;
  const int64_t step = int64_t(gridDim.x) * blockDim.x * U;
  for (int64_t base = int64_t(blockIdx.x) * blockDim.x * U + threadIdx.x; base < nvec;
       base += step) {
    Packed<T, VEC> v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const int64_t i = base + int64_t(k) * blockDim.x;
      if (i < nvec) v[k] = load_stream<T, VEC>(x + i * VEC);
    }
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const int64_t i = base + int64_t(k) * blockDim.x;
      if (i < nvec) {
        Packed<T, VEC> o;
#pragma unroll
        for (int j = 0; j < VEC; ++j) o.v[j] = from_f32<T>(Act::f(to_f32(v[k].v[j])));
        store_stream<T, VEC>(out + i * VEC, o);
      }
    }
  }
  if constexpr (VEC > 1) {
    const int64_t done = nvec * VEC;
    if (blockIdx.x == 0 && int64_t(threadIdx.x) < n - done) {
      const int64_t i = done + threadIdx.x;
      out[i] = from_f32<T>(Act::f(to_f32(x[i])));
    }
  }
}

// ---- elementwise, strided rows ----------------------------------------------------------------

// out: [rows, cols] stride os; x: [rows, cols] stride xs; cols % VEC == 0 on this path.
template <typename T, int VEC, int U, class Act>
__global__ void __launch_bounds__(256) act_rows(T* __restrict__ out, int64_t os,
                                                const T* __restrict__ x, int64_t xs,
                                                int64_t rows, int64_t cols) {
  const int64_t nvec = cols / VEC;
  const int tx = blockDim.x;
  for (int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; row < rows;
       row += int64_t(gridDim.x) * blockDim.y) {
    const T* xr = x + row * xs;
    T* orow = out + row * os;
    for (int64_t c0 = threadIdx.x; c0 < nvec; c0 += int64_t(tx) * U) {
      Packed<T, VEC> v[U];
#pragma unroll
      for (int k = 0; k < U; ++k) {
        const int64_t i = c0 + int64_t(k) * tx;
        if (i < nvec) v[k] = load_stream<T, VEC>(xr + i * VEC);
      }
#pragma unroll
      for (int k = 0; k < U; ++k) {
        const int64_t i = c0 + int64_t(k) * tx;
        if (i < nvec) {
          Packed<T, VEC> o;
#pragma unroll
          for (int j = 0; j < VEC; ++j) o.v[j] = from_f32<T>(Act::f(to_f32(v[k].v[j])));
          store_stream<T, VEC>(orow + i * VEC, o);
        }
      }
    }
  }
}

// ---- act(x[:, act_off + c]) * x[:, mul_off + c] -------------------------------------------------

// out: [rows, d] stride os; x: [rows, 2d] stride xs; (act_off, mul_off) = (0, d) for act_first,
// (d, 0) for the diffusers order. d % VEC == 0 on this path.
template <typename T, int VEC, int U, class Act>
__global__ void __launch_bounds__(256) act_and_mul_rows(T* __restrict__ out, int64_t os,
                                                        const T* __restrict__ x, int64_t xs,
                                                        int64_t rows, int64_t d,
                                                        int64_t act_off, int64_t mul_off) {
  const int64_t nvec = d / VEC;
  const int tx = blockDim.x;
  for (int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; row < rows;
       row += int64_t(gridDim.x) * blockDim.y) {
    const T* ar = x + row * xs + act_off;  // (d) activated half
    const T* br = x + row * xs + mul_off;  // (d) multiplier half
    T* orow = out + row * os;
    for (int64_t c0 = threadIdx.x; c0 < nvec; c0 += int64_t(tx) * U) {
      Packed<T, VEC> a[U], b[U];
#pragma unroll
      for (int k = 0; k < U; ++k) {
        const int64_t i = c0 + int64_t(k) * tx;
        if (i < nvec) {
          a[k] = load_stream<T, VEC>(ar + i * VEC);
          b[k] = load_stream<T, VEC>(br + i * VEC);
        }
      }
#pragma unroll
      for (int k = 0; k < U; ++k) {
        const int64_t i = c0 + int64_t(k) * tx;
        if (i < nvec) {
          Packed<T, VEC> o;
#pragma unroll
          for (int j = 0; j < VEC; ++j)
            o.v[j] = from_f32<T>(Act::f(to_f32(a[k].v[j])) * to_f32(b[k].v[j]));
          store_stream<T, VEC>(orow + i * VEC, o);
        }
      }
    }
  }
}

// ---- x * 2 * sigmoid(gate) per head -----------------------------------------------------------

// Dense out and x ([rows, cols] contiguous) and gate ([rows, heads] contiguous): one flat array
// of nvec < 2^31 vectors; vector i belongs to head i / (head_dim / VEC) of the flat gate array
// (vdiv, a multiply-high). One pass: the grid covers nvec with U vectors per thread, all loads
// issued before the math (as act_flat).
template <typename T, int VEC, int U>
__global__ void __launch_bounds__(256) gated_attention_flat(T* __restrict__ out, const T* __restrict__ x,
                                                            const T* __restrict__ g, uint32_t nvec,
                                                            const FastDiv32 vdiv) {
  const uint32_t base = blockIdx.x * blockDim.x * U + threadIdx.x;  // < nvec + 256 U < 2^32
  Packed<T, VEC> v[U];
  T gl[U];
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const uint32_t i = base + uint32_t(k) * blockDim.x;
    if (i < nvec) {
      v[k] = load_stream<T, VEC>(x + int64_t(i) * VEC);
      gl[k] = __ldg(g + fast_div(i, vdiv));
    }
  }
#pragma unroll
  for (int k = 0; k < U; ++k) {
    const uint32_t i = base + uint32_t(k) * blockDim.x;
    if (i < nvec) {
      const float s = gate2(to_f32(gl[k]));
      Packed<T, VEC> o;
#pragma unroll
      for (int j = 0; j < VEC; ++j) o.v[j] = from_f32<T>(to_f32(v[k].v[j]) * s);
      store_stream<T, VEC>(out + int64_t(i) * VEC, o);
    }
  }
}

// out: [rows, cols] stride os; x: [rows, cols] stride xs; g: [rows, cols / head_dim] stride gs.
// head_dim % VEC == 0 on this path, so a vector never straddles two heads; vdiv divides a vector
// index (< 2^31) by the vectors per head (multiply-high, common/rowwise_launch.h).
template <typename T, int VEC, int U>
__global__ void __launch_bounds__(256) gated_attention_rows(T* __restrict__ out, int64_t os,
                                                            const T* __restrict__ x, int64_t xs,
                                                            const T* __restrict__ g, int64_t gs,
                                                            int64_t rows, int64_t cols,
                                                            const FastDiv32 vdiv) {
  const int64_t nvec = cols / VEC;
  const int tx = blockDim.x;
  for (int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; row < rows;
       row += int64_t(gridDim.x) * blockDim.y) {
    const T* xr = x + row * xs;
    const T* gr = g + row * gs;
    T* orow = out + row * os;
    for (int64_t c0 = threadIdx.x; c0 < nvec; c0 += int64_t(tx) * U) {
      Packed<T, VEC> v[U];
      T gl[U];
#pragma unroll
      for (int k = 0; k < U; ++k) {
        const int64_t i = c0 + int64_t(k) * tx;
        if (i < nvec) {
          v[k] = load_stream<T, VEC>(xr + i * VEC);
          gl[k] = __ldg(gr + fast_div(uint32_t(i), vdiv));  // i < nvec < 2^31
        }
      }
#pragma unroll
      for (int k = 0; k < U; ++k) {
        const int64_t i = c0 + int64_t(k) * tx;
        if (i < nvec) {
          const float s = gate2(to_f32(gl[k]));
          Packed<T, VEC> o;
#pragma unroll
          for (int j = 0; j < VEC; ++j) o.v[j] = from_f32<T>(to_f32(v[k].v[j]) * s);
          store_stream<T, VEC>(orow + i * VEC, o);
        }
      }
    }
  }
}

}  // namespace act_detail
}  // namespace ltx_kernels
