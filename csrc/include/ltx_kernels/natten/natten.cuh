// Fused neighborhood attention forward (Ampere+/Hopper mma.sync m16n8k16, fp32 online softmax).
//
// One CTA = 4 warps = 64 queries forming a box (T0 x T1 x T2 in (S0, S1, S2)) of one (batch, head).
// The union of the box's windows (per axis [window start of the first query, window end of the
// last], the NATTEN start being monotone in the query position) is the CTA's key range; it is
// walked in 64-key chunks of its row-major flattening, K/V chunks double-buffered in shared memory
// with cp.async (rows padded by 16 bytes: conflict-free 32-bit and ldmatrix reads). Warp w owns
// queries [16w, 16w + 16) of the box; per chunk it computes, by ballot, which 8-key column blocks
// hold any key of its own union of windows and skips the others (S and P.V), then masks each
// (query, key) pair to the query's own window (-inf), runs the online softmax in fp32 (exp2 with
// the scale folded in) and accumulates O += P V on tensor cores.
//
// Work per query, window (3, 7, 7) = 147 attended keys, interior:
//   box 1x8x8 -> CTA union 3x14x14 = 588 keys (25% attended); a warp (1x2x8 queries) touches the
//   3x8x14 = 336 keys of its rows, ~45-50 of the 74 8-key blocks -> ~40% of computed pairs useful.
//   box 2x4x8 -> 4x10x14 = 560 (26%); box 4x4x4 -> 6x10x10 = 600 (24.5%).
// natten_pick_tile (natten_heuristics.h) picks the box with the fewest staged keys for the grid at hand.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "ltx_kernels/natten/natten_params.h"
#include "ltx_kernels/common/ptx.cuh"

namespace ltx_kernels {
namespace natten_detail {

using ptx::cp_async16;
using ptx::cp_async_commit;
using ptx::cp_async_wait;
using ptx::smem_u32;

constexpr int kThreads = 128;  // 4 warps x 16 query rows
constexpr int kQ = 64;         // queries per CTA
constexpr int kKeys = 64;      // keys per chunk
constexpr uint32_t kNoKey = (1023u << 20) | (1023u << 10) | 1023u;  // never inside a window

struct NaKernelArgs {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  NattenStrides qs, ks, vs, os;
  int n[3];      // grid extents
  int ker[3];    // window sizes
  int causal[3];
  int tile[3];   // query box extents, product 64
  int ntile[3];  // boxes per axis
  float scale_log2;  // scale * log2(e)
};

__device__ __forceinline__ void win(int i, int n, int k, int causal, int& lo, int& len) {
  if (causal) {
    lo = max(i - k + 1, 0);
    len = i - lo + 1;
  } else {
    lo = min(max(i - k / 2, 0), n - k);
    len = k;
  }
}

// This CTA's query box (blockIdx.x over ntile boxes of extents ext, w fastest): its origin q0
// and the union of its queries' windows, [ulo, ulo + U) per axis (the NATTEN start is monotone
// in the query position, so the first and the last query bound it).
__device__ __forceinline__ void box_union(const int (&n)[3], const int (&ker)[3], const int (&causal)[3],
                                          const int (&ntile)[3], const int (&ext)[3], int (&q0)[3], int (&ulo)[3],
                                          int (&U)[3]) {
  int64_t bx = blockIdx.x;
  q0[2] = int(bx % ntile[2]) * ext[2];
  bx /= ntile[2];
  q0[1] = int(bx % ntile[1]) * ext[1];
  q0[0] = int(bx / ntile[1]) * ext[0];
#pragma unroll
  for (int ax = 0; ax < 3; ++ax) {
    const int last = min(q0[ax] + ext[ax] - 1, n[ax] - 1);
    int lo0, len0, lo1, len1;
    win(q0[ax], n[ax], ker[ax], causal[ax], lo0, len0);
    win(last, n[ax], ker[ax], causal[ax], lo1, len1);
    ulo[ax] = lo0;
    U[ax] = lo1 + len1 - lo0;
  }
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float a, float b);
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float a, float b) {
  __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<uint32_t*>(&h);
}

// D += A * B on one m16n8k16 tile (fp32 accumulators; T = __half or __nv_bfloat16 operands).
#define LTX_NATTEN_MMA16816(AB)                                                                    \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." AB "." AB                                  \
               ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                     \
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                    \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))
template <typename T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "mma16816: fp16 or bf16");
  if constexpr (std::is_same_v<T, __half>) LTX_NATTEN_MMA16816("f16");
  else LTX_NATTEN_MMA16816("bf16");
}
#undef LTX_NATTEN_MMA16816

