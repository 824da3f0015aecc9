// Blockwise-scaled FP8 GEMM for few tokens (M <= 64: decode, small batches), on mma.sync e4m3
// (sm_89 and newer). Semantics and layouts: ltx_kernels/gemm/fp8_gemm.h. No torch.
//
// Why a separate kernel: at M <= 64 the GEMM reads N*K weight bytes and does 2*M*N*K FLOPs, i.e.
// at most 128 FLOP per weight byte, below the H200's FP8 ridge (~400 FLOP/B): the weight read is
// the whole cost (4096 x 4096: 16.8 MB = ~4 us at the copy rate). A 64- or 128-row wgmma tile
// wastes most of its MMA on padding tokens and, with 32 x 32 such tiles at N = K = 4096, cannot
// put enough bytes in flight on 132 SMs. So the operands swap roles ("swap AB"): the weight rows
// are the MMA's M side (m16), the tokens its N side (n8 tiles), and every SM streams weights.
//
// Work split. One CTA = 8 warps = WR (4) row groups x WK (2) K groups; warp (wr, wk) owns the 16
// weight rows row0 + 16*wr .. +15 and every WK-th 128-wide K block of the CTA's K range. The grid
// is (ceil(N / 64), SK): SK > 1 splits K across CTAs when the row tiles alone leave SMs idle; the
// SK partial sums go to a workspace and the last CTA of a row tile (atomic counter) adds them in
// split order (deterministic), adds the bias and writes D.
//
// Data movement: a cp.async ring in shared memory (4 stages; 3 for the wgmma variant at M > 32, so
// that two CTAs fit per SM), one stage = one step of WK K blocks: the CTA's 64 weight rows x WK x
// 128 B (16 KB), the activations M_pad x WK x 128 B, their sa values and the WK sb values. Stages
// in flight x CTAs per SM = 64-96 KB of weights per SM, above what HBM needs to stream at full
// rate (~4.8 TB/s x ~1 us / 132 SMs ~ 36 KB per SM). Streaming the weights straight into
// registers two steps ahead instead costs 168 registers even at M <= 8 (1 CTA per SM, too few
// bytes in flight). What limits it is latency, not bandwidth: 16 warps per SM, every thread issues
// its own copies and address arithmetic per stage, one barrier per step (Nsight Compute shows
// DRAM well below its peak). A TMA producer warp is the next step.
//
// The k permutation. mma.m16n8k32 gives lane (g = lane/4, t = lane%4) the k slots
// {4t..4t+3} (a0/a2 low, b0) and {16+4t..16+4t+3} (a2/a3, b1) of each 32-wide k step. A dot
// product does not care in which order k is summed as long as A and B agree, so here lane t takes
// the 16 contiguous bytes [16t, 16t+16) of each 64-wide half block of its weight rows g and g+8
// and of its token g: bytes 0-7 feed k step 2c, bytes 8-15 k step 2c+1 (c = half). Every physical
// k of the block meets exactly one logical slot, identically for A and B: one 16-byte shared load
// per row and half, no ldmatrix.
//
// Shared tiles (weights and activations): [rows][128 B], 16-byte chunk q of row r stored at chunk
// q ^ ((r & 1) << 2). A quarter warp (lanes 8i..8i+7: rows r, r+1, t = 0..3) reads chunks
// {0..3} (or {4..7}) of rows r and r+1: the swizzle sends row r+1 to the other half, so the
// eight 16-byte reads cover all 32 banks once.
//
// Two variants of the inner product (template flag WG):
//   * mma.sync (sm_89+): per warp, 16 rows x M_pad tokens with m16n8k32 and the k permutation
//     above (conflict-free 16-byte shared loads, swizzle q ^ ((r & 1) << 2)). On Hopper the
//     FP8 mma.sync rate, a fraction of wgmma's, makes it compute bound at M = 64: enough for
//     M <= 16 only.
//   * wgmma (sm_90a builds on compute capability 9.0): per warpgroup (= one K group), one
//     wgmma.m64nNk32 per 32-wide k step with N = M_pad, both operands K-major from shared memory
//     in the canonical 128B swizzle (chunk q ^ (r % 8), 1024-byte atoms), and split-K reduced in
//     distributed shared memory inside a (1, SK) thread-block cluster instead of the workspace +
//     counter + memset of the mma.sync variant.
//
// Promotion (the "1D2D" recipe): per K block fresh fp32 accumulators, then
// total += acc * (sb(n/128, kb) * sa(m, kb)); a warp's 16 rows sit inside one 128-row scale block.
#pragma once

