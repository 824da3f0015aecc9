// Persistent, warp-specialized sm_90a GEMM (TMA + wgmma, raw PTX), one skeleton for three operand
// recipes (Recipe below): blockwise-scaled FP8 ("1D2D": per-token 1x128 scales on A, per-128x128-
// block scales on B, fp32 promotion once per 128-wide K block), bf16 x bf16 (fp32 accumulation),
// and rowwise-scaled FP8 (the bf16 mainloop on e4m3 operands: the wgmma accumulates across the
// whole K, and the per-token scale sa[m] and per-channel scale sb[n] multiply the accumulator in
// the epilogue). The math and the epilogues are specified in gemm_params.h; the design is
// summarised in docs/design/gemm.md. Device code only; the launchers are the instantiation files
// of csrc/cuda/gemm (sm90_gemm_host.cuh).
//
// Roles (384 threads, one CTA per SM, persistent over the tiles of sm90_plan.h's tile order):
//   warps 0-7  two consumer warpgroups (setmaxnreg 232). Each owns a 64-row slice of the CTA tile
//              (bm = 128), two 64-row slices 128 rows apart (bm = 256), or, for bm = 64, one half
//              of the tile's columns; it issues wgmma.m64nWNk32 (FP8) / m64nWNk16 (bf16) from
//              shared memory and runs the epilogue of its slice.
//   warp 8     loader of A (setmaxnreg 40): per stage, TMA of the A tile (bm x 128 bytes) and
//              (FP8) the bm activation scales sa: by TMA too when sa is M-major with 16-byte
//              aligned columns (quantize_fp8_per_token_group's "mn_major" layout), lane 0 alone
//              issuing the stage; otherwise by 4-byte cp.async from all 32 lanes (any sa strides),
//              each lane's cp.async.mbarrier.arrive.noinc counting on the "full" barrier.
//              A loader issues for the whole CTA, so what it spends per stage delays every stage:
//              a single loader of ~200 instructions per stage (at ~6 cycles each) would cap the
//              kernel at one stage per ~1,300 cycles, against 512-768 cycles of wgmma. Hence
//              two loader warps of a few instructions per stage each, and the weight scales sb
//              (two per consumer warpgroup and K block) read by the consumers themselves from
//              global memory through the non-coherent cache at the top of each K block, the load
//              completing under the wgmma that follows.
//   warp 9     storer: per tile, loads what the epilogue reads (bias slice, and for FP8 rowwise the
//              tile's weight scales sb, by 1-D bulk copies; h and the gate by TMA into the staging
//              tiles) and, once the consumers have written the output tile into shared memory,
//              stores it with TMA. The store of tile i overlaps the mainloop of tile i + 1; the
//              staging tile is reused once the store has read it.
//   warp 10    loader of B (the per-stage TMA of the B tile, split from warp 8's so that each
//              loader issues few instructions per stage).
//   warp 11    idle (it only exists so that the producer side is a whole warpgroup).
//
// Pipeline: `stages` slots of (A, B, sa), full/empty mbarrier pairs. The full barrier counts one
// expect_tx arrival per loader warp; the empty barrier one arrival per consumer warp and CTA of
// the cluster (a multicast writes into both CTAs' slots, so both CTAs' consumers must have
// released it). Epilogue handshake: "epi" (storer -> consumers: inputs loaded and the staging
// tile free) and "dfull" (consumers -> storer: tile written).
//
// bf16 and FP8 rowwise: the wgmma accumulates over the whole K range (see the mainloop for when
// stages are released); FP8 rowwise then scales the accumulator by sa[row] * sb[col] in the
// epilogue, before the bias (sa read from global memory, two rows per thread and 64-row slice;
// sb from the tile's copy in shared memory).
//
// FP8 promotion: per K block, each consumer warpgroup issues 4 wgmma k32 steps into a fresh fp32
// accumulator, waits, releases the stage, then adds acc * sa[row] * sb[block] into its fp32
// total. Both warpgroups wait on the same stage and issue their groups together (taking turns on
// the tensor cores is slower: docs/design/gemm.md). A warpgroup's columns can straddle two
// 128-row scale blocks of B (bn = 144, 160, 192); each 8-column accumulator group lies in one
// block, and the promotion is compiled once per position of the block boundary in the slice
// (promote_dispatch), so no group chooses its scale at run time (exact, no approximation); tile
// shapes whose slices always lie in one block (bn 128, bn 256 with 128-column slices, the halves
// of bm = 64 tiles) take one scale per row.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <numeric>
#include <type_traits>

#include "ltx_kernels/activation/activation.cuh"
#include "ltx_kernels/common/fp8_util.h"
#include "ltx_kernels/gemm/gemm_params.h"
#include "ltx_kernels/gemm/sm90_plan.h"
#include "ltx_kernels/gemm/sm90_ptx.cuh"
#include "ltx_kernels/gemm/sm90_wgmma_ops.cuh"

