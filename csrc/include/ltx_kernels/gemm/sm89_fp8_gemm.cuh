// Blockwise-scaled FP8 GEMM on mma.sync (sm_89 Ada; also runs on Hopper/Blackwell as a fallback),
// with an FP6-weight variant that unpacks LTX-2's packed FP6 to e4m3 in shared memory.
// Semantics and layouts: ltx_kernels/gemm/fp8_gemm.h; FP8 block scaling: docs/semantics.md. No torch.
//
//   D[m, n] = sum_kb (A_kb . B_kb) * sa(m, kb) * sb(n / 128, kb) + bias[n]
//
// Design (one CTA = 256 threads = 8 warps, tile BM x 128 x 128):
//   * BM = 128 (large M) or 64 (small M / few tiles). Warps 2 (M) x 4 (N), warp tile (BM/2) x 32:
//     MT = BM/32 m16 tiles x NT = 4 n8 tiles of mma.m16n8k32 per 32-wide K step, 4 K steps per
//     128-wide K block.
//   * Global -> shared: cp.async 16 B (.cg), STAGES-deep ring, zero-fill (src-size 0) for rows
//     past M / N, so ragged tiles multiply zeros. K % 128 == 0: no K tail.
//   * Shared tiles are [rows][128 bytes] with the 16-byte chunk index XOR-swizzled by (row & 7):
//     chunk c of row r lives at r * 128 + ((c ^ (r & 7)) * 16). The 8 row addresses of one
//     ldmatrix 8x8 matrix (8 consecutive rows, same logical chunk) then hit 8 distinct chunks =
//     all 32 banks once: conflict free (checked below by static_assert).
//   * FP6: B stage = [128][96] packed bytes (4 values -> 3 bytes per group). After the stage lands,
//     all threads unpack it (fp6_unpack4 + fp6_e4m3_restore from formats_lowbit.h) into one
//     swizzled [128][128] e4m3 tile, then the fp8 fragment code runs unchanged.
//   * Per 128-wide K block: fresh fp32 accumulators (acc), then promotion
//     total += acc * (sa(m, kb) * sb(nb, kb)) in fp32 (the "1D2D" recipe: a full 128-K block is
//     summed by the tensor core before scaling).
//   * Epilogue: total + bias (fp32) -> bf16/fp16, staged through shared memory (padded rows),
//     then 16-byte coalesced stores when D and ldd allow, element stores otherwise; rows >= M and
//     columns >= N are never written.
//   * Grid: 1-D over tiles, grouped by 8 M-tiles (consecutive CTAs share B tiles in L2).
//
// ---------------------------------------------------------------------------------------------
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k32", .e4m3 operands, f32 accum).
// lane = %laneid, g = lane >> 2 (groupID), t = lane & 3 (threadID_in_group).
//   A (16 x 32, row-major = K contiguous): 4 .b32 regs, elements a0..a15 low to high, reg r holds
//     a[4r .. 4r+3]:  row = g + 8 * (r & 1),  col(k) = 4t + (i & 3) + 16 * (r >> 1)
//     i.e. r0: (g, 4t..4t+3)  r1: (g+8, 4t..)  r2: (g, 16+4t..)  r3: (g+8, 16+4t..).
//   B (32 x 8, "col" = stored N-major with K contiguous, exactly our [N, K] weight): 2 regs,
//     b0..b7, reg r holds b[4r .. 4r+3]: row(k) = 4t + (i & 3) + 16 * r,  col(n) = g.
//   C/D (16 x 8 fp32): c0..c3: row = g + 8 * (i >> 1), col = 2t + (i & 1).
// ldmatrix.sync.aligned.m8n8.x4.shared.b16: four 8x8 matrices of 16-bit elements = 8 rows of
//   16 BYTES each; lanes 8j .. 8j+7 supply the row addresses of matrix j (lane 8j + r -> row r);
//   destination reg j of lane l receives matrix j, row (l >> 2), bytes 4 (l & 3) .. 4 (l & 3) + 3.
//   For 8-bit data that is row g, k = 4t .. 4t+3 within the matrix's 16-byte k-slice: exactly
//   the per-register shape of the A and B fragments above.
// So, for one m16 x k32 A fragment at (row0, k-step ks) the four matrices are
//   j = 0: rows row0 + 0..7, k chunk 2ks      -> a reg 0
//   j = 1: rows row0 + 8..15, k chunk 2ks     -> a reg 1
//   j = 2: rows row0 + 0..7, k chunk 2ks + 1  -> a reg 2
//   j = 3: rows row0 + 8..15, k chunk 2ks + 1 -> a reg 3
//   => lane l points at row row0 + (l & 7) + 8 * ((l >> 3) & 1), chunk 2ks + (l >> 4).
// and one x4 load gives the B fragments of TWO n8 tiles (n0 .. n0+15):
//   j = 0: n rows n0 + 0..7,  chunk 2ks     -> tile 0 b reg 0
//   j = 1: n rows n0 + 0..7,  chunk 2ks + 1 -> tile 0 b reg 1
//   j = 2: n rows n0 + 8..15, chunk 2ks     -> tile 1 b reg 0
//   j = 3: n rows n0 + 8..15, chunk 2ks + 1 -> tile 1 b reg 1
//   => lane l points at row n0 + (l & 7) + 8 * (l >> 4), chunk 2ks + ((l >> 3) & 1).
// The static_asserts in `layout_check` below enumerate every (lane, reg, byte) and compare the
// element ldmatrix delivers under these address formulas with the element the PTX ISA says the
// mma expects. The ptx_* tables themselves match CuTe's MMA_Traits<SM89_16x8x32_F32E4M3E4M3F32_TN>
// A/B/C layouts (CUTLASS 4.2) for all 32 lanes.
// ---------------------------------------------------------------------------------------------
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/common/formats_lowbit.h"
#include "ltx_kernels/common/ptx.cuh"
#include "ltx_kernels/gemm/fp8_gemm.h"