#include <cooperative_groups.h>
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ltx_kernels/gemm/fp8_gemm.h"
#include "ltx_kernels/gemm/sm89_fp8_gemm.cuh"

namespace ltx_kernels {
namespace gemm_skinny {

constexpr int kWR = 4;                    // row groups (16 rows each) per CTA = warps of a warpgroup
constexpr int kWK = 2;                    // K groups per CTA (= warpgroups)
constexpr int kThreads = 32 * kWR * kWK;  // 256
constexpr int kRowsPerCta = 16 * kWR;     // 64
constexpr int kMaxClusterSplits = 8;      // portable cluster size

// WG = the sm_90a variant: wgmma.m64nNk32 (N = M_pad tokens) from 128B-swizzled shared tiles, and
// split-K reduced through distributed shared memory inside a (1, SK) cluster (no workspace).
template <int NT, bool WG>
struct Cfg {
  static constexpr int MP = 8 * NT;                  // padded token count
  static constexpr int W = kWK * kRowsPerCta * 128;  // weight bytes per stage (16 KB)
  static constexpr int ACT = kWK * MP * 128;         // activation bytes per stage
  static constexpr int SA = kWK * MP * 4;            // sa bytes per stage
  static constexpr int SB = 16;                      // WK sb values, padded
  static constexpr int STAGE = (W + ACT + SA + SB + 1023) / 1024 * 1024;  // 1024-aligned (swizzle atoms)
  static constexpr int STAGES = (WG && NT == 8) ? 3 : 4;
  static constexpr int RED = kWR * NT * 32 * 16;     // reduction buffer (float4 per lane per n tile)
  static constexpr int SMEM = (STAGES * STAGE > 2 * RED ? STAGES * STAGE : 2 * RED) + 1024;  // + alignment slack
  // registers: mma.sync <= 128 at NT <= 4 (2 CTAs per SM); wgmma keeps no A/B fragments
  static constexpr int MIN_BLOCKS = (WG || NT <= 4) ? 2 : 1;
  static constexpr int W_CPT = W / 16 / kThreads;    // weight chunks per thread per stage (4)
  static constexpr int A_CPT = (ACT / 16 + kThreads - 1) / kThreads;
  static_assert(W % (16 * kThreads) == 0, "weight chunks split evenly");
};

__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes)
               : "memory");
}

__device__ __forceinline__ uint4 lds128(const uint8_t* p) {
  return *reinterpret_cast<const uint4*>(p);
}

// 16-byte chunk q of tile row r (rows of 128 B) lives at chunk swz(r, q). mma.sync reads: the
// conflict-free half swap above. wgmma: the canonical 128B swizzle (chunk ^ row % 8 inside
// 1024-byte atoms of 8 rows), what its shared-memory descriptor with layout type 1 expects.
template <bool WG>
__host__ __device__ constexpr int swz(int row, int q) {
  return WG ? (q ^ (row & 7)) : (q ^ ((row & 1) << 2));
}

// wgmma shared-memory descriptor, K-major operand with 128B swizzle: start address >> 4 (bits
// 0-13), leading offset unused for swizzled K-major (1), stride offset = 1024 B between 8-row
// atoms (bits 32-45), layout type 1 = SWIZZLE_128B (bits 62-63). Advancing the start address by
// 32 B selects the next 32-wide k step inside the atom (the swizzle applies to address bits).
__device__ __forceinline__ uint64_t sw128_desc(uint32_t smem_addr) {
  return uint64_t((smem_addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}

template <int NT>
struct Wgmma;
template <>
struct Wgmma<1> {
  __device__ __forceinline__ static void run(float (&d)[1][4], uint64_t a, uint64_t b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, %4, %5, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3])
        : "l"(a), "l"(b), "r"(scale_d));
  }
};
template <>
struct Wgmma<2> {
  __device__ __forceinline__ static void run(float (&d)[2][4], uint64_t a, uint64_t b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3])
        : "l"(a), "l"(b), "r"(scale_d));
  }
};
template <>
struct Wgmma<4> {
  __device__ __forceinline__ static void run(float (&d)[4][4], uint64_t a, uint64_t b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])
        : "l"(a), "l"(b), "r"(scale_d));
  }
};
template <>
struct Wgmma<8> {
  __device__ __forceinline__ static void run(float (&d)[8][4], uint64_t a, uint64_t b, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
        : "l"(a), "l"(b), "r"(scale_d));
  }
};