namespace ltx_kernels {
namespace gemm {
namespace sm90 {

constexpr int kConsumerWarps = 8;
constexpr int kThreads = 384;
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;

// What the kernel reads besides the tensor maps (a __grid_constant__ parameter).
struct KernelArgs {
  uint32_t M = 0, N = 0, K = 0;
  uint32_t num_m = 0, num_n = 0, num_kb = 0, num_tiles = 0, group_m = 16;
  uint32_t cluster = 1;
  Sm90Layout L;
  const float* sa = nullptr;
  int64_t sa_sm = 0, sa_sk = 0;
  uint32_t sa_tma = 0;  // sa is loaded by TMA (tm_sa); else by cp.async
  const float* sb = nullptr;
  int64_t sb_sn = 0, sb_sk = 0;
  const void* bias = nullptr;
  uint32_t bias_16bit = 0;  // bias stored in the 16-bit out dtype (else fp32)
  int epi = 0;              // Epilogue
  int out = 0;              // OutKind
  int gate_kind = 0;        // GateKind
  uint32_t tokens_per_sample = 1;
  float* ds = nullptr;  // FP8 output scales
  int64_t ds_sm = 0, ds_sg = 0;
};

// Byte offset of element (r, c) (c even) of a [rows x bn] 16-bit staging tile stored as column
// chunks of `sw` bytes (chunk_bytes apart), each chunk swizzled as TMA's SWIZZLE_<sw>B mode lays it.
template <int kSW>
__device__ __forceinline__ uint32_t stage_off16(uint32_t r, uint32_t c, uint32_t chunk_bytes) {
  constexpr uint32_t kCols = kSW / 2;
  const uint32_t o = r * kSW + (c % kCols) * 2;
  return (c / kCols) * chunk_bytes + (o ^ (((o >> 7) & (kSW / 16 - 1)) << 4));
}
// The same for a byte tile in 128-byte chunks (FP8 output).
__device__ __forceinline__ uint32_t stage_off8(uint32_t r, uint32_t c, uint32_t chunk_bytes) {
  const uint32_t o = r * 128 + (c % 128);
  return (c / 128) * chunk_bytes + (o ^ (((o >> 7) & 7u) << 4));
}

__device__ __forceinline__ uint32_t pack2(float a, float b, bool fp16) {
  if (fp16) {
    const __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&h);
}
__device__ __forceinline__ float2 unpack2(uint32_t v, bool fp16) {
  if (fp16) return __half22float2(*reinterpret_cast<const __half2*>(&v));
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v));
}
__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ float lds_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ float2 lds_f32x2(uint32_t addr) {
  float2 v;
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr));
  return v;
}
__device__ __forceinline__ void sts32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void sts16(uint32_t addr, uint16_t v) {
  asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(addr), "h"(v) : "memory");
}

// The operand recipe of an instantiation, at compile time.
template <Operands kOps>
struct Recipe {
  static_assert(kOps == Operands::kFp8Blockwise || kOps == Operands::kBf16 || kOps == Operands::kFp8Rowwise,
                "the sm_90a kernel reads FP8 1D2D, FP8 rowwise or bf16 operands");
  static constexpr bool kE4m3 = kOps != Operands::kBf16;            // wgmma k32 on e4m3, 128 per stage
  static constexpr bool kPromote = kOps == Operands::kFp8Blockwise;  // per-K-block scales and promotion
  static constexpr bool kRowScales = kOps == Operands::kFp8Rowwise;  // sa[m] * sb[n] in the epilogue
};

template <Operands kOps, int BM, int BN>
struct Tile {
  static_assert(BM == 64 || BM == 128 || BM == 256, "bm is 64, 128 or 256");
  static constexpr int kWaves = BM == 256 ? 2 : 1;  // 64-row wgmma slices per consumer warpgroup
  static constexpr int kWN = BM == 64 ? BN / 2 : BN;  // columns per consumer warpgroup
  static constexpr int kAcc = kWN / 2;                // fp32 accumulator registers per slice
  static constexpr int kSW = out_swizzle_bytes(BN, 2);
  static_assert(kWN % 16 == 0 && kWN >= 16 && kWN <= 256, "wgmma N");
  // a warpgroup's columns touch at most two 128-row scale blocks of B (see the header)
  static_assert(!Recipe<kOps>::kPromote || kWN <= 128 || kWN == 144 || kWN == 160 || kWN == 192 || kWN == 256,
                "FP8: the warpgroup's columns would straddle three scale blocks");
  __device__ __forceinline__ static uint32_t row_off(int wg, int v) {
    return BM == 64 ? 0u : BM == 128 ? uint32_t(64 * wg) : uint32_t(64 * wg + 128 * v);
  }
  __device__ __forceinline__ static uint32_t col_off(int wg) { return BM == 64 ? uint32_t(wg * kWN) : 0u; }
};