namespace ltx_kernels {
namespace gemm_sm89 {

constexpr int kBN = 128;                // CTA tile N (== the weight scale block: one sb per K block)
constexpr int kBK = 128;                // CTA tile K (== the scale block)
constexpr int kThreads = 256;           // 8 warps
constexpr int kWarpsM = 2, kWarpsN = 4;  // warp grid
constexpr int kWN = kBN / kWarpsN;      // 32 columns per warp
constexpr int kNT = kWN / 8;            // 4 n8 tiles per warp
constexpr int kChunks = kBK / 16;       // 8 16-byte chunks per tile row
constexpr int kFp6Row = kBK * 3 / 4;    // 96 packed bytes per row per K block
constexpr int kFp6Chunks = kFp6Row / 16;  // 6
constexpr int kGroupM = 8;              // tile-order grouping for L2 reuse

static_assert(kWarpsM * kWarpsN * 32 == kThreads, "8 warps");
static_assert(kBK % 32 == 0 && kBK == 128, "K block = 4 mma k-steps of 32 = one scale block");
static_assert(kNT % 2 == 0, "B fragments are loaded two n8 tiles per ldmatrix.x4");
static_assert(kFp6Row % 16 == 0, "a K block of packed FP6 is whole 16-byte chunks");

// Byte offset of logical (row, 16-byte chunk) in a swizzled [rows][128 B] tile.
__host__ __device__ constexpr int swz(int row, int chunk) {
  return row * kBK + ((chunk ^ (row & 7)) << 4);
}

// ldmatrix.x4 row addresses (see the derivation above); rows are relative to the fragment origin.
__host__ __device__ constexpr int a_ldsm_row(int lane) { return (lane & 7) + 8 * ((lane >> 3) & 1); }
__host__ __device__ constexpr int a_ldsm_chunk(int lane, int ks) { return 2 * ks + (lane >> 4); }
__host__ __device__ constexpr int b_ldsm_row(int lane) { return (lane & 7) + 8 * (lane >> 4); }
__host__ __device__ constexpr int b_ldsm_chunk(int lane, int ks) { return 2 * ks + ((lane >> 3) & 1); }

template <int BM_, int STAGES_, bool FP6_>
struct Config {
  static constexpr int BM = BM_, STAGES = STAGES_;
  static constexpr bool FP6 = FP6_;
  static constexpr int WM = BM / kWarpsM;  // rows per warp
  static constexpr int MT = WM / 16;       // m16 tiles per warp
  static constexpr int A_STAGE = BM * kBK;                          // bytes  (BM, 128)
  static constexpr int B_STAGE = FP6 ? kBN * kFp6Row : kBN * kBK;  // bytes  (128, 96|128)
  static constexpr int B_UNPACKED = FP6 ? kBN * kBK : 0;           // bytes  (128, 128) e4m3
  static constexpr int PIPE = STAGES * (A_STAGE + B_STAGE) + B_UNPACKED;
  static constexpr int OUT_LD = kBN + 8;  // 16-bit elements per staged output row (pad: no conflicts)
  static constexpr int EPI = BM * OUT_LD * 2;
  static constexpr int SMEM = PIPE > EPI ? PIPE : EPI;
  static_assert(BM == 64 || BM == 128, "tile M");
  static_assert(STAGES >= 2, "pipeline depth");
  static_assert((BM * kChunks) % kThreads == 0, "A stage chunks split evenly over threads");
  static_assert((kBN * kChunks) % kThreads == 0, "B stage chunks split evenly over threads");
  static_assert((kBN * kFp6Chunks) % kThreads == 0, "packed B chunks split evenly");
  static_assert((BM * 2 * kBN / 16) % kThreads == 0, "epilogue chunks split evenly");
  static_assert(A_STAGE % 128 == 0 && B_STAGE % 128 == 0, "stages keep 128-byte alignment");
};

// ---- host-side layout self-check (compile time) --------------------------------------------
namespace layout_check {
// PTX ISA element coordinates (see the table at the top).
constexpr int ptx_a_row(int lane, int i) { return (lane >> 2) + 8 * ((i >> 2) & 1); }
constexpr int ptx_a_k(int lane, int i) { return 4 * (lane & 3) + (i & 3) + 16 * (i >> 3); }
constexpr int ptx_b_k(int lane, int i) { return 4 * (lane & 3) + (i & 3) + 16 * (i >> 2); }
constexpr int ptx_b_n(int lane, int) { return lane >> 2; }
constexpr int ptx_c_row(int lane, int i) { return (lane >> 2) + 8 * (i >> 1); }
constexpr int ptx_c_col(int lane, int i) { return 2 * (lane & 3) + (i & 1); }

// ldmatrix.x4: lane l, destination reg j, byte e <- matrix j row (l >> 2) byte 4 (l & 3) + e,
// whose address was given by lane 8j + (l >> 2).
constexpr int ldsm_src_lane(int l, int j) { return 8 * j + (l >> 2); }
constexpr int ldsm_byte(int l, int e) { return 4 * (l & 3) + e; }

constexpr bool a_fragments_match() {
  for (int ks = 0; ks < kBK / 32; ++ks)
    for (int l = 0; l < 32; ++l)
      for (int j = 0; j < 4; ++j)
        for (int e = 0; e < 4; ++e) {
          const int src = ldsm_src_lane(l, j);
          const int row = a_ldsm_row(src);
          const int k = 16 * a_ldsm_chunk(src, ks) + ldsm_byte(l, e);
          const int i = 4 * j + e;  // a_i lives in reg j, byte e
          if (row != ptx_a_row(l, i) || k != 32 * ks + ptx_a_k(l, i)) return false;
        }
  return true;
}

constexpr bool b_fragments_match() {
  for (int ks = 0; ks < kBK / 32; ++ks)
    for (int l = 0; l < 32; ++l)
      for (int j = 0; j < 4; ++j)
        for (int e = 0; e < 4; ++e) {
          const int src = ldsm_src_lane(l, j);
          const int n = b_ldsm_row(src);
          const int k = 16 * b_ldsm_chunk(src, ks) + ldsm_byte(l, e);
          const int tile = j >> 1, reg = j & 1;  // x4 reg j -> b_frag[tile][reg]
          const int i = 4 * reg + e;
          if (n != 8 * tile + ptx_b_n(l, i) || k != 32 * ks + ptx_b_k(l, i)) return false;
        }
  return true;
}

// Each element of the 16x8 C tile is owned by exactly one (lane, i).
constexpr bool c_fragment_is_a_partition() {
  int seen[16 * 8] = {};
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      const int r = ptx_c_row(l, i), c = ptx_c_col(l, i);
      if (r < 0 || r >= 16 || c < 0 || c >= 8) return false;
      ++seen[r * 8 + c];
    }
  for (int x = 0; x < 16 * 8; ++x)
    if (seen[x] != 1) return false;
  return true;
}

// Swizzle: a bijection within every row, and every ldmatrix phase (8 consecutive rows starting at
// a multiple of 8, one logical chunk) covers all 32 banks exactly once.
constexpr bool swizzle_ok() {
  for (int r = 0; r < 16; ++r) {
    int used = 0;
    for (int c = 0; c < kChunks; ++c) {
      const int off = swz(r, c) - r * kBK;
      if (off < 0 || off >= kBK || (off & 15)) return false;
      used |= 1 << (off >> 4);
    }
    if (used != 0xff) return false;
  }
  for (int r0 = 0; r0 < 32; r0 += 8)
    for (int c = 0; c < kChunks; ++c) {
      int banks = 0;  // 16-byte chunk -> 4 banks; 8 chunks of one phase must cover 8 chunk slots
      for (int r = 0; r < 8; ++r) banks |= 1 << ((swz(r0 + r, c) % 128) >> 4);
      if (banks != 0xff) return false;
    }
  return true;
}

// Epilogue staging: one 4-byte write per lane per (mt, nt, half) at row g (+8), column 2t in a
// row of OUT_LD 16-bit elements; all 32 lanes must hit distinct banks.
constexpr bool epilogue_banks_ok(int out_ld) {
  int used = 0;
  for (int l = 0; l < 32; ++l) {
    const int word = ((l >> 2) * out_ld + 2 * (l & 3)) / 2;
    const int bank = word % 32;
    if (used & (1 << bank)) return false;
    used |= 1 << bank;
  }
  return true;
}

// FP6 unpack reads: thread i of a warp reads 4-byte word w of packed row (i >> 3), group-of-4
// chunk (i & 7) at byte row * 96 + chunk * 12 + 4w; all 32 lanes must hit distinct banks.
constexpr bool fp6_unpack_reads_ok() {
  for (int w = 0; w < 3; ++w) {
    int used = 0;
    for (int l = 0; l < 32; ++l) {
      const int bank = (((l >> 3) * kFp6Row + (l & 7) * 12 + 4 * w) / 4) % 32;
      if (used & (1 << bank)) return false;
      used |= 1 << bank;
    }
  }
  return true;
}

static_assert(a_fragments_match(), "ldmatrix.x4 A addressing != PTX m16n8k32 e4m3 A fragment");
static_assert(b_fragments_match(), "ldmatrix.x4 B addressing != PTX m16n8k32 e4m3 B fragment");
static_assert(c_fragment_is_a_partition(), "C fragment formula does not tile 16x8");
static_assert(swizzle_ok(), "XOR swizzle not a bijection / ldmatrix not conflict free");
static_assert(epilogue_banks_ok(kBN + 8), "epilogue staging bank conflicts");
static_assert(fp6_unpack_reads_ok(), "FP6 unpack shared reads bank conflicts");
}  // namespace layout_check

// ---- device primitives ----------------------------------------------------------------------
using ptx::cp_async16;
using ptx::cp_async_commit;
using ptx::cp_async_wait;
using ptx::ldsm_x4;
using ptx::smem_u32;

// d = a(16x32 e4m3) * b(32x8 e4m3) + d, fp32.
__device__ __forceinline__ void mma_e4m3(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();  // never launched: the host side refuses devices below 8.9
#endif
}

__host__ __device__ __forceinline__ uint32_t pack_out2(float lo, float hi, bool bf16) {
  uint16_t l, h;
  if (bf16) {
    l = __bfloat16_as_ushort(__float2bfloat16_rn(lo));
    h = __bfloat16_as_ushort(__float2bfloat16_rn(hi));
  } else {
    l = __half_as_ushort(__float2half_rn(lo));
    h = __half_as_ushort(__float2half_rn(hi));
  }
  return uint32_t(l) | (uint32_t(h) << 16);
}

// The warp-collective and async primitives the tile body uses, as one policy: DeviceOps is the
// real thing; a host emulator (same body, PTX-ISA semantics for ldmatrix/mma, one std::thread per
// CUDA thread) can stand in for it to check the body's index arithmetic without a GPU.
struct DeviceOps {
  __device__ __forceinline__ void cp_async(uint8_t* dst_smem, const void* src, int src_bytes) {
    cp_async16(smem_u32(dst_smem), src, src_bytes);
  }
  __device__ __forceinline__ void commit() { cp_async_commit(); }
  template <int N>
  __device__ __forceinline__ void wait() { cp_async_wait<N>(); }
  __device__ __forceinline__ void sync() { __syncthreads(); }
  __device__ __forceinline__ void ldsm(uint32_t (&r)[4], const uint8_t* smem_row) {
    ldsm_x4(r, smem_u32(smem_row));
  }
  __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                      uint32_t b1) {
    mma_e4m3(d, a, b0, b1);
  }
  __device__ __forceinline__ float ldg(const float* q) { return __ldg(q); }
};