template <int NT>
__device__ __forceinline__ void fence_operands(float (&d)[NT][4]) {
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[j][e])::"memory");
}

// The workspace of a split-K launch without clusters: counters (one int per row tile, zeroed by
// the launcher before the kernel) then the partial sums, float4 per (split, tile, row group,
// n tile, lane).
struct SplitWorkspace {
  int* counters = nullptr;
  float4* partial = nullptr;
};

template <int NT, bool WG>
__global__ void __launch_bounds__(kThreads, Cfg<NT, WG>::MIN_BLOCKS)
    skinny_gemm_kernel(const ltx_kernels::gemm::Fp8BlockwiseGemmArgs p, const int splits, SplitWorkspace ws) {
  using C = Cfg<NT, WG>;
  constexpr int MP = C::MP;
  constexpr int ST = C::STAGES;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  // 1024-aligned base (the 128B-swizzle atoms of the wgmma variant; harmless for mma.sync)
  uint8_t* smem = smem_raw + ((1024 - (gemm_sm89::smem_u32(smem_raw) & 1023)) & 1023);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wr = warp % kWR, wk = warp / kWR;
  const int g = lane >> 2, t = lane & 3;

  const int64_t tile = blockIdx.x;
  const int split = blockIdx.y;
  const int64_t KB = p.K / 128;
  const int64_t kb_begin = KB * split / splits, kb_end = KB * (split + 1) / splits;
  const int nsteps = int((kb_end - kb_begin + kWK - 1) / kWK);
  const int64_t cta_row0 = tile * kRowsPerCta;

  // ---- this thread's copy assignments (fixed over the stages).
  // weights: chunk i = tid + 256 j -> K group j / 2, row (tid / 8 + 32 j) % 64, chunk tid % 8
  const int wq = tid & 7;
  const uint8_t* wsrc[2];
  bool wok[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row = cta_row0 + (tid >> 3) + 32 * h;
    wok[h] = row < p.N;
    wsrc[h] = p.b + (wok[h] ? row : 0) * p.ldb + wq * 16;
  }
  const float* sb_row = p.b_scales + (cta_row0 / 128) * p.sb_stride_n;

  auto issue_stage = [&](int s) {
    uint8_t* st = smem + (s % ST) * C::STAGE;
    if (s < nsteps) {
      const int64_t kb0 = kb_begin + int64_t(s) * kWK;
#pragma unroll
      for (int j = 0; j < C::W_CPT; ++j) {
        const int kl = j >> 1, h = j & 1, row = (tid >> 3) + 32 * h;
        const bool ok = wok[h] && kb0 + kl < kb_end;
        const uint8_t* src = ok ? wsrc[h] + (kb0 + kl) * 128 : p.b;
        uint8_t* dst = st + kl * (kRowsPerCta * 128) + row * 128 + swz<WG>(row, wq) * 16;
        gemm_sm89::cp_async16(gemm_sm89::smem_u32(dst), src, ok ? 16 : 0);
      }
      uint8_t* sact = st + C::W;
#pragma unroll
      for (int j = 0; j < C::A_CPT; ++j) {
        const int i = tid + j * kThreads;
        if (i < C::ACT / 16) {
          const int kl = i / (MP * 8), row = (i >> 3) % MP, q = i & 7;
          const bool ok = row < p.M && kb0 + kl < kb_end;
          const uint8_t* src = ok ? p.a + int64_t(row) * p.lda + (kb0 + kl) * 128 + q * 16 : p.a;
          uint8_t* dst = sact + kl * (MP * 128) + row * 128 + swz<WG>(row, q) * 16;
          gemm_sm89::cp_async16(gemm_sm89::smem_u32(dst), src, ok ? 16 : 0);
        }
      }
      if (tid < kWK * MP) {
        const int kl = tid / MP, row = tid % MP;
        const bool ok = row < p.M && kb0 + kl < kb_end;
        const float* src = ok ? p.a_scales + int64_t(row) * p.sa_stride_m + (kb0 + kl) * p.sa_stride_k : p.a_scales;
        cp_async4(gemm_sm89::smem_u32(st + C::W + C::ACT + tid * 4), src, ok ? 4 : 0);
      } else if (tid >= kThreads - kWK) {
        const int kl = tid - (kThreads - kWK);
        const bool ok = kb0 + kl < kb_end;
        const float* src = ok ? sb_row + (kb0 + kl) * p.sb_stride_k : p.b_scales;
        cp_async4(gemm_sm89::smem_u32(st + C::W + C::ACT + C::SA + kl * 4), src, ok ? 4 : 0);
      }
    }
    gemm_sm89::cp_async_commit();  // possibly empty: keeps the group count uniform
  };

  float total[NT][4];
#pragma unroll
  for (int j = 0; j < NT; ++j) total[j][0] = total[j][1] = total[j][2] = total[j][3] = 0.f;

#pragma unroll
  for (int s = 0; s < ST - 1; ++s) issue_stage(s);

  const int64_t row0 = cta_row0 + 16 * wr;  // this warp's 16 rows
  const bool warp_rows = row0 < p.N;
  const int rl = 16 * wr + g, rh = rl + 8;  // local rows of this lane's fragments
  for (int s = 0; s < nsteps; ++s) {
    gemm_sm89::cp_async_wait<ST - 2>();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if constexpr (WG) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // cp.async data -> wgmma
#endif
    __syncthreads();  // stage s visible to all; the slot of stage s-1 is free
    issue_stage(s + ST - 1);
    const int64_t kb = kb_begin + int64_t(s) * kWK + wk;
    // WG: the whole warpgroup takes part in wgmma (rows >= N are zeros in shared memory)
    if ((WG || warp_rows) && kb < kb_end) {
      const uint8_t* st = smem + (s % ST) * C::STAGE;
      const uint8_t* sw = st + wk * (kRowsPerCta * 128);
      const uint8_t* act = st + C::W + wk * (MP * 128);
      const float* ssa = reinterpret_cast<const float*>(st + C::W + C::ACT) + wk * MP;
      const float sbv = reinterpret_cast<const float*>(st + C::W + C::ACT + C::SA)[wk];
      float acc[NT][4];
#pragma unroll
      for (int j = 0; j < NT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.f;
      if constexpr (WG) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        const uint32_t a_addr = gemm_sm89::smem_u32(sw), b_addr = gemm_sm89::smem_u32(act);
        fence_operands<NT>(acc);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int ks = 0; ks < 4; ++ks)
          Wgmma<NT>::run(acc, sw128_desc(a_addr + 32 * ks), sw128_desc(b_addr + 32 * ks), ks);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        fence_operands<NT>(acc);
#else
        __trap();  // never launched: the host takes this variant only with an sm_90a image
#endif
      } else {
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const uint4 wl = lds128(sw + rl * 128 + swz<WG>(rl, 4 * c + t) * 16);
          const uint4 wh = lds128(sw + rh * 128 + swz<WG>(rh, 4 * c + t) * 16);
          const uint32_t a0[4] = {wl.x, wh.x, wl.y, wh.y};
          const uint32_t a1[4] = {wl.z, wh.z, wl.w, wh.w};
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            const int row = 8 * j + g;
            const uint4 x = lds128(act + row * 128 + swz<WG>(row, 4 * c + t) * 16);
            gemm_sm89::mma_e4m3(acc[j], a0, x.x, x.y);
            gemm_sm89::mma_e4m3(acc[j], a1, x.z, x.w);
          }
        }
      }
      // wgmma's accumulator fragment of m64nNk32 has the mma.sync m16n8 layout per warp (warp w
      // of the warpgroup: rows 16w + g, +8; n tile j: columns 8j + 2t, +1), so one promotion.
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const float2 sa2 = *reinterpret_cast<const float2*>(ssa + 8 * j + 2 * t);
        const float s0v = sbv * sa2.x, s1v = sbv * sa2.y;
        total[j][0] = fmaf(acc[j][0], s0v, total[j][0]);
        total[j][1] = fmaf(acc[j][1], s1v, total[j][1]);
        total[j][2] = fmaf(acc[j][2], s0v, total[j][2]);
        total[j][3] = fmaf(acc[j][3], s1v, total[j][3]);
      }
    }
  }

  // ---- reduce the WK K groups through shared memory (the ring is free after this barrier).
  gemm_sm89::cp_async_wait<0>();
  __syncthreads();
  float4* red = reinterpret_cast<float4*>(smem);
  static_assert(kWK == 2, "one reduction round");
  if (wk == 1) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
      red[(wr * NT + j) * 32 + lane] = make_float4(total[j][0], total[j][1], total[j][2], total[j][3]);
  }
  __syncthreads();
  if (wk == 0) {
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const float4 o = red[(wr * NT + j) * 32 + lane];
      total[j][0] += o.x;
      total[j][1] += o.y;
      total[j][2] += o.z;
      total[j][3] += o.w;
    }
  }

  if (splits > 1) {
    if constexpr (WG) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      // ---- split-K inside the cluster: every CTA publishes its partial in its own shared memory
      // (second half of the reduction area), rank 0 adds them in rank order (deterministic).
      namespace cg = cooperative_groups;
      cg::cluster_group cluster = cg::this_cluster();
      float4* mine = red + kWR * NT * 32;
      if (wk == 0) {
#pragma unroll
        for (int j = 0; j < NT; ++j)
          mine[(wr * NT + j) * 32 + lane] = make_float4(total[j][0], total[j][1], total[j][2], total[j][3]);
      }
      cluster.sync();
      const unsigned rank = cluster.block_rank();
      if (rank == 0 && wk == 0) {
        for (int r = 1; r < splits; ++r) {
          const float4* other = cluster.map_shared_rank(mine, r);
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            const float4 o = other[(wr * NT + j) * 32 + lane];
            total[j][0] += o.x;
            total[j][1] += o.y;
            total[j][2] += o.z;
            total[j][3] += o.w;
          }
        }
      }
      cluster.sync();  // the other CTAs' shared memory stays alive until rank 0 has read it
      if (rank != 0) return;