// Final O / l of the thread's two rows: row sums completed over the row's 4 lanes; row_ptr(i)
// is the output row of row i (g, g + 8), or nullptr for a padded row (not stored).
template <typename T, int DN, class RowPtr>
__device__ __forceinline__ void store_rows(const float (&o)[DN][4], float (&l)[2], int t4, RowPtr row_ptr) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
    l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    T* orp = row_ptr(i);
    if (orp == nullptr) continue;
    const float inv = 1.f / l[i];
#pragma unroll
    for (int dn = 0; dn < DN; ++dn)
      *reinterpret_cast<uint32_t*>(orp + dn * 8 + 2 * t4) = pack2<T>(o[dn][2 * i] * inv, o[dn][2 * i + 1] * inv);
  }
}

// Q fragments of the thread's rows (A operand, row major): a0 (g, 2t), a1 (g+8, 2t), a2 (g, 2t+8),
// a3 (g+8, 2t+8) of each 16-wide k-step; qrow[i] = the query row of row g + 8 i.
template <typename T, int KSTEPS>
__device__ __forceinline__ void load_q(uint32_t (&qf)[KSTEPS][4], const T* const (&qrow)[2], int t4) {
#pragma unroll
  for (int kk = 0; kk < KSTEPS; ++kk) {
    const int c = kk * 16 + 2 * t4;
    qf[kk][0] = *reinterpret_cast<const uint32_t*>(qrow[0] + c);
    qf[kk][1] = *reinterpret_cast<const uint32_t*>(qrow[1] + c);
    qf[kk][2] = *reinterpret_cast<const uint32_t*>(qrow[0] + c + 8);
    qf[kk][3] = *reinterpret_cast<const uint32_t*>(qrow[1] + c + 8);
  }
}

// Online-softmax pieces shared by the portable and the sm_90 kernel (a thread holds rows g and
// g + 8 of a warp's 16 query rows; C fragments c0, c1 are row g, c2, c3 row g + 8).
// O rows *= their rescale factors.
template <int DN>
__device__ __forceinline__ void scale_rows(float (&o)[DN][4], const float (&alpha)[2]) {
#pragma unroll
  for (int dn = 0; dn < DN; ++dn) {
    o[dn][0] *= alpha[0];
    o[dn][1] *= alpha[0];
    o[dn][2] *= alpha[1];
    o[dn][3] *= alpha[1];
  }
}
// O += P V over one 16-key step: p = the C fragments of key blocks 2j, 2j + 1 (A layout: a0 = block
// 2j row g, a1 = row g + 8, a2/a3 = block 2j + 1); v_addr(dn) = shared address of this lane's
// ldmatrix.trans row for head dims [8 dn, 8 dn + 16).
template <typename T, int DN, class VAddr>
__device__ __forceinline__ void pv_step(float (&o)[DN][4], const float (&p)[2][4], VAddr v_addr) {
  const uint32_t pa[4] = {pack2<T>(p[0][0], p[0][1]), pack2<T>(p[0][2], p[0][3]), pack2<T>(p[1][0], p[1][1]),
                          pack2<T>(p[1][2], p[1][3])};
#pragma unroll
  for (int dn = 0; dn < DN; dn += 2) {
    uint32_t b[4];
    ptx::ldsm_x4_trans(b, v_addr(dn));
    mma16816<T>(o[dn], pa, b[0], b[1]);
    mma16816<T>(o[dn + 1], pa, b[2], b[3]);
  }
}

// Shared memory per stage: K [64][D + 8], V [64][D + 8] (T), key coordinates [64] (packed
// union-relative (t, h, w), 10 bits each).
template <typename T, int D>
struct Smem {
  static constexpr int kRow = D + 8;  // elements per padded row (16-byte pad)
  static constexpr int kTile = kKeys * kRow;
  static constexpr size_t kStageBytes = 2 * size_t(kTile) * sizeof(T) + kKeys * sizeof(uint32_t);
  static constexpr size_t kBytes = 2 * kStageBytes;
};

