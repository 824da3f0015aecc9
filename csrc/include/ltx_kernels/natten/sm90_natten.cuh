// Neighborhood attention forward for sm_90: TMA row loads into a shared-memory ring refilled by
// whichever warp releases a stage last, and warps that each walk only the key rows their own
// queries attend.
// Included only by csrc/cuda/natten/sm90_natten.cu. head dim 64, fp16/bf16.
//
// Geometry (per CTA, one (batch, head)):
//   queries  a box (Q0, Q1, 8) of (t, h, w); NW = 8 consumer warps, warp j owns the 16 queries
//            (t0 + j / (Q1/2), h0 + 2 (j % (Q1/2)) + {0, 1}, w0 + 0..7); mma row r = 8 dh + dw,
//            so a thread's two rows (g, g + 8) share w = w0 + g and differ in h.
//   keys     the union of the box's windows, U0 x U1 rows (t, h) of W8 keys along w (W8 in
//            {16, 32}, >= the union's w extent 8 + kw - 1). A chunk is KR = 64 / W8 consecutive
//            h rows of one t slice: 64 keys = one TMA box {d 64, head 1, w W8, h KR, t 1} per tensor,
//            written 128B-swizzled (key row = 128 bytes; 16-byte piece c of row r lands at c ^ (r & 7)).
//            Rows past the union or the grid are loaded (or zero-filled by TMA) and masked.
//   pipeline ST stages of (K, V) chunks; full[s] (mbarrier) completes on the TMA bytes. There is
//            no producer warp (it would cost a ninth warp's registers and halve the CTAs per SM):
//            each warp, done with chunk c, adds one to a shared counter of stage s; the warp that
//            brings it to NW is the last reader, so it resets the counter and issues chunk c + ST
//            into the stage. Nobody ever blocks on an empty stage. Every warp waits full for every
//            chunk (so counts and phases stay in step) but computes only the rows its queries need:
//            all its queries share one t (so one t window) and two h values (an h range of at most
//            kh + 1 rows), and a skipped row costs neither S = Q K^T nor P V. Warps drift apart by up
//            to ST chunks, which absorbs that different warps need different rows of a slice.
//   math     mma.sync m16n8k16 (fp32 accumulate), K fragments by ldmatrix, V by ldmatrix.trans,
//            online softmax in fp32 in the log2 domain; the mask of element (query, key) is a bit
//            test of the query's w-window bitmask and one compare of the key row's h against the
//            query's h window (t is warp-uniform).
//
// Work per query, window (3, 7, 7), W8 = 16: a warp computes 3 slices x 8 rows x 16 keys = 384
// keys for its 147 attended ones (38%); the CTA stages U0 x ceil(U1/4) x 4 x 16 keys for its
// 128 queries (box 2 x 8 x 8: 4 x 16 x 16 = 8 keys per query).
// Rates beside the portable kernel's: benchmarks/results/h200/natten.json. The kernel is
// issue/latency bound at 4 warps per scheduler (128 registers): mask, max, exp2 and sums cost
// many more instructions than the mma they surround.
#pragma once

#include <cuda.h>  // CUtensorMap (type only; the map is encoded on the host)

#include <type_traits>

#include "ltx_kernels/gemm/sm90_ptx.cuh"
#include "ltx_kernels/natten/natten.cuh"