#else
      __trap();
#endif
    } else {
      // ---- split-K through the workspace: the last CTA of the row tile sums all partials.
      const int64_t ntiles = gridDim.x;
      auto part = [&](int sp, int j) {
        return ws.partial + (((int64_t(sp) * ntiles + tile) * kWR + wr) * NT + j) * 32 + lane;
      };
      if (wk == 0) {
#pragma unroll
        for (int j = 0; j < NT; ++j)
          __stcg(part(split, j), make_float4(total[j][0], total[j][1], total[j][2], total[j][3]));
      }
      __threadfence();
      __syncthreads();
      __shared__ int is_last;
      if (tid == 0) is_last = atomicAdd(ws.counters + tile, 1) == splits - 1;
      __syncthreads();
      if (!is_last) return;
      __threadfence();
      if (wk == 0) {
#pragma unroll
        for (int j = 0; j < NT; ++j) total[j][0] = total[j][1] = total[j][2] = total[j][3] = 0.f;
        for (int sp = 0; sp < splits; ++sp) {
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            const float4 o = __ldcg(part(sp, j));
            total[j][0] += o.x;
            total[j][1] += o.y;
            total[j][2] += o.z;
            total[j][3] += o.w;
          }
        }
      }
    }
  }

  // ---- epilogue: + bias, round once, store D[token, row] (rows >= N, tokens >= M never written).
  if (wk != 0 || !warp_rows) return;
  const int64_t r_lo = row0 + g, r_hi = row0 + g + 8;
  const bool ok_lo = r_lo < p.N, ok_hi = r_hi < p.N;
  const float b_lo = (p.bias && ok_lo) ? __ldg(p.bias + r_lo) : 0.f;
  const float b_hi = (p.bias && ok_hi) ? __ldg(p.bias + r_hi) : 0.f;
  const bool bf16 = p.out == ltx_kernels::gemm::GemmOut::kBF16;
  uint16_t* d = static_cast<uint16_t*>(p.d);
#pragma unroll
  for (int j = 0; j < NT; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int m = 8 * j + 2 * t + (e & 1);
      const bool hi = e >= 2;
      if (m < p.M && (hi ? ok_hi : ok_lo)) {
        const float v = total[j][e] + (hi ? b_hi : b_lo);
        const uint32_t packed = gemm_sm89::pack_out2(v, 0.f, bf16);
        d[int64_t(m) * p.ldd + (hi ? r_hi : r_lo)] = uint16_t(packed & 0xFFFF);
      }
    }
  }
}

}  // namespace gemm_skinny
}  // namespace ltx_kernels