// ---- one CTA's tile ------------------------------------------------------------------------
// tid: 0..255, pid: linear tile index (blockIdx.x), smem: Config::SMEM bytes, 128-byte aligned.
#pragma nv_exec_check_disable
template <int BM, int STAGES, bool FP6, class Ops>
__host__ __device__ __forceinline__ void gemm_tile(Ops& ops, const ltx_kernels::gemm::Fp8BlockwiseGemmArgs& p,
                                                   uint8_t* smem, const int tid, const int64_t pid) {
  using Cfg = Config<BM, STAGES, FP6>;
  constexpr int MT = Cfg::MT;
  uint8_t* sA = smem;                          // (STAGES, BM, 128) swizzled e4m3
  uint8_t* sB = smem + STAGES * Cfg::A_STAGE;  // (STAGES, 128, 128|96)
  uint8_t* sBu = sB + STAGES * Cfg::B_STAGE;   // (128, 128) swizzled e4m3 (FP6 only)

  const int lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / kWarpsN, warp_n = warp % kWarpsN;
  const int g = lane >> 2, t4 = lane & 3;

  // Tile order: groups of kGroupM M-tiles sweep N together (B tiles stay hot in L2).
  const int64_t tiles_m = (p.M + BM - 1) / BM, tiles_n = (p.N + kBN - 1) / kBN;
  const int64_t width = int64_t(kGroupM) * tiles_n;
  const int64_t first_m = (pid / width) * kGroupM;
  const int64_t gsize = (tiles_m - first_m) < kGroupM ? (tiles_m - first_m) : kGroupM;
  const int64_t tile_m = first_m + (pid % width) % gsize;
  const int64_t tile_n = (pid % width) / gsize;
  const int64_t m0 = tile_m * BM, n0 = tile_n * kBN;
  const int KB = int(p.K / kBK);

  // ---- async stage loader: K block kb -> ring slot s
  auto load_stage = [&](int kb, int s) {
    uint8_t* a_st = sA + s * Cfg::A_STAGE;
#pragma unroll
    for (int it = 0; it < BM * kChunks / kThreads; ++it) {
      const int i = tid + it * kThreads, row = i / kChunks, c = i % kChunks;
      const int64_t m = m0 + row;
      const bool ok = m < p.M;
      const uint8_t* src = ok ? p.a + m * p.lda + int64_t(kb) * kBK + c * 16 : p.a;
      ops.cp_async(a_st + swz(row, c), src, ok ? 16 : 0);
    }
    uint8_t* b_st = sB + s * Cfg::B_STAGE;
    if constexpr (!FP6) {
#pragma unroll
      for (int it = 0; it < kBN * kChunks / kThreads; ++it) {
        const int i = tid + it * kThreads, row = i / kChunks, c = i % kChunks;
        const int64_t n = n0 + row;
        const bool ok = n < p.N;
        const uint8_t* src = ok ? p.b + n * p.ldb + int64_t(kb) * kBK + c * 16 : p.b;
        ops.cp_async(b_st + swz(row, c), src, ok ? 16 : 0);
      }
    } else {
#pragma unroll
      for (int it = 0; it < kBN * kFp6Chunks / kThreads; ++it) {
        const int i = tid + it * kThreads, row = i / kFp6Chunks, c = i % kFp6Chunks;
        const int64_t n = n0 + row;
        const bool ok = n < p.N;
        const uint8_t* src = ok ? p.b + n * p.ldb + int64_t(kb) * kFp6Row + c * 16 : p.b;
        ops.cp_async(b_st + row * kFp6Row + c * 16, src, ok ? 16 : 0);  // dense (128, 96)
      }
    }
  };

  float total[MT][kNT][4];  // (MT, NT, 4) promoted fp32 sums
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) total[mt][nt][i] = 0.f;

  // Prologue: STAGES-1 K blocks in flight (always commit, so group counting stays uniform).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KB) load_stage(s, s);
    ops.commit();
  }

  const int wm0 = warp_m * Cfg::WM, wn0 = warp_n * kWN;
  const int64_t sb_base = tile_n * p.sb_stride_n;  // n0 / 128 == tile_n: one weight block

  for (int kb = 0; kb < KB; ++kb) {
    // Scales for this K block (tiny global reads, issued early, used after the MMAs).
    const float sb = ops.ldg(p.b_scales + sb_base + int64_t(kb) * p.sb_stride_k);
    float sa[MT][2];  // (MT, row g / g+8)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t m = m0 + wm0 + mt * 16 + g + 8 * h;
        sa[mt][h] = m < p.M ? ops.ldg(p.a_scales + m * p.sa_stride_m + int64_t(kb) * p.sa_stride_k)
                            : 0.f;
      }

    ops.template wait<STAGES - 2>();  // K block kb has landed (this thread's copies) ...
    ops.sync();                       // ... everyone's; and slot (kb-1)%STAGES is free again
    {
      const int nk = kb + STAGES - 1;
      if (nk < KB) load_stage(nk, nk % STAGES);
      ops.commit();
    }
    const int s = kb % STAGES;
    const uint8_t* tA = sA + s * Cfg::A_STAGE;
    const uint8_t* tB = sB + s * Cfg::B_STAGE;
    if constexpr (FP6) {
      // Unpack (128, 96) packed -> (128, 128) swizzled e4m3: 16 output bytes per work item
      // (4 groups of 3 packed bytes; fp6_unpack4 / fp6_e4m3_restore: formats_lowbit.h).
#pragma unroll
      for (int it = 0; it < kBN * kChunks / kThreads; ++it) {
        const int i = tid + it * kThreads, row = i / kChunks, c = i % kChunks;
        const uint32_t* src = reinterpret_cast<const uint32_t*>(tB + row * kFp6Row + c * 12);
        uint32_t w[3] = {src[0], src[1], src[2]};  // 12 packed bytes (little-endian words)
        const uint8_t* pb = reinterpret_cast<const uint8_t*>(w);
        uint32_t o[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          uint8_t v[4];
          fp6_unpack4(pb + 3 * q, v);
          o[q] = uint32_t(fp6_e4m3_restore(v[0])) | (uint32_t(fp6_e4m3_restore(v[1])) << 8) |
                 (uint32_t(fp6_e4m3_restore(v[2])) << 16) |
                 (uint32_t(fp6_e4m3_restore(v[3])) << 24);
        }
        uint32_t* dst = reinterpret_cast<uint32_t*>(sBu + swz(row, c));
        dst[0] = o[0];
        dst[1] = o[1];
        dst[2] = o[2];
        dst[3] = o[3];
      }
      ops.sync();  // uniform: every thread runs the same KB iterations
      tB = sBu;
    }

    float acc[MT][kNT][4];  // (MT, NT, 4) this K block only
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.f;