namespace ltx_kernels {
namespace natten_sm90 {

using natten_detail::box_union;
using natten_detail::load_q;
using natten_detail::mma16816;
using natten_detail::pack2;
using natten_detail::pv_step;
using natten_detail::scale_rows;
using natten_detail::store_rows;
using natten_detail::win;
using ptx::smem_u32;

constexpr int kD = 64;        // head dim
constexpr int kNW = 8;        // warps (16 queries each)
constexpr int kThreads = kNW * 32;
constexpr int kStages = 4;
constexpr int kNK = 64;       // keys per chunk
constexpr int kRowBytes = kD * 2;
constexpr int kTileBytes = kNK * kRowBytes;       // 8 KB: one tensor's chunk
constexpr int kStageBytes = 2 * kTileBytes;       // K then V
constexpr size_t kSmemBytes = size_t(kStages) * kStageBytes + kStages * (sizeof(uint64_t) + sizeof(uint32_t)) + 1024;

struct NaTmaArgs {
  const void* q;  // batch already applied
  void* out;
  NattenStrides qs, os;  // batch entries unused
  int n[3];
  int ker[3];
  int causal[3];
  int box[2];     // query box (t, h) extents; w extent 8; box[0] * box[1] == 2 * kNW
  int ntile[3];   // boxes per axis
  float scale_log2;
};

// mbarrier wrappers shared with the sm_90a GEMMs (gemm/sm90_ptx.cuh); the wait here spins
// without the GEMMs' timeout trap.
using gemm::sm90::ptx::fence_barrier_init;
using gemm::sm90::ptx::fence_proxy_async_smem;
using gemm::sm90::ptx::mbar_arrive_expect_tx;
using gemm::sm90::ptx::mbar_init;
using gemm::sm90::ptx::mbar_try_wait;

__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}
__device__ __forceinline__ void tma_load_5d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            int c4, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
      "%5, %6}], [%7];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar)
      : "memory");
}
__device__ __forceinline__ float fast_exp2(float x) {  // 2^x; -inf -> +0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
// Address of 16-byte piece `c` of key row `r` in a 128B-swizzled tile.
__device__ __forceinline__ uint32_t swz(uint32_t tile, int r, int c) {
  return tile + uint32_t(r) * kRowBytes + (uint32_t((c ^ (r & 7))) << 4);
}

template <typename T, int W8>
__global__ void __launch_bounds__(kThreads, 2)
    na_tma_kernel(const __grid_constant__ CUtensorMap tk, const __grid_constant__ CUtensorMap tv, const NaTmaArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(W8 == 16 || W8 == 32, "W8");
  constexpr int KR = kNK / W8;  // h rows per chunk
  constexpr int NB = W8 / 8;    // 8-key blocks per row
  constexpr int KSTEPS = kD / 16;
  constexpr int DN = kD / 8;
  extern __shared__ unsigned char smem_raw[];
  const uint32_t smem0 = (smem_u32(smem_raw) + 1023u) & ~1023u;  // swizzle atoms need 1024B alignment
  const uint32_t bar_full = smem0 + kStages * kStageBytes;
  uint32_t* released = reinterpret_cast<uint32_t*>(smem_raw + (bar_full + kStages * 8 - smem_u32(smem_raw)));

  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;

  // ---- box, head; union of the box's windows [ulo, ulo + U)
  const int head = int(blockIdx.y);
  const int bext[3] = {a.box[0], a.box[1], 8};
  int q0[3], ulo[3], U[3];
  box_union(a.n, a.ker, a.causal, a.ntile, bext, q0, ulo, U);
  const int CH = (U[1] + KR - 1) / KR;  // chunks per t slice
  const int nchunks = U[0] * CH;

  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < kStages; ++s) {
      mbar_init(bar_full + 8 * s, 1);
      released[s] = 0;
    }
    fence_barrier_init();
    fence_proxy_async_smem();
  }
  __syncthreads();
  // Chunk c into stage c % ST: one expect_tx arrival, K and V boxes at (d 0, head, w, h, t).
  auto issue = [&](int c) {
    const int s = c % kStages;
    const int ct = c / CH, ch = (c - ct * CH) * KR;
    const uint32_t dst = smem0 + s * kStageBytes;
    mbar_arrive_expect_tx(bar_full + 8 * s, kStageBytes);
    tma_load_5d(dst, &tk, 0, head, ulo[2], ulo[1] + ch, ulo[0] + ct, bar_full + 8 * s);
    tma_load_5d(dst + kTileBytes, &tv, 0, head, ulo[2], ulo[1] + ch, ulo[0] + ct, bar_full + 8 * s);
  };
  if (tid == 0) {
    for (int c = 0; c < min(kStages, nchunks); ++c) issue(c);
  }

  // ---- this warp's queries and their windows (union-relative)
  const int g = lane >> 2, t4 = lane & 3;
  const int wpr = a.box[1] / 2;
  const int wt = warp / wpr, wh = warp - wt * wpr;
  // rows past the grid compute a clamped query and are not stored
  const int qi[3] = {min(q0[0] + wt, a.n[0] - 1), 0, min(q0[2] + g, a.n[2] - 1)};
  int tlo, tlen, wlo, wlen;
  win(qi[0], a.n[0], a.ker[0], a.causal[0], tlo, tlen);
  win(qi[2], a.n[2], a.ker[2], a.causal[2], wlo, wlen);
  tlo -= ulo[0];
  wlo -= ulo[2];
  // w window as bits over the row's W8 columns, pre-shifted by this thread's column pair 2 t4
  const uint32_t cb = uint32_t(((uint64_t(1) << wlen) - 1) << wlo) >> (2 * t4);
  int hlo[2], hlen[2];
  const T* qrow[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int qh = min(q0[1] + 2 * wh + i, a.n[1] - 1);
    win(qh, a.n[1], a.ker[1], a.causal[1], hlo[i], hlen[i]);
    hlo[i] -= ulo[1];
    qrow[i] = static_cast<const T*>(a.q) + int64_t(qi[0]) * a.qs.s0 + int64_t(qh) * a.qs.s1 +
              int64_t(qi[2]) * a.qs.s2 + int64_t(head) * a.qs.head;
  }
  const int hmin = min(hlo[0], hlo[1]), hmax = max(hlo[0] + hlen[0], hlo[1] + hlen[1]);  // warp-uniform
  // w-window bits of this thread's elements in one key row: bit 2 nb + e = column 8 nb + 2 t4 + e
  uint32_t wpat = 0;