template <typename T, int D>
__global__ void __launch_bounds__(kThreads) na_fwd_kernel(const NaKernelArgs a) {
  static_assert(D % 16 == 0 && D >= 32 && D <= 128, "head dim 32, 64 or 128");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800  // cp.async, m16n8k16 (the adapter requires sm_80)
  using S = Smem<T, D>;
  constexpr int kRow = S::kRow;
  constexpr int KSTEPS = D / 16;  // k-steps of S = Q K^T
  constexpr int DN = D / 8;       // 8-wide dim blocks of O
  extern __shared__ __align__(16) unsigned char smem_raw[];

  const int tid = threadIdx.x;
  const int warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;

  // ---- which box, head, batch; the union of the box's windows
  const int64_t head = blockIdx.y, batch = blockIdx.z;
  int q0[3], ulo[3], U[3];
  box_union(a.n, a.ker, a.causal, a.ntile, a.tile, q0, ulo, U);
  const int U12 = U[1] * U[2];
  const int utotal = U[0] * U12;
  const int nchunks = (utotal + kKeys - 1) / kKeys;

  // ---- this thread's two query rows (r and r + 8 of the warp's 16)
  bool row_valid[2];
  int wlo[2][3], wlen[2][3];
  const T* qrow[2];
  int64_t orow[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int r = warp * 16 + g + 8 * i;
    const int rq[3] = {r / (a.tile[1] * a.tile[2]), (r / a.tile[2]) % a.tile[1], r % a.tile[2]};
    bool valid = true;
    int qi[3];
#pragma unroll
    for (int ax = 0; ax < 3; ++ax) {
      qi[ax] = q0[ax] + rq[ax];
      valid = valid && qi[ax] < a.n[ax];
      qi[ax] = min(qi[ax], a.n[ax] - 1);  // padded rows compute a clamped query, never stored
      int lo, len;
      win(qi[ax], a.n[ax], a.ker[ax], a.causal[ax], lo, len);
      wlo[i][ax] = lo - ulo[ax];
      wlen[i][ax] = len;
    }
    row_valid[i] = valid;
    const int64_t qoff = batch * a.qs.batch + qi[0] * a.qs.s0 + qi[1] * a.qs.s1 + qi[2] * a.qs.s2 + head * a.qs.head;
    qrow[i] = static_cast<const T*>(a.q) + qoff;
    orow[i] = batch * a.os.batch + qi[0] * a.os.s0 + qi[1] * a.os.s1 + qi[2] * a.os.s2 + head * a.os.head;
  }
  // The warp's box of keys (union of its rows' windows), union-relative.
  int wb_lo[3], wb_hi[3];
#pragma unroll
  for (int ax = 0; ax < 3; ++ax) {
    int lo = min(wlo[0][ax], wlo[1][ax]);
    int hi = max(wlo[0][ax] + wlen[0][ax], wlo[1][ax] + wlen[1][ax]);
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) {
      lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, o));
      hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, o));
    }
    wb_lo[ax] = lo;
    wb_hi[ax] = hi;
  }

  // ---- Q fragments
  uint32_t qf[KSTEPS][4];
  load_q<T>(qf, qrow, t4);

  const T* kbase = static_cast<const T*>(a.k) + batch * a.ks.batch + head * a.ks.head;
  const T* vbase = static_cast<const T*>(a.v) + batch * a.vs.batch + head * a.vs.head;

  auto stage_k = [&](int s) { return reinterpret_cast<T*>(smem_raw + s * S::kStageBytes); };
  auto stage_v = [&](int s) { return reinterpret_cast<T*>(smem_raw + s * S::kStageBytes) + S::kTile; };
  auto stage_c = [&](int s) {
    return reinterpret_cast<uint32_t*>(smem_raw + s * S::kStageBytes + 2 * size_t(S::kTile) * sizeof(T));
  };

  // Issue the copies of chunk c into stage s (every thread; one commit group).
  auto load_chunk = [&](int c, int s) {
    T* ks = stage_k(s);
    T* vs = stage_v(s);
    constexpr int kPieces = kKeys * (D / 8);  // 16-byte pieces per tensor
#pragma unroll
    for (int p = tid; p < kPieces; p += kThreads) {
      const int key = p / (D / 8), part = p % (D / 8);
      const int u = c * kKeys + key;
      int64_t koff = 0, voff = 0;
      int bytes = 0;
      if (u < utotal) {
        const int ut = u / U12, rem = u - ut * U12;
        const int uh = rem / U[2], uw = rem - uh * U[2];
        const int jt = ulo[0] + ut, jh = ulo[1] + uh, jw = ulo[2] + uw;
        koff = jt * a.ks.s0 + jh * a.ks.s1 + jw * a.ks.s2;
        voff = jt * a.vs.s0 + jh * a.vs.s1 + jw * a.vs.s2;
        bytes = 16;
      }
      cp_async16(smem_u32(ks + key * kRow + part * 8), kbase + koff + part * 8, bytes);
      cp_async16(smem_u32(vs + key * kRow + part * 8), vbase + voff + part * 8, bytes);
    }
    if (tid < kKeys) {
      const int u = c * kKeys + tid;
      uint32_t code = kNoKey;
      if (u < utotal) {
        const int ut = u / U12, rem = u - ut * U12;
        const int uh = rem / U[2], uw = rem - uh * U[2];
        code = (uint32_t(ut) << 20) | (uint32_t(uh) << 10) | uint32_t(uw);
      }
      stage_c(s)[tid] = code;
    }
    cp_async_commit();
  };

  float o[DN][4];