#pragma unroll
    for (int ks = 0; ks < kBK / 32; ++ks) {
      uint32_t af[MT][4];  // (MT, 4 regs)
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        const int row = wm0 + mt * 16 + a_ldsm_row(lane);
        ops.ldsm(af[mt], tA + swz(row, a_ldsm_chunk(lane, ks)));
      }
      uint32_t bf[kNT][2];  // (NT, 2 regs)
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {
        const int row = wn0 + np * 16 + b_ldsm_row(lane);
        uint32_t r[4];
        ops.ldsm(r, tB + swz(row, b_ldsm_chunk(lane, ks)));
        bf[2 * np][0] = r[0];
        bf[2 * np][1] = r[1];
        bf[2 * np + 1][0] = r[2];
        bf[2 * np + 1][1] = r[3];
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) ops.mma(acc[mt][nt], af[mt], bf[nt][0], bf[nt][1]);
    }

    // Promote: total += acc * (sa * sb), fp32.
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float sc = sa[mt][h] * sb;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          total[mt][nt][2 * h] = fmaf(acc[mt][nt][2 * h], sc, total[mt][nt][2 * h]);
          total[mt][nt][2 * h + 1] = fmaf(acc[mt][nt][2 * h + 1], sc, total[mt][nt][2 * h + 1]);
        }
      }
  }

  // ---- epilogue: + bias, round, stage through shared memory, coalesced guarded stores.
  ops.template wait<0>();
  ops.sync();  // all MMAs done reading the ring; reuse it as the (BM, OUT_LD) output tile
  const bool bf16 = p.out == ltx_kernels::gemm::GemmOut::kBF16;
  uint16_t* sOut = reinterpret_cast<uint16_t*>(smem);  // (BM, OUT_LD) bf16/fp16 bits
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    const int col = wn0 + nt * 8 + 2 * t4;
    const int64_t n = n0 + col;
    const float b0 = (p.bias != nullptr && n < p.N) ? ops.ldg(p.bias + n) : 0.f;
    const float b1 = (p.bias != nullptr && n + 1 < p.N) ? ops.ldg(p.bias + n + 1) : 0.f;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = wm0 + mt * 16 + g + 8 * h;
        *reinterpret_cast<uint32_t*>(sOut + row * Cfg::OUT_LD + col) =
            pack_out2(total[mt][nt][2 * h] + b0, total[mt][nt][2 * h + 1] + b1, bf16);
      }
  }
  ops.sync();

  uint16_t* d = static_cast<uint16_t*>(p.d);  // (M, ldd) 16-bit elements
  const bool vec = (reinterpret_cast<uintptr_t>(p.d) % 16 == 0) && (p.ldd % 8 == 0);
  constexpr int kOutChunks = kBN * 2 / 16;  // 16 chunks of 8 outputs per row
#pragma unroll
  for (int it = 0; it < BM * kOutChunks / kThreads; ++it) {
    const int i = tid + it * kThreads, row = i / kOutChunks, c = i % kOutChunks;
    const int64_t m = m0 + row, n = n0 + c * 8;
    if (m >= p.M || n >= p.N) continue;
    const uint16_t* src = sOut + row * Cfg::OUT_LD + c * 8;
    uint16_t* dst = d + m * p.ldd + n;
    if (vec && n + 8 <= p.N) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    } else {
      const int ne = int(p.N - n < 8 ? p.N - n : 8);
      for (int e = 0; e < ne; ++e) dst[e] = src[e];
    }
  }
}

template <int BM, int STAGES, bool FP6>
__global__ void __launch_bounds__(kThreads, 1)
    blockwise_gemm_kernel(const ltx_kernels::gemm::Fp8BlockwiseGemmArgs p) {
  extern __shared__ __align__(128) uint8_t smem[];
  DeviceOps ops;
  gemm_tile<BM, STAGES, FP6>(ops, p, smem, int(threadIdx.x), int64_t(blockIdx.x));
}

}  // namespace gemm_sm89
}  // namespace ltx_kernels