// FP8 promotion of one 64-row slice: fin += acc * scale, where the scale of 8-column group j is
// (s0 for rows g, s0h for rows g + 8) in the first 128-column scale block of B, i.e. for
// j < former, and (s1, s1h) after it. F >= 0: former == F, known at compile time (no per-group
// choice); F < 0: chosen per group at run time.
template <int F, int N>
__device__ __forceinline__ void promote(float (&fin)[N], const float (&acc)[N], float s0, float s0h, float s1,
                                        float s1h, uint32_t former) {
#pragma unroll
  for (int j = 0; j < N / 4; ++j) {
    const bool first = F >= 0 ? j < F : uint32_t(j) < former;
    const float lo = first ? s0 : s1, hi = first ? s0h : s1h;
    fin[4 * j] = fmaf(acc[4 * j], lo, fin[4 * j]);
    fin[4 * j + 1] = fmaf(acc[4 * j + 1], lo, fin[4 * j + 1]);
    fin[4 * j + 2] = fmaf(acc[4 * j + 2], hi, fin[4 * j + 2]);
    fin[4 * j + 3] = fmaf(acc[4 * j + 3], hi, fin[4 * j + 3]);
  }
}
// promote<F> for the run-time `former`, one compiled copy per value it can take (F = 16, 16 - kStep,
// ..., kStep groups): the slice start is a multiple of kStep * 8 columns modulo 128.
template <int kStep, int F = 16, int N>
__device__ __forceinline__ void promote_dispatch(float (&fin)[N], const float (&acc)[N], float s0, float s0h, float s1,
                                                 float s1h, uint32_t former) {
  if constexpr (F <= 0) {
    promote<-1>(fin, acc, s0, s0h, s1, s1h, former);
  } else {
    if (former == uint32_t(F)) {
      promote<F>(fin, acc, s0, s0h, s1, s1h, former);
    } else {
      promote_dispatch<kStep, F - kStep>(fin, acc, s0, s0h, s1, s1h, former);
    }
  }
}

// FP8 rowwise: the activation scale of tile row r (0 past M: such rows are never stored).
__device__ __forceinline__ float row_scale(const KernelArgs& p, uint32_t m0, uint32_t r) {
  return m0 + r < p.M ? __ldg(p.sa + int64_t(m0 + r) * p.sa_sm) : 0.f;
}
// FP8 rowwise: x * (sa * sb) for the four values (rows r0, r1; columns c, c + 1) of one 8-column
// accumulator group, sb of the tile's columns from shared memory (sb_base).
__device__ __forceinline__ void apply_row_scales(float& x0, float& x1, float& x2, float& x3, float sa0, float sa1,
                                                 uint32_t sb_base, uint32_t c) {
  const float2 sb = lds_f32x2(sb_base + 4 * c);
  x0 *= sa0 * sb.x;
  x1 *= sa0 * sb.y;
  x2 *= sa1 * sb.x;
  x3 *= sa1 * sb.y;
}

// Epilogue of one consumer warpgroup for 16-bit outputs: y = res (+ bias), activation or gated
// residual, rounded once into the staging tile. kMode: 0 plain, 1 gelu_tanh, 2 gated residual.
// FP8 rowwise: res * (sa[row] * sb[col]) first (apply_row_scales).
template <Operands kOps, int BM, int BN, int kMode, class Res>
__device__ __forceinline__ void epilogue16(const KernelArgs& p, const Res& res, uint32_t sbase, int wg, int wl, int lane,
                                           uint32_t m0) {
  using T = Tile<kOps, BM, BN>;
  const int g = lane >> 2, t4 = lane & 3;
  const bool fp16 = p.out == int(OutKind::kFP16);
  const bool has_bias = p.bias != nullptr;
  const uint32_t d_base = sbase + p.L.off_d, g_base = sbase + p.L.off_g, bias_base = sbase + p.L.off_bias;
  const bool per_token = p.gate_kind == int(GateKind::kPerToken);
  const uint32_t s_first = m0 / p.tokens_per_sample;
#pragma unroll
  for (int v = 0; v < T::kWaves; ++v) {
    const uint32_t rl0 = T::row_off(wg, v) + 16 * wl + g, rl1 = rl0 + 8;
    uint32_t gr0 = rl0, gr1 = rl1;
    if (kMode == 2 && !per_token) {
      gr0 = (m0 + rl0) / p.tokens_per_sample - s_first;
      gr1 = (m0 + rl1) / p.tokens_per_sample - s_first;
    }
    float sa0 = 0.f, sa1 = 0.f;
    if constexpr (Recipe<kOps>::kRowScales) {
      sa0 = row_scale(p, m0, rl0);
      sa1 = row_scale(p, m0, rl1);
    }
#pragma unroll
    for (int j = 0; j < T::kAcc / 4; ++j) {
      const uint32_t c = T::col_off(wg) + 8 * j + 2 * t4;
      float x0 = res[v][4 * j], x1 = res[v][4 * j + 1], x2 = res[v][4 * j + 2], x3 = res[v][4 * j + 3];
      if constexpr (Recipe<kOps>::kRowScales) apply_row_scales(x0, x1, x2, x3, sa0, sa1, sbase + p.L.off_sfa, c);
      if (has_bias) {
        const float2 b = p.bias_16bit ? unpack2(lds32(bias_base + 2 * c), fp16) : lds_f32x2(bias_base + 4 * c);
        x0 += b.x;
        x1 += b.y;
        x2 += b.x;
        x3 += b.y;
      }
      if (kMode == 1) {
        x0 = act_detail::GeluTanh::f(x0);
        x1 = act_detail::GeluTanh::f(x1);
        x2 = act_detail::GeluTanh::f(x2);
        x3 = act_detail::GeluTanh::f(x3);
      }
      const uint32_t o0 = d_base + stage_off16<T::kSW>(rl0, c, p.L.d_chunk);
      const uint32_t o1 = d_base + stage_off16<T::kSW>(rl1, c, p.L.d_chunk);
      if (kMode == 2) {
        const float2 h0 = unpack2(lds32(o0), fp16), h1 = unpack2(lds32(o1), fp16);
        const float2 q0 = unpack2(lds32(g_base + stage_off16<T::kSW>(gr0, c, p.L.g_chunk)), fp16);
        const float2 q1 = unpack2(lds32(g_base + stage_off16<T::kSW>(gr1, c, p.L.g_chunk)), fp16);
        x0 = fmaf(x0, q0.x, h0.x);
        x1 = fmaf(x1, q0.y, h0.y);
        x2 = fmaf(x2, q1.x, h1.x);
        x3 = fmaf(x3, q1.y, h1.y);
      }
      sts32(o0, pack2(x0, x1, fp16));
      sts32(o1, pack2(x2, x3, fp16));
    }
  }
}