#pragma unroll
  for (int i = 0; i < DN; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  float m[2] = {-INFINITY, -INFINITY};  // running max (log2 domain, scaled)
  float l[2] = {0.f, 0.f};              // this thread's partial row sums

  load_chunk(0, 0);
  for (int c = 0; c < nchunks; ++c) {
    const int s = c & 1;
    if (c + 1 < nchunks) {
      load_chunk(c + 1, s ^ 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

    const T* ks = stage_k(s);
    const T* vs = stage_v(s);
    const uint32_t* kc = stage_c(s);

    // Which 8-key blocks hold a key of this warp's box: lane checks keys 2*lane, 2*lane + 1.
    bool mine = false;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const uint32_t code = kc[2 * lane + e];
      const int kt = int(code >> 20), kh = int((code >> 10) & 1023u), kw = int(code & 1023u);
      mine = mine || (code != kNoKey && kt >= wb_lo[0] && kt < wb_hi[0] && kh >= wb_lo[1] && kh < wb_hi[1] &&
                      kw >= wb_lo[2] && kw < wb_hi[2]);
    }
    const uint32_t blocks = __ballot_sync(0xffffffffu, mine);  // bits 4j..4j+3: block j

    if (blocks != 0u) {
      float sc[8][4];
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.f;
        if ((blocks >> (4 * nt)) & 0xfu) {
          const T* krow = ks + (nt * 8 + g) * kRow + 2 * t4;
#pragma unroll
          for (int kk = 0; kk < KSTEPS; ++kk) {
            const uint32_t b0 = *reinterpret_cast<const uint32_t*>(krow + kk * 16);
            const uint32_t b1 = *reinterpret_cast<const uint32_t*>(krow + kk * 16 + 8);
            mma16816<T>(sc[nt], qf[kk], b0, b1);
          }
        }
      }
      // Mask to each row's own window; scale into the log2 domain; row maxima.
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        const bool active = (blocks >> (4 * nt)) & 0xfu;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const uint32_t code = kc[nt * 8 + 2 * t4 + e];
          const int kt = int(code >> 20), kh = int((code >> 10) & 1023u), kw = int(code & 1023u);
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const bool in = active && code != kNoKey && unsigned(kt - wlo[i][0]) < unsigned(wlen[i][0]) &&
                            unsigned(kh - wlo[i][1]) < unsigned(wlen[i][1]) &&
                            unsigned(kw - wlo[i][2]) < unsigned(wlen[i][2]);
            float& x = sc[nt][2 * i + e];
            x = in ? x * a.scale_log2 : -INFINITY;
            mx[i] = fmaxf(mx[i], x);
          }
        }
      }
      float alpha[2], mbase[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
        const float mnew = fmaxf(m[i], mx[i]);
        mbase[i] = mnew == -INFINITY ? 0.f : mnew;  // a row with no key yet: keep exp2 finite
        alpha[i] = exp2f(m[i] - mbase[i]);          // 0 when m was -inf
        m[i] = mnew;
        l[i] *= alpha[i];
      }
      scale_rows(o, alpha);
      // P = exp2(S - m), O += P V over 16-key steps.
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        float p[2][4];
#pragma unroll
        for (int h2 = 0; h2 < 2; ++h2) {
          const int nt = 2 * j + h2;
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            p[h2][e] = exp2f(sc[nt][e] - mbase[e >> 1]);
            l[e >> 1] += p[h2][e];
          }
        }
        if (((blocks >> (8 * j)) & 0xffu) == 0u) continue;  // both blocks skipped: P is 0
        const T* vrow = vs + (j * 16 + (lane & 15)) * kRow + (lane >> 4) * 8;
        pv_step<T>(o, p, [&](int dn) { return smem_u32(vrow + dn * 8); });
      }
    }
    __syncthreads();  // stage s is refilled by the next iteration's prefetch
  }

  // ---- finalize: normalise, store valid rows
  T* out = static_cast<T*>(a.out);
  store_rows<T>(o, l, t4, [&](int i) { return row_valid[i] ? out + orow[i] : static_cast<T*>(nullptr); });
#endif
}

}  // namespace natten_detail
}  // namespace ltx_kernels