#pragma unroll
  for (int nb = 0; nb < NB; ++nb)
#pragma unroll
    for (int e = 0; e < 2; ++e) wpat |= ((cb >> (8 * nb + e)) & 1u) << (2 * nb + e);
  const float sl2 = a.scale_log2;

  uint32_t qf[KSTEPS][4];
  load_q<T>(qf, qrow, t4);

  float o[DN][4];
#pragma unroll
  for (int i = 0; i < DN; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY};
  float l[2] = {0.f, 0.f};

  int ct = 0, ch = 0;  // chunk c = t slice ct, h rows [ch, ch + KR) (stepped, no division)
  for (int c = 0; c < nchunks; ++c) {
    const int s = c & (kStages - 1);
    const uint32_t parity = uint32_t(c / kStages) & 1u;
    uint32_t rows = 0;  // bit rr: some query of this warp attends key row ch + rr
    if (unsigned(ct - tlo) < unsigned(tlen)) {
#pragma unroll
      for (int rr = 0; rr < KR; ++rr) rows |= uint32_t(ch + rr >= hmin && ch + rr < hmax) << rr;
    }
    mbar_wait(bar_full + 8 * s, parity);
    // (One body for whole and partial chunks: a copy specialised for whole chunks, where the row
    // tests fold away, brings spills back and is slower.)
    if (rows != 0u) {
      const uint32_t ks = smem0 + s * kStageBytes;
      const uint32_t vs = ks + kTileBytes;
      bool rin[2][KR];  // query row i attends key row rr (t and h)
#pragma unroll
      for (int rr = 0; rr < KR; ++rr) {
#pragma unroll
        for (int i = 0; i < 2; ++i) rin[i][rr] = ((rows >> rr) & 1u) && unsigned(ch + rr - hlo[i]) < unsigned(hlen[i]);
      }
      // S = Q K^T over the chunk's 8 key blocks. k-steps outermost so that the blocks' dependent
      // mma chains interleave (one chain of 4 dependent mmas per block would expose the mma
      // latency); whole row pairs when the warp needs both rows, else one row.
      float sc[8][4];
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.f;
      auto s_blocks = [&](int nt0, auto nblocks) {
        constexpr int NBL = decltype(nblocks)::value;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          uint32_t b[NBL][4];
#pragma unroll
          for (int x = 0; x < NBL; ++x) ptx::ldsm_x4(b[x], swz(ks, (nt0 + x) * 8 + (lane & 7), 4 * h + (lane >> 3)));
#pragma unroll
          for (int x = 0; x < NBL; ++x) mma16816<T>(sc[nt0 + x], qf[2 * h], b[x][0], b[x][1]);
#pragma unroll
          for (int x = 0; x < NBL; ++x) mma16816<T>(sc[nt0 + x], qf[2 * h + 1], b[x][2], b[x][3]);
        }
      };
      // groups of 4 blocks (two rows of 16 or one of 32): 4 chains in flight, 16 fragment registers
#pragma unroll
      for (int gi = 0; gi < 2; ++gi) {
        constexpr int RG = 4 / NB;  // rows per group
        const uint32_t gr = (rows >> (gi * RG)) & ((1u << RG) - 1u);
        if (gr == (1u << RG) - 1u) {
          s_blocks(4 * gi, std::integral_constant<int, 4>());
        } else if (RG == 2 && gr == 1u) {
          s_blocks(4 * gi, std::integral_constant<int, NB>());
        } else if (RG == 2 && gr == 2u) {
          s_blocks(4 * gi + NB, std::integral_constant<int, NB>());
        }
      }
      // Mask (element k = 2 nt + e of row i: bit k of emask[i]) and row maxima of the raw scores.
      uint32_t emask[2] = {0u, 0u};
#pragma unroll
      for (int rr = 0; rr < KR; ++rr) {
#pragma unroll
        for (int i = 0; i < 2; ++i) emask[i] |= rin[i][rr] ? wpat << (rr * 2 * NB) : 0u;
      }
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        if (((rows >> (nt / NB)) & 1u) == 0u) continue;  // warp-uniform: the row's scores stay unused
#pragma unroll
        for (int e = 0; e < 2; ++e) {
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            float& x = sc[nt][2 * i + e];
            x = ((emask[i] >> (2 * nt + e)) & 1u) ? x : -INFINITY;
            mx[i] = fmaxf(mx[i], x);
          }
        }
      }
      // Online softmax in the log2 domain: p = 2^(x sl2 - m sl2), m the running raw maximum
      // (sl2 > 0: natten_sm90_takes sends scale <= 0 to the portable kernel).
      float mb[2], alpha[2];  // m * sl2 (finite), rescale factors
      bool grew = false;
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
        const float mnew = fmaxf(m[i], mx[i]);
        grew = grew || mnew > m[i];
        mb[i] = mnew == -INFINITY ? 0.f : mnew * sl2;
        alpha[i] = fast_exp2(m[i] * sl2 - mb[i]);  // 0 when m was -inf
        m[i] = mnew;
      }
      if (__any_sync(0xffffffffu, grew)) {  // rescale only when some row maximum moved
#pragma unroll
        for (int i = 0; i < 2; ++i) l[i] *= alpha[i];
        scale_rows(o, alpha);
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {  // 16-key steps (blocks 2j, 2j + 1: one key row when W8 = 16)
        if (((rows >> ((2 * j) / NB)) & 1u) == 0u) continue;
        float p[2][4];
#pragma unroll
        for (int h2 = 0; h2 < 2; ++h2) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            p[h2][e] = fast_exp2(fmaf(sc[2 * j + h2][e], sl2, -mb[e >> 1]));
            l[e >> 1] += p[h2][e];
          }
        }
        const int key = j * 16 + (lane & 15);
        pv_step<T>(o, p, [&](int dn) { return swz(vs, key, dn + (lane >> 4)); });
      }
    }
    __syncwarp();
    ch += KR;
    if (ch >= CH * KR) {
      ch = 0;
      ++ct;
    }
    if (lane == 0 && c + kStages < nchunks) {
      __threadfence_block();  // this warp's reads of stage s before the count (and the last
                              // releaser's count before its refill)
      if (atomicAdd(&released[s], 1u) == kNW - 1) {
        __threadfence_block();
        released[s] = 0;
        fence_proxy_async_smem();  // generic reads, then TMA writes
        issue(c + kStages);
      }
    }
  }

  // Output coordinates are recomputed here, so that nothing of them stays live across the loop.
  T* out = static_cast<T*>(a.out);
  store_rows<T>(o, l, t4, [&](int i) {
    const int qt = q0[0] + wt, qh = q0[1] + 2 * wh + i, qw = q0[2] + g;
    return qt >= a.n[0] || qh >= a.n[1] || qw >= a.n[2]
               ? static_cast<T*>(nullptr)
               : out + int64_t(qt) * a.os.s0 + int64_t(qh) * a.os.s1 + int64_t(qw) * a.os.s2 + int64_t(head) * a.os.head;
  });
#endif
}

}  // namespace natten_sm90
}  // namespace ltx_kernels