// Epilogue for the FP8 output: y = res (+ bias) (gelu_tanh when kGelu), then per row and 128
// columns s = amax / 448, q = e4m3(y / s) exactly as quantize_fp8_per_token_group computes it
// (common/fp8_util.h); q into the staging tile, s straight to global memory. A row's 128 columns
// of one group are spread over the 4 lanes of a quad (32 values each). FP8 rowwise: res * (sa[row] *
// sb[col]) first, as in epilogue16.
template <Operands kOps, int BM, int BN, bool kGelu, class Res>
__device__ __forceinline__ void epilogue_fp8(const KernelArgs& p, Res& res, uint32_t sbase, int wg, int wl, int lane,
                                             uint32_t m0, uint32_t n0) {
  using T = Tile<kOps, BM, BN>;
  static_assert(T::kWN % 128 == 0, "FP8 output: whole 128-column groups per warpgroup");
  const int g = lane >> 2, t4 = lane & 3;
  const bool has_bias = p.bias != nullptr;
  const bool fp16 = p.out == int(OutKind::kFP16);  // never: kept for the bias unpack
  const uint32_t d_base = sbase + p.L.off_d, bias_base = sbase + p.L.off_bias;
#pragma unroll
  for (int v = 0; v < T::kWaves; ++v) {
    const uint32_t rl0 = T::row_off(wg, v) + 16 * wl + g, rl1 = rl0 + 8;
    float sa0 = 0.f, sa1 = 0.f;
    if constexpr (Recipe<kOps>::kRowScales) {
      sa0 = row_scale(p, m0, rl0);
      sa1 = row_scale(p, m0, rl1);
    }
#pragma unroll
    for (int q = 0; q < T::kWN / 128; ++q) {
      float a0 = 0.f, a1 = 0.f;
#pragma unroll
      for (int jj = 0; jj < 16; ++jj) {
        const int j = 16 * q + jj;
        const uint32_t c = T::col_off(wg) + 8 * j + 2 * t4;
        float x0 = res[v][4 * j], x1 = res[v][4 * j + 1], x2 = res[v][4 * j + 2], x3 = res[v][4 * j + 3];
        if constexpr (Recipe<kOps>::kRowScales) apply_row_scales(x0, x1, x2, x3, sa0, sa1, sbase + p.L.off_sfa, c);
        if (has_bias) {
          const float2 b = p.bias_16bit ? unpack2(lds32(bias_base + 2 * c), fp16) : lds_f32x2(bias_base + 4 * c);
          x0 += b.x;
          x1 += b.y;
          x2 += b.x;
          x3 += b.y;
        }
        if (kGelu) {
          x0 = act_detail::GeluTanh::f(x0);
          x1 = act_detail::GeluTanh::f(x1);
          x2 = act_detail::GeluTanh::f(x2);
          x3 = act_detail::GeluTanh::f(x3);
        }
        res[v][4 * j] = x0;
        res[v][4 * j + 1] = x1;
        res[v][4 * j + 2] = x2;
        res[v][4 * j + 3] = x3;
        a0 = fp8_absmax(fp8_absmax(a0, x0), x1);
        a1 = fp8_absmax(fp8_absmax(a1, x2), x3);
      }
      a0 = fmaxf(a0, __shfl_xor_sync(0xffffffffu, a0, 1));
      a0 = fmaxf(a0, __shfl_xor_sync(0xffffffffu, a0, 2));
      a1 = fmaxf(a1, __shfl_xor_sync(0xffffffffu, a1, 1));
      a1 = fmaxf(a1, __shfl_xor_sync(0xffffffffu, a1, 2));
      const float s0 = fp8_scale_from_amax<E4M3>(a0), s1 = fp8_scale_from_amax<E4M3>(a1);
      const Fp8Divisor d0 = fp8_divisor(s0), d1 = fp8_divisor(s1);
#pragma unroll
      for (int jj = 0; jj < 16; ++jj) {
        const int j = 16 * q + jj;
        const uint32_t c = T::col_off(wg) + 8 * j + 2 * t4;
        const float lo[2] = {res[v][4 * j], res[v][4 * j + 1]};
        const float hi[2] = {res[v][4 * j + 2], res[v][4 * j + 3]};
        uint8_t clo[2], chi[2];
        fp8_quantize_bounded<E4M3, 2>(lo, d0, clo);
        fp8_quantize_bounded<E4M3, 2>(hi, d1, chi);
        sts16(d_base + stage_off8(rl0, c, p.L.d_chunk), uint16_t(clo[0] | (uint16_t(clo[1]) << 8)));
        sts16(d_base + stage_off8(rl1, c, p.L.d_chunk), uint16_t(chi[0] | (uint16_t(chi[1]) << 8)));
      }
      // groups past N (the last tile's columns beyond the matrix) have no scale to write
      const uint32_t gi = (n0 + T::col_off(wg)) / 128u + uint32_t(q);
      if (t4 == 0 && gi * 128u < p.N) {
        if (m0 + rl0 < p.M) p.ds[int64_t(m0 + rl0) * p.ds_sm + int64_t(gi) * p.ds_sg] = s0;
        if (m0 + rl1 < p.M) p.ds[int64_t(m0 + rl1) * p.ds_sm + int64_t(gi) * p.ds_sg] = s1;
      }
    }
  }
}

// The FP8 mainloop keeps the tensor cores' idle gap between two K blocks short: the consumers
// read their warpgroup index through a warp shuffle, which tells the compiler that it is
// warp-uniform, so the shared-memory descriptors are computed in uniform registers (as CUTLASS's
// canonical_warp_group_idx does); the work that need not sit between a K block's drain and the
// next wgmma issue (the stage release, the probe of the next stage's full barrier) is done while
// the next K block's group runs: a stage is released one K block later; a stage's descriptors are
// stage 0's plus an offset. Instructions per warp from a K block's drain to the next wgmma issue
// (FP8, ptxas of nvcc 13.0): 125 at 128x192 (96 of them the promotion's FFMAs), 86 at 128x128.
template <Operands kOps, int BM, int BN>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_b,
                const __grid_constant__ CUtensorMap tm_d, const __grid_constant__ CUtensorMap tm_h,
                const __grid_constant__ CUtensorMap tm_g, const __grid_constant__ CUtensorMap tm_sa,
                const __grid_constant__ KernelArgs p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = Tile<kOps, BM, BN>;
  using R = Recipe<kOps>;
  using Mma = std::conditional_t<R::kE4m3, WgmmaE4m3<T::kWN>, WgmmaBf16<T::kWN>>;
  constexpr uint32_t kAStage = uint32_t(BM) * kStageK, kBStage = uint32_t(BN) * kStageK;
  constexpr uint32_t kBHalf = kBStage / 2;

  extern __shared__ __align__(1024) uint8_t smem_raw[];
  const uint32_t raw = ptx::smem_u32(smem_raw);
  const uint32_t sbase = (raw + 1023u) & ~1023u;
  const int tid = int(threadIdx.x), warp = tid >> 5, lane = tid & 31;
  const Sm90Layout& L = p.L;
  const uint32_t S = uint32_t(L.stages);
  const bool pairs = p.cluster > 1;
  const uint32_t rank = pairs ? ptx::cluster_ctarank() : 0u;
  auto full_bar = [&](uint32_t s) { return sbase + L.off_bar + 8u * s; };
  auto empty_bar = [&](uint32_t s) { return sbase + L.off_bar + 8u * (S + s); };
  const uint32_t epi_bar = sbase + L.off_bar + 16u * S, dfull_bar = epi_bar + 8u;

  if (tid == 0) {
    for (uint32_t s = 0; s < S; ++s) {
      // the two loaders' expect_tx arrivals (+ 32 lanes' cp.async arrivals when sa goes by cp.async)
      ptx::mbar_init(full_bar(s), R::kPromote && !p.sa_tma ? 34u : 2u);
      ptx::mbar_init(empty_bar(s), uint32_t(kConsumerWarps) * p.cluster);
    }
    ptx::mbar_init(epi_bar, 1);
    ptx::mbar_init(dfull_bar, kConsumerWarps);
    ptx::fence_barrier_init();
  }
  if (warp == kConsumerWarps && lane == 0) {
    ptx::prefetch_tensormap(&tm_a);
    ptx::prefetch_tensormap(&tm_b);
    ptx::prefetch_tensormap(&tm_d);
    if (R::kPromote && p.sa_tma) ptx::prefetch_tensormap(&tm_sa);
  }
  if (pairs) {
    ptx::cluster_sync();
  } else {
    __syncthreads();
  }

  if (warp >= kConsumerWarps) {
    ptx::reg_dealloc<kProducerRegs>();
    if (warp == kConsumerWarps || warp == kConsumerWarps + 2) {
      // ---------------- loaders: warp 8 A (and sa), warp 10 B ----------------
      const bool b_loader = warp == kConsumerWarps + 2;
      const bool sa_async = R::kPromote && !p.sa_tma && !b_loader;  // all 32 lanes copy sa; else lane 0 alone works
      if (sa_async || lane == 0) {
        constexpr uint32_t kSaBytes = R::kPromote ? uint32_t(BM) * 4u : 0u;
        const uint32_t tx_bytes = b_loader ? kBStage : kAStage + (R::kPromote && p.sa_tma ? kSaBytes : 0u);
        uint32_t stage = 0, phase = 0;
        for (uint32_t t = blockIdx.x; t < p.num_tiles; t += gridDim.x) {
          const TileCoord tc = tile_coord(t, p.num_m, p.num_n, p.group_m, pairs);
          const int32_t m0 = int32_t(tc.mb * BM), n0 = int32_t(tc.nb * BN);
          // cp.async path: this lane's rows m0 + lane + 32 i; rows past M are zero-filled from a
          // valid address
          const float* sa_lane = nullptr;
          int64_t sa_step = 0;
          if (sa_async) {
            sa_lane = p.sa + int64_t(uint32_t(m0) + uint32_t(lane)) * p.sa_sm;
            sa_step = 32 * p.sa_sm;
          }
          for (uint32_t kb = 0; kb < p.num_kb; ++kb) {
            ptx::mbar_wait(empty_bar(stage), phase ^ 1u);
            const uint32_t fb = full_bar(stage);
            if (sa_async) {
              const uint32_t sfa = sbase + L.off_sfa + stage * kSaBytes + 4u * uint32_t(lane);
              const float* src = sa_lane + int64_t(kb) * p.sa_sk;
#pragma unroll
              for (int i = 0; i < BM / 32; ++i) {
                const bool ok = uint32_t(m0) + uint32_t(lane + 32 * i) < p.M;
                ptx::cp_async4(sfa + 128u * uint32_t(i), ok ? src + i * sa_step : p.sa, ok ? 4u : 0u);
              }
              ptx::cp_async_mbar_arrive_noinc(fb);
            }
            if (lane == 0) {
              ptx::mbar_arrive_expect_tx(fb, tx_bytes);
              const int32_t kx = int32_t(kb * (R::kE4m3 ? 128u : 64u));
              if (b_loader) {
                const uint32_t b_dst = sbase + L.off_b + stage * kBStage;
                if (pairs && tc.mcast) {
                  ptx::tma_load_2d_multicast(b_dst + rank * kBHalf, &tm_b, fb, kx, n0 + int32_t(rank) * (BN / 2),
                                             0x3);
                } else {
                  ptx::tma_load_2d(b_dst, &tm_b, fb, kx, n0);
                  ptx::tma_load_2d(b_dst + kBHalf, &tm_b, fb, kx, n0 + BN / 2);
                }
              } else {
                ptx::tma_load_2d(sbase + L.off_a + stage * kAStage, &tm_a, fb, kx, m0);
                if (R::kPromote && p.sa_tma)
                  ptx::tma_load_2d(sbase + L.off_sfa + stage * kSaBytes, &tm_sa, fb, m0, int32_t(kb));
              }
            }
            if (sa_async) __syncwarp();
            if (++stage == S) {
              stage = 0;
              phase ^= 1u;
            }
          }
        }
      }
      __syncwarp();
    } else if (warp == kConsumerWarps + 1) {
      // ---------------- storer ----------------
      if (lane == 0) {
        const bool gated = p.epi == int(Epilogue::kGatedResidual);
        const bool fp8_out = p.out == int(OutKind::kFP8);
        const uint32_t sw = uint32_t(L.d_sw);
        const uint32_t chunk_cols = fp8_out ? 128u : sw / 2u;
        const uint32_t chunks = uint32_t(BN) / chunk_cols;
        const uint32_t bias_elem = p.bias_16bit ? 2u : 4u;
        const bool per_token = p.gate_kind == int(GateKind::kPerToken);
        uint32_t it = 0, pm0 = 0, pn0 = 0;
        for (uint32_t t = blockIdx.x; t < p.num_tiles; t += gridDim.x, ++it) {
          const TileCoord tc = tile_coord(t, p.num_m, p.num_n, p.group_m, pairs);
          const uint32_t m0 = tc.mb * BM, n0 = tc.nb * BN;
          if (it > 0) {
            ptx::mbar_wait_sleep(dfull_bar, (it - 1) & 1u);
            for (uint32_t c = 0; c < chunks; ++c)
              ptx::tma_store_2d(&tm_d, sbase + L.off_d + c * L.d_chunk, int32_t(pn0 + c * chunk_cols), int32_t(pm0));
            ptx::bulk_commit();
            ptx::bulk_wait_read0();
          }
          // inputs of this tile's epilogue (the staging tile is free: its last store was read)
          const uint32_t nvalid = p.N - n0 < uint32_t(BN) ? p.N - n0 : uint32_t(BN);
          const uint32_t bias_bytes = p.bias ? nvalid * bias_elem : 0u;
          uint32_t s_first = 0, s_last = 0, g_loads = 0;
          if (gated && !per_token) {
            s_first = m0 / p.tokens_per_sample;
            s_last = (m0 + BM - 1) / p.tokens_per_sample;
            g_loads = (s_last - s_first) / 8u + 1u;
          }
          uint32_t bytes = bias_bytes;
          if constexpr (R::kRowScales) bytes += nvalid * 4u;  // the tile's weight scales
          if (gated) bytes += chunks * L.d_chunk + (per_token ? chunks * L.d_chunk : g_loads * chunks * 8u * sw);
          ptx::mbar_arrive_expect_tx(epi_bar, bytes);
          if (bias_bytes)
            ptx::bulk_load(sbase + L.off_bias,
                           static_cast<const uint8_t*>(p.bias) + uint64_t(n0) * bias_elem, bias_bytes, epi_bar);
          if constexpr (R::kRowScales) ptx::bulk_load(sbase + L.off_sfa, p.sb + n0, nvalid * 4u, epi_bar);
          if (gated) {
            for (uint32_t c = 0; c < chunks; ++c) {
              const int32_t x = int32_t(n0 + c * chunk_cols);
              ptx::tma_load_2d(sbase + L.off_d + c * L.d_chunk, &tm_h, epi_bar, x, int32_t(m0));
              if (per_token) {
                ptx::tma_load_2d(sbase + L.off_g + c * L.g_chunk, &tm_g, epi_bar, x, int32_t(m0));
              } else {
                for (uint32_t i = 0; i < g_loads; ++i)
                  ptx::tma_load_2d(sbase + L.off_g + c * L.g_chunk + i * 8u * sw, &tm_g, epi_bar, x,
                                   int32_t(s_first + 8u * i));
              }
            }
          }
          pm0 = m0;
          pn0 = n0;
        }
        if (it > 0) {
          ptx::mbar_wait(dfull_bar, (it - 1) & 1u);
          for (uint32_t c = 0; c < chunks; ++c)
            ptx::tma_store_2d(&tm_d, sbase + L.off_d + c * L.d_chunk, int32_t(pn0 + c * chunk_cols), int32_t(pm0));
          ptx::bulk_commit();
          ptx::bulk_wait0();
        }
      }
      __syncwarp();
    }
  } else {
    // ---------------- consumers ----------------
    ptx::reg_alloc<kConsumerRegs>();
    const int wg = R::kPromote ? __shfl_sync(0xffffffffu, warp >> 2, 0) : warp >> 2;
    const int wl = warp & 3, g = lane >> 2;
    const uint32_t a_base = sbase + L.off_a + T::row_off(wg, 0) * kStageK;
    const uint32_t b_base = sbase + L.off_b + T::col_off(wg) * kStageK;
    uint32_t stage = 0, phase = 0, it = 0;
    float acc[T::kAcc];
    float fin[T::kWaves][T::kAcc];
    for (uint32_t t = blockIdx.x; t < p.num_tiles; t += gridDim.x, ++it) {
      const TileCoord tc = tile_coord(t, p.num_m, p.num_n, p.group_m, pairs);
      const uint32_t m0 = tc.mb * BM, n0 = tc.nb * BN;
      // the other CTA of the pair has a tile this round unless this is rank 0's lone last tile
      const bool peer_alive = pairs && (rank == 1u || t + 1u < p.num_tiles);
      auto release = [&](uint32_t s) {
        if (lane == 0) ptx::mbar_arrive(empty_bar(s));
        if (pairs && lane == 1) {
          if (peer_alive) {
            ptx::mbar_arrive_cluster(empty_bar(s), rank ^ 1u);
          } else {
            ptx::mbar_arrive(empty_bar(s));
          }
        }
      };
      if constexpr (R::kPromote) {
        // every slice of this tile shape lies inside one 128-column scale block of B
        constexpr bool kOneBlock = BN % 128 == 0 && T::kWN <= 128 && 128 % T::kWN == 0;
        // slice starts (n0 + col_off) are multiples of gcd(BN, kWN, 128) columns modulo 128
        constexpr int kFormerStep = std::gcd(std::gcd(BN, T::kWN), 128) / 8;
        const uint32_t cstart = n0 + T::col_off(wg);
        const uint32_t fbk = cstart / 128u - n0 / 128u;       // first scale block of this warpgroup
        const uint32_t former = (128u - cstart % 128u) / 8u;  // 8-column groups inside it
        // the warpgroup's two weight-scale rows (blocks past N: any valid address, their columns
        // are never stored)
        const uint32_t nb0 = n0 / 128u + fbk;
        const float* sb_p0 = nb0 * 128u < p.N ? p.sb + int64_t(nb0) * p.sb_sn : p.sb;
        const float* sb_p1 = (nb0 + 1u) * 128u < p.N ? p.sb + int64_t(nb0 + 1u) * p.sb_sn : sb_p0;
#pragma unroll
        for (int v = 0; v < T::kWaves; ++v)
#pragma unroll
          for (int i = 0; i < T::kAcc; ++i) fin[v][i] = 0.f;
        // The tensor cores idle from the end of a K block's wgmma group until the next group is
        // issued (the drain and promotion), so nothing else sits on that path: the next stage's
        // full barrier is probed (non-blocking) before the promotion, and a block's wgmma group
        // is issued before its scales are loaded (the loads complete under the group).
        bool ready = false;  // the current stage's full barrier was seen complete in advance
        uint32_t held = ~0u;  // the stage whose group completed last, released under the next group
        // A stage's descriptors as stage 0's plus the stage offset (the address field
        // is the shared-memory address / 16, and no stage reaches past 2^18 bytes). The empty asm
        // makes the two values opaque, so that ptxas keeps them instead of recomputing the
        // shared-memory base inside the loop, which it did at 128x192 (12 instructions on the
        // path from a K block's drain to the next issue).
        uint64_t bdesc0 = ptx::desc_sw128(b_base), adesc0 = ptx::desc_sw128(a_base);
        asm volatile("" : "+l"(bdesc0), "+l"(adesc0));
        for (uint32_t kb = 0; kb < p.num_kb; ++kb) {
          if (!ready) ptx::mbar_wait(full_bar(stage), phase);
          const uint64_t bdesc = bdesc0 + uint64_t(stage * (kBStage >> 4));
          const uint32_t sfa = sbase + L.off_sfa + stage * uint32_t(BM) * 4u;
          float sa0 = 0.f, sa1 = 0.f, sb0 = 0.f, sb1 = 0.f;
#pragma unroll
          for (int v = 0; v < T::kWaves; ++v) {
            const uint64_t adesc = adesc0 + uint64_t((stage * kAStage + uint32_t(v) * 128u * kStageK) >> 4);
            ptx::fence_regs(acc);
            ptx::wgmma_fence();
#pragma unroll
            for (int k = 0; k < 4; ++k) Mma::mma(acc, adesc + uint64_t(2 * k), bdesc + uint64_t(2 * k), k);
            ptx::wgmma_commit();
            ptx::fence_regs(acc);
            if (v == 0) {
              if (held != ~0u) release(held);
              const bool wrap = stage + 1u == S;
              ready = kb + 1 < p.num_kb && ptx::mbar_test_wait(full_bar(wrap ? 0u : stage + 1u), wrap ? phase ^ 1u : phase);
            }
            // this wave's scales (sa from the stage: before it is released below)
            const uint32_t r = T::row_off(wg, v) + uint32_t(16 * wl + g);
            sa0 = lds_f32(sfa + 4u * r);
            sa1 = lds_f32(sfa + 4u * (r + 8u));
            if (v == 0) {
              sb0 = __ldg(sb_p0 + int64_t(kb) * p.sb_sk);
              sb1 = __ldg(sb_p1 + int64_t(kb) * p.sb_sk);
            }
            ptx::wgmma_wait<0>();
            ptx::fence_regs(acc);
            if (v == T::kWaves - 1) {
              held = stage;
              if (++stage == S) {
                stage = 0;
                phase ^= 1u;
              }
            }
            const float s00 = sa0 * sb0, s01 = sa0 * sb1, s10 = sa1 * sb0, s11 = sa1 * sb1;
            if constexpr (kOneBlock) {
              promote<T::kAcc / 4>(fin[v], acc, s00, s10, s01, s11, former);
            } else {
              promote_dispatch<kFormerStep>(fin[v], acc, s00, s10, s01, s11, former);
            }
          }
        }
        release(held);  // the tile's last K block
      } else {
        // bf16 and FP8 rowwise: accumulate across the whole K range. With >= 4 stages one wgmma
        // group stays in flight (the stage of the previous K block is released once its group has
        // completed); with fewer, each stage is released as soon as its own group completes, so
        // that the loader keeps S - 1 stages of lookahead (the two warpgroups' groups interleave
        // on the tensor cores, which hides the wait).
        const bool pipelined = S >= 4;
        uint32_t prev = 0;
        for (uint32_t kb = 0; kb < p.num_kb; ++kb) {
          ptx::mbar_wait(full_bar(stage), phase);
          const uint64_t bdesc = ptx::desc_sw128(b_base + stage * kBStage);
#pragma unroll
          for (int v = 0; v < T::kWaves; ++v) ptx::fence_regs(fin[v]);
          ptx::wgmma_fence();
#pragma unroll
          for (int v = 0; v < T::kWaves; ++v) {
            const uint64_t adesc = ptx::desc_sw128(a_base + stage * kAStage + uint32_t(v) * 128u * kStageK);
#pragma unroll
            for (int k = 0; k < 4; ++k)
              Mma::mma(fin[v], adesc + uint64_t(2 * k), bdesc + uint64_t(2 * k), (kb > 0 || k > 0) ? 1 : 0);
          }
          ptx::wgmma_commit();
#pragma unroll
          for (int v = 0; v < T::kWaves; ++v) ptx::fence_regs(fin[v]);
          if (pipelined) {
            ptx::wgmma_wait<1>();
            if (kb > 0) release(prev);
          } else {
            ptx::wgmma_wait<0>();
            release(stage);
          }
          prev = stage;
          if (++stage == S) {
            stage = 0;
            phase ^= 1u;
          }
        }
        ptx::wgmma_wait<0>();
#pragma unroll
        for (int v = 0; v < T::kWaves; ++v) ptx::fence_regs(fin[v]);
        if (pipelined) release(prev);
      }

      // ---- epilogue of this warpgroup's slice
      ptx::mbar_wait(epi_bar, it & 1u);
      if (p.out == int(OutKind::kFP8)) {
        if constexpr (T::kWN % 128 == 0) {
          if (p.epi == int(Epilogue::kGeluTanh)) {
            epilogue_fp8<kOps, BM, BN, true>(p, fin, sbase, wg, wl, lane, m0, n0);
          } else {
            epilogue_fp8<kOps, BM, BN, false>(p, fin, sbase, wg, wl, lane, m0, n0);
          }
        }
      } else if (p.epi == int(Epilogue::kGeluTanh)) {
        epilogue16<kOps, BM, BN, 1>(p, fin, sbase, wg, wl, lane, m0);
      } else if (p.epi == int(Epilogue::kGatedResidual)) {
        epilogue16<kOps, BM, BN, 2>(p, fin, sbase, wg, wl, lane, m0);
      } else {
        epilogue16<kOps, BM, BN, 0>(p, fin, sbase, wg, wl, lane, m0);
      }
      ptx::fence_proxy_async_smem();
      __syncwarp();
      if (lane == 0) ptx::mbar_arrive(dfull_bar);
    }
    (void)acc;
  }
  __syncwarp();
  if (pairs) ptx::cluster_sync();
#endif
}

}  // namespace sm90
}  // namespace gemm
}  // namespace ltx_kernels
