// FP8 operands for dense attention (quantize_attention_fp8), CUDA kernels. Generic CUDA: built
// for every architecture of the core library (the hardware fp32 -> e4m3 pair conversion on
// sm_89+, fp8_util.h's integer encoder before). Semantics and the fixed order of the k mean's
// fp64 sum: attention/attention_quant.h; the CPU backend (csrc/cpu/attention/attention_quant.cpp)
// is the same arithmetic, and the two agree bit for bit.
//
// Memory-bound: the only reductions that need keys before any code can be written are the k mean
// (smooth_k; over all keys, or over the leading smooth_keys) and v's per-channel amax over all
// keys, so v is read twice, k twice with the exact mean (once plus its leading keys with
// smooth_keys) and q once:
//   launch 1  statistics (one grid, two kinds of CTA by blockIdx range):
//     k sums:  a CTA per (batch row, 64 16-byte channel vectors, 64-key chunk of the mean's keys);
//              a thread sums its chunk's keys for its 8 (4 for fp32) channels in fp64, in key
//              order, 16 loads in flight, and writes the chunk's partial sums to the workspace
//              (smooth_k only);
//     v amax:  the same tiling, the channels' partial maxima (packed bf16x2 / f16x2 max).
//   launch 2  reduce: a thread per (batch row, channel) adds the partial sums in chunk order (fp64,
//              then one division and one rounding to fp32: the mean) and takes the max of the
//              partial maxima (v_descale). Deterministic: no atomics on values, fixed orders.
//   launch 3  codes (one grid, three kinds of CTA, in this order; q here rather than in launch 1,
//              where it would share the statistics' register budget and spill):
//     q rows:  a CTA per (batch row, head, tile of rows), 8 chunks of 16 bytes per thread (4 for
//              head dims of a non-power-of-two number of chunks), all loads issued first; amax
//              per row by xor shuffles within the lanes of a row (its chunks sit in consecutive
//              lanes) or shared-memory atomics (other head dims), then the codes and factors;
//     k rows:  as q, with the mean (staged in shared memory) subtracted, per key (k_block 1) or a
//              CTA per 128-key block (k_block 128, amax by a block reduction; head dims whose
//              block does not fit 8 chunks per thread read the block twice, the second time
//              mostly from L2);
//     v tiles: a CTA per (batch row, kv head, 128 keys): coalesced 16-byte row loads, codes with
//              the channels' divisors, written to shared memory as [key][channel] words (XOR
//              swizzled by key bits so that the transposing reads below are conflict-free at
//              D 128 and 256, 2-way at D 64), then each thread gathers 4 keys (one output word:
//              positions 4w..4w+3 of a 32-key block hold keys k0, k0+1, k0+8, k0+9 in
//              fp8_v_key_order) of 4 channels, transposes the 4x4 bytes by byte permutes and
//              stores 4 words; a warp's store writes 128 contiguous bytes of one channel row.
//              Keys >= Skv give 0. With v alone (attention_values_fp8) the v tiles are a kernel of
//              their own, whose smaller register footprint holds more CTAs per SM (5 against 3).
// Overlap (sm_90+, programmatic dependent launch): launches 2 and 3 may start before the launch
// before them ends. Every CTA of launch 1 and 2 lets the next launch begin at once; launch 2 and
// launch 3's k and v CTAs wait for the statistics (griddepcontrol.wait) before they read them,
// while launch 3's q CTAs need none of them and run beside the statistics. Launch 1 starts as any
// kernel does, after everything before it in the stream, so q is ready when they read it.
// L2: the statistics read k and v with the default cache policy (everything else streams), and
// launch 3 takes v's and k's CTAs in reverse order, most recently read first, so the second read
// of k and v hits L2 where they fit (at B 2, S 2688, D 64 k and v are 44 MB against H100 / H200's
// 50 MB).
// Bytes: q, k, v read (v twice; k twice with the exact mean, once plus the leading keys with
// smooth_keys, once without smoothing), one code byte per element written, the factors, and a
// workspace of B * Hkv * D * (8 ceil(n / 64) + 4 ceil(Skv / 64)) bytes (n: the mean's keys)
// written and read once. At B 2, S 2688, H = Hkv 32, bf16, k_block 128: D 64 148 MB (the single-pass minimum
// is 100 MB), D 128 295 MB (199 MB): ~41 / ~82 us at 3.6 TB/s.
// Codes: fp8_util.h's rule; with a divisor in the Markstein range (fp8_divisor) one multiply
// and two FMAs per element then the paired satfinite conversion (bit for bit the fp32 division,
// signs restored from the values as fp8_quantize_bounded does), else the per-element rule.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ltx_kernels/attention/attention_quant.h"
#include "ltx_kernels/common/device.h"
#include "ltx_kernels/common/fp8_util.h"
#include "ltx_kernels/common/ptx.cuh"
#include "ltx_kernels/common/reduce.cuh"
#include "ltx_kernels/common/vec.cuh"
#include "ltx_kernels/cuda/ops.h"
#include "ltx_kernels/quant/fp8.cuh"

namespace ltx_kernels {
namespace {

using fp8_detail::chunk_quad;

constexpr int kThreads = 256;
// 16-byte chunks per thread and pass of a q / k rows tile: 8 where a row is a power-of-two
// number of chunks, 4 otherwise (the general chunk -> row map needs the registers)
template <bool POW2>
constexpr int kCpt = POW2 ? 8 : 4;
template <bool POW2>
constexpr int kTileChunks = kThreads * kCpt<POW2>;  // chunks per pass of a rows tile
constexpr int kStatBatch = 16;                   // keys loaded together by a thread of the first pass
constexpr int kStatThreads = 64;                 // threads (channel vectors) of a statistics CTA
constexpr int kVKeys = 128;                      // keys (positions) per v tile
constexpr int kKBlock = 128;                     // keys per k factor in block mode
constexpr int kGenericRows = kTileChunks<false> / 3 + 1;  // rows of a tile, nc >= 3 (or nc = 64: 32)

// One of q / k as rows of D elements: (batch row, sequence position, head), codes and factors.
struct RowsJob {
  const void* x;
  AttnStrides xs;
  uint8_t* out;
  AttnStrides os;
  float* scale;        // scale[(b * nsc + s / block) * heads + h]
  const float* mean;   // [B, heads * D] (subtracted first), or null
  int64_t seq, heads, ntiles, nsc;
  int rows;            // rows per tile (block mode: kKBlock)
  int block;           // 1 (a factor per row) or kKBlock (per block of rows)
};

struct Args {
  int64_t batch, skv, heads_kv;
  int D, nc, nc_shift;  // head dim, 16-byte chunks per row, log2(nc) or -1
  RowsJob q, k;
  const void* kx;
  const void* vx;
  AttnStrides ks, vs;
  uint8_t* v8;
  int64_t vpad;
  float* v_descale;
  bool smooth;
  int64_t mean_keys;          // keys of the k mean (the first mean_keys)
  double* sums;   // [B, k_chunks, Hkv * D]
  float* amax;    // [B, nchunks, Hkv * D]
  float* mean;    // [B, Hkv * D]
  int64_t nchunks;            // 64-key chunks of all keys (v's maxima)
  int64_t k_chunks;           // 64-key chunks of the mean's keys (k's sums)
  int64_t stat_ct;            // channel-vector tiles (of kStatThreads) per batch row
  int64_t n_stat_k, n_stat_v;  // launch 1 CTAs per kind
  int64_t n_q, n_k, n_v;       // launch 3 CTAs per kind
  int64_t v_tiles;             // v tiles per (batch row, kv head)
};

using fp8_detail::load_chunk;  // streaming 16-byte load
template <typename T>
__device__ __forceinline__ uint4 ld_chunk_cached(const T* p) {
  const int4 r = *reinterpret_cast<const int4*>(p);
  return make_uint4(uint32_t(r.x), uint32_t(r.y), uint32_t(r.z), uint32_t(r.w));
}

// The same with a divisor per value (v: per channel); dv[e] = (s, r), r = 0 where the divisor
// takes the IEEE division (fp8_divisor's ieee flag).
__device__ __forceinline__ uint32_t encode4_channels(const float (&f)[4], const float2* dv) {
  float2 d[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) d[e] = dv[e];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if (d[0].y != 0.f && d[1].y != 0.f && d[2].y != 0.f && d[3].y != 0.f) {
    float q[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) q[e] = fp8_markstein_div(f[e], d[e].x, d[e].y);
    return cvt_fp8x4<__NV_E4M3>(q) | (fp8_sign_bytes(f) & 0x80808080u);
  }
#endif
  uint32_t w = 0;
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const Fp8Divisor dd{d[e].x, d[e].y, d[e].y == 0.f};
    w |= uint32_t(fp8_quantize_div<E4M3>(f[e], dd)) << (8 * e);
  }
  return w;
}

// Values 4j .. 4j + 3 of a chunk as fp32, minus the channels' means when `mean` is not null
// (mean points at the chunk's first channel).
template <typename T>
__device__ __forceinline__ void chunk_values(const uint4& c, int j, const float* mean, float (&f)[4]) {
  uint32_t sg;
  chunk_quad<T>(c, j, f, sg);
  if (mean != nullptr) {
#pragma unroll
    for (int e = 0; e < 4; ++e) f[e] = __fsub_rn(f[e], mean[4 * j + e]);
  }
}

__device__ __forceinline__ void split_chunk(int idx, int nc, int nc_shift, int& row, int& cv) {
  row = nc_shift >= 0 ? idx >> nc_shift : idx / nc;
  cv = idx - row * nc;
}

// Row and chunk of chunk t + kThreads * i of a pass (thread t, i < kCpt). POW2 (nc a power of
// two, so nc divides kThreads): the chunk is t % nc for every i and the row advances by
// kThreads / nc, which keeps one pointer per thread instead of one per chunk.
template <bool POW2>
struct ChunkMap {
  int t, nc, shift;
  __device__ __forceinline__ void at(int pass, int i, int& row, int& cv) const {
    if constexpr (POW2) {
      row = ((pass * kTileChunks<true> + t) >> shift) + i * (kThreads >> shift);
      cv = t & (nc - 1);
    } else {
      split_chunk(pass * kTileChunks<false> + t + kThreads * i, nc, -1, row, cv);
    }
  }
};

// ---- launch 1: partial sums of k / partial amax of v over chunks of kAttnQuantSumKeys keys ----
// Thread: one 16-byte channel vector of one head, the n keys of its chunk from x (key stride
// `step`). Every key u < n in order, f(chunk of key u), kStatBatch loads in flight: the loads
// are unpredicated (past n they repeat the last key), f sees only keys < n. Cached loads: launch 3
// reads the same bytes again.
template <typename T, class F>
__device__ __forceinline__ void for_each_key(const T* x, int64_t step, int n, F&& f) {
  for (int u0 = 0; u0 < n; u0 += kStatBatch) {
    uint4 buf[kStatBatch];
#pragma unroll
    for (int u = 0; u < kStatBatch; ++u) buf[u] = ld_chunk_cached(x + min(u0 + u, n - 1) * step);
#pragma unroll
    for (int u = 0; u < kStatBatch; ++u) {
      if (u0 + u < n) f(buf[u]);
    }
  }
}

template <typename T>
__device__ __forceinline__ void k_partial_sums(const T* x, int64_t step, int n, double* out) {
  constexpr int VEC = kVec16<T>;
  constexpr int W = VEC / 4;
  double acc[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) acc[e] = 0.0;
  for_each_key(x, step, n, [&](const uint4& c) {  // keys in order: each channel's sum is sequential
#pragma unroll
    for (int j = 0; j < W; ++j) {
      float f[4];
      chunk_values<T>(c, j, nullptr, f);
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[4 * j + e] += double(f[e]);
    }
  });
  double2* o = reinterpret_cast<double2*>(out);
#pragma unroll
  for (int e = 0; e < VEC / 2; ++e) o[e] = make_double2(acc[2 * e], acc[2 * e + 1]);
}

template <typename T>
__device__ __forceinline__ void v_partial_amax(const T* x, int64_t step, int n, float* out) {
  constexpr int VEC = kVec16<T>;
  float m[VEC];
  if constexpr (sizeof(T) == 2) {
    uint32_t mw[4] = {0u, 0u, 0u, 0u};  // two non-negative 16-bit maxima per word (NaN-ignoring)
    for_each_key(x, step, n, [&](const uint4& c) {
#pragma unroll
      for (int i = 0; i < 4; ++i) mw[i] = fp8_detail::max_abs2<T>(mw[i], fp8_detail::chunk_word(c, i));
    });
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        m[2 * i] = __uint_as_float(mw[i] << 16);
        m[2 * i + 1] = __uint_as_float(mw[i] & 0xffff0000u);
      } else {
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&mw[i]));
        m[2 * i] = f.x;
        m[2 * i + 1] = f.y;
      }
    }
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) m[e] = 0.f;
    for_each_key(x, step, n, [&](const uint4& c) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) m[e] = fp8_absmax(m[e], __uint_as_float(fp8_detail::chunk_word(c, e)));
    });
  }
  float4* o = reinterpret_cast<float4*>(out);
#pragma unroll
  for (int e = 0; e < VEC / 4; ++e) o[e] = make_float4(m[4 * e], m[4 * e + 1], m[4 * e + 2], m[4 * e + 3]);
}

// CTA (batch row, tile of kStatThreads channel vectors, chunk), chunk fastest; k's chunks cover
// the mean's keys, v's all keys. Small CTAs spread a batch row's few tiles over every SM.
template <typename T>
__device__ __forceinline__ void stat_tile(const Args& a, int64_t cta, bool is_k) {
  constexpr int VEC = kVec16<T>;
  const int64_t nch = is_k ? a.k_chunks : a.nchunks;
  const int64_t ch = cta % nch;
  const int64_t rest = cta / nch;
  const int64_t ct = rest % a.stat_ct, b = rest / a.stat_ct;
  const int64_t cv = ct * kStatThreads + threadIdx.x;
  if (cv >= a.heads_kv * a.nc) return;  // no barrier in this kind of CTA
  const int64_t hk = cv / a.nc, c = cv - hk * a.nc;
  const AttnStrides& s = is_k ? a.ks : a.vs;
  const int64_t j0 = ch * kAttnQuantSumKeys;
  const T* x = static_cast<const T*>(is_k ? a.kx : a.vx) + b * s.b + j0 * s.s + hk * s.h + c * VEC;
  const int n = int(min(kAttnQuantSumKeys, (is_k ? a.mean_keys : a.skv) - j0));
  const int64_t out = (b * nch + ch) * (a.heads_kv * a.D) + hk * a.D + c * VEC;
  if (is_k) k_partial_sums<T>(x, s.s, n, a.sums + out);
  else v_partial_amax<T>(x, s.s, n, a.amax + out);
}

// ---- q / k rows ----------------------------------------------------------------------------
// A tile of J.rows rows of one (batch row, head), in passes of TC chunks (one pass
// unless a 128-key block has more than TC chunks). Chunk idx of a pass: row idx / nc,
// chunk idx % nc of the row; thread t holds idx = t + kThreads * i, i < CPT, all loads issued
// before any is used. A factor per row whose chunks sit in consecutive lanes (nc a power of two
// <= 32): xor shuffles, then each chunk is encoded at once; otherwise (other head dims, or a
// factor per block) the maxima go through shared memory first.
struct RowsSmem {
  float mean[kAttnQuantMaxHeadDim];
  unsigned row_max[kGenericRows];
  float red[32];
};

template <typename T, bool POW2>
__device__ __forceinline__ void rows_tile(const RowsJob& J, int64_t cta, int D, int nc, int nc_shift, RowsSmem& sm) {
  constexpr int VEC = kVec16<T>;
  constexpr int W = VEC / 4;
  constexpr int CPT = kCpt<POW2>, TC = kTileChunks<POW2>;
  float* mean_s = sm.mean;
  unsigned* row_max = sm.row_max;
  float* red = sm.red;
  const int t = threadIdx.x;
  const int64_t h = cta % J.heads;
  const int64_t rest = cta / J.heads;
  const int64_t tile = rest % J.ntiles, b = rest / J.ntiles;
  const int64_t s0 = tile * J.rows;
  const int nrow = int(min(int64_t(J.rows), J.seq - s0));
  const int total = nrow * nc;
  const bool per_row = J.block == 1;
  const bool shfl = POW2 && per_row && nc <= 32;
  const ChunkMap<POW2> map{t, nc, nc_shift};
  const float* mean = nullptr;
  if (J.mean != nullptr) {
    for (int d = t; d < D; d += kThreads) mean_s[d] = J.mean[(b * J.heads + h) * D + d];
    mean = mean_s;
  }
  if (per_row && !shfl)
    for (int r = t; r < nrow; r += kThreads) row_max[r] = 0u;
  if (J.mean != nullptr || (per_row && !shfl)) __syncthreads();
  const T* xb = static_cast<const T*>(J.x) + b * J.xs.b + h * J.xs.h + s0 * J.xs.s;
  uint8_t* ob = J.out + b * J.os.b + h * J.os.h + s0 * J.os.s;
  const int npass = (total + TC - 1) / TC;
  uint4 buf[CPT];
  auto load_pass = [&](int pass, bool stream) {
#pragma unroll
    for (int i = 0; i < CPT; ++i) {
      const int idx = pass * TC + t + kThreads * i;
      int r, c;
      map.at(pass, i, r, c);
      if (idx < total) {
        const T* p = xb + r * J.xs.s + c * VEC;
        buf[i] = stream ? load_chunk(p) : ld_chunk_cached(p);
      } else {
        buf[i] = make_uint4(0u, 0u, 0u, 0u);
      }
    }
  };
  auto chunk_max = [&](int i, int c) {
    float m = 0.f;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      float f[4];
      chunk_values<T>(buf[i], j, mean == nullptr ? nullptr : mean + c * VEC, f);
#pragma unroll
      for (int e = 0; e < 4; ++e) m = fp8_absmax(m, f[e]);
    }
    return m;
  };
  auto encode_store = [&](int i, int r, int c, const Fp8Divisor& dv) {
    uint32_t words[W];
#pragma unroll
    for (int j = 0; j < W; ++j) {
      float f[4];
      chunk_values<T>(buf[i], j, mean == nullptr ? nullptr : mean + c * VEC, f);
      words[j] = fp8_quantize_bounded4<E4M3>(f, dv);
    }
    fp8_detail::store_code_words<W>(ob + r * J.os.s + c * VEC, words);
  };
  if (shfl) {  // one pass (rows * nc <= TC)
    load_pass(0, true);
#pragma unroll
    for (int i = 0; i < CPT; ++i) {
      const int idx = t + kThreads * i;
      int r, c;
      map.at(0, i, r, c);
      const float m = warp_max(idx < total ? chunk_max(i, c) : 0.f, nc);  // whole rows per lane group
      if (idx < total) {
        const float s = fp8_scale_from_amax<E4M3>(m);
        encode_store(i, r, c, fp8_divisor(s));
        if (c == 0) J.scale[(b * J.nsc + s0 + r) * J.heads + h] = s;
      }
    }
    return;
  }
  float m_blk = 0.f;
  for (int pass = 0; pass < npass; ++pass) {
    load_pass(pass, npass == 1);
#pragma unroll
    for (int i = 0; i < CPT; ++i) {
      const int idx = pass * TC + t + kThreads * i;
      if (idx >= total) continue;
      int r, c;
      map.at(pass, i, r, c);
      const float m = chunk_max(i, c);
      if (per_row) atomicMax(&row_max[r], __float_as_uint(m));  // non-negative floats order as their bits
      else m_blk = fmaxf(m_blk, m);
    }
  }
  if (per_row) __syncthreads();
  else m_blk = block_max(m_blk, red);
  const Fp8Divisor d_blk = fp8_divisor(fp8_scale_from_amax<E4M3>(m_blk));
  if (!per_row && t == 0) J.scale[(b * J.nsc + tile) * J.heads + h] = d_blk.s;
  for (int pass = 0; pass < npass; ++pass) {
    if (npass > 1) load_pass(pass, false);
#pragma unroll
    for (int i = 0; i < CPT; ++i) {
      const int idx = pass * TC + t + kThreads * i;
      if (idx >= total) continue;
      int r, c;
      map.at(pass, i, r, c);
      if (per_row) {
        const float s = fp8_scale_from_amax<E4M3>(__uint_as_float(row_max[r]));
        encode_store(i, r, c, fp8_divisor(s));
        if (c == 0) J.scale[(b * J.nsc + s0 + r) * J.heads + h] = s;
      } else {
        encode_store(i, r, c, d_blk);
      }
    }
  }
}

// ---- v tiles -------------------------------------------------------------------------------
// Word column of a [key][channel] code word in shared memory: XOR-swizzled by key bits 1, 2, 4,
// 5, 6 (the bits that tell apart the 32 keys k0 of a warp's transposing reads) when a row's
// word count is a power of two.
__device__ __forceinline__ int swz(int key, int mask) {
  return (((key >> 1) & 3) | (((key >> 4) & 7) << 2)) & mask;
}

template <typename T, int CPT>
__device__ __forceinline__ void v_tile(const Args& a, int64_t cta, uint32_t* smem) {
  constexpr int VEC = kVec16<T>;
  constexpr int TC = kThreads * CPT;  // chunks per pass
  constexpr int W = VEC / 4;
  const int t = threadIdx.x;
  const int D = a.D, nc = a.nc, RW = D / 4;
  const int mask = (RW & (RW - 1)) == 0 ? RW - 1 : 0;
  const int64_t hk = cta % a.heads_kv;
  const int64_t rest = cta / a.heads_kv;
  const int64_t tile = rest % a.v_tiles, b = rest / a.v_tiles;
  const int64_t p0 = tile * kVKeys;
  const int tlen = int(min(int64_t(kVKeys), a.vpad - p0));  // a multiple of 32
  uint32_t* codes = smem;                                            // [tlen][RW] words
  float2* dv = reinterpret_cast<float2*>(smem + kVKeys * RW);       // [D] (s, r or 0)
  for (int d = t; d < D; d += kThreads) {
    const Fp8Divisor x = fp8_divisor(a.v_descale[(b * a.heads_kv + hk) * D + d]);
    dv[d] = make_float2(x.s, x.ieee ? 0.f : x.r);
  }
  __syncthreads();
  const T* xb = static_cast<const T*>(a.vx) + b * a.vs.b + hk * a.vs.h;
  const int total = tlen * nc;
  for (int base = 0; base < total; base += TC) {
    uint4 buf[CPT];
#pragma unroll
    for (int i = 0; i < CPT; ++i) {
      const int idx = base + t + kThreads * i;
      int key, c;
      split_chunk(idx, nc, a.nc_shift, key, c);
      buf[i] = idx < total && p0 + key < a.skv ? load_chunk(xb + (p0 + key) * a.vs.s + c * VEC)
                                               : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int i = 0; i < CPT; ++i) {
      const int idx = base + t + kThreads * i;
      if (idx >= total) continue;
      int key, c;
      split_chunk(idx, nc, a.nc_shift, key, c);
      uint32_t w[W];
#pragma unroll
      for (int j = 0; j < W; ++j) {
        float f[4];
        chunk_values<T>(buf[i], j, nullptr, f);
        w[j] = p0 + key < a.skv ? encode4_channels(f, dv + c * VEC + 4 * j) : 0u;
      }
      const int sw = swz(key, mask);
      uint32_t* row = codes + key * RW;
      if constexpr (W == 2) {  // the pair (2c, 2c + 1) stays one aligned pair under the XOR
        const int col = (2 * c) ^ (sw & ~1);
        *reinterpret_cast<uint2*>(row + col) = (sw & 1) ? make_uint2(w[1], w[0]) : make_uint2(w[0], w[1]);
      } else {
        row[c ^ sw] = w[0];
      }
    }
  }
  __syncthreads();
  // Output word w of channel quad cq: positions 4w .. 4w + 3 = keys k0, k0 + 1, k0 + 8, k0 + 9.
  const int nw = tlen / 4;
  const int nw_shift = nw == 32 ? 5 : -1;
  uint8_t* out = a.v8 + ((b * a.heads_kv + hk) * D) * a.vpad + p0;
  for (int it = t; it < RW * nw; it += kThreads) {
    int cq, w;
    split_chunk(it, nw, nw_shift, cq, w);
    const int wb = w & 7;
    const int k0 = (w >> 3) * 32 + 16 * (wb >> 2) + 2 * (wb & 3);
    auto rd = [&](int key) { return codes[key * RW + (cq ^ swz(key, mask))]; };
    const uint32_t r0 = rd(k0), r1 = rd(k0 + 1), r2 = rd(k0 + 8), r3 = rd(k0 + 9);
    const uint32_t lo01 = __byte_perm(r0, r1, 0x5140u), hi01 = __byte_perm(r0, r1, 0x7362u);
    const uint32_t lo23 = __byte_perm(r2, r3, 0x5140u), hi23 = __byte_perm(r2, r3, 0x7362u);
    const uint32_t o[4] = {__byte_perm(lo01, lo23, 0x5410u), __byte_perm(lo01, lo23, 0x7632u),
                           __byte_perm(hi01, hi23, 0x5410u), __byte_perm(hi01, hi23, 0x7632u)};
#pragma unroll
    for (int e = 0; e < 4; ++e)
      __stcs(reinterpret_cast<int*>(out + int64_t(4 * cq + e) * a.vpad + 4 * w), int(o[e]));
  }
}

// ---- kernels ---------------------------------------------------------------------------------
template <typename T>
__global__ void __launch_bounds__(kStatThreads) attn_quant_stats(const Args a) {
  ptx::launch_dependents();
  const int64_t cta = blockIdx.x;
  if (cta < a.n_stat_k) stat_tile<T>(a, cta, true);
  else stat_tile<T>(a, cta - a.n_stat_k, false);
}

// A thread per (batch row, channel); the partials of kReduceBatch chunks loaded together (one
// memory round trip per batch instead of one per chunk), then added in chunk order.
constexpr int kReduceBatch = 16;

__global__ void __launch_bounds__(kThreads) attn_quant_reduce(const Args a) {
  ptx::launch_dependents();
  ptx::wait_prerequisites();
  const int64_t CH = a.heads_kv * a.D;
  const int64_t i = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= a.batch * CH) return;
  const int64_t b = i / CH, c = i - b * CH;
  const int n = int(a.nchunks), nk = int(a.k_chunks);  // nk <= n: k's sums cover the mean's keys
  const double* sums = a.smooth ? a.sums + b * a.k_chunks * CH + c : nullptr;
  const float* amax = a.amax + b * a.nchunks * CH + c;
  double s = 0.0;
  float m = 0.f;
  for (int c0 = 0; c0 < n; c0 += kReduceBatch) {
    double ps[kReduceBatch];
    float pm[kReduceBatch];
#pragma unroll
    for (int u = 0; u < kReduceBatch; ++u) {  // past the end: the last again, unused
      ps[u] = sums != nullptr && c0 < nk ? sums[int64_t(min(c0 + u, nk - 1)) * CH] : 0.0;
      pm[u] = amax[int64_t(min(c0 + u, n - 1)) * CH];
    }
#pragma unroll
    for (int u = 0; u < kReduceBatch; ++u) {
      if (c0 + u < nk) s += ps[u];
      if (c0 + u < n) m = fmaxf(m, pm[u]);
    }
  }
  if (sums != nullptr) a.mean[i] = __double2float_rn(s / double(a.mean_keys));
  a.v_descale[i] = fp8_scale_from_amax<E4M3>(m);
}

// q rows, then v tiles, then k rows, by blockIdx range (v and k in reverse order: the statistics
// read k, then v, in order, so the last bytes they read come first). Three CTAs per SM (80 registers) where
// that compiles without spills (sm_89, sm_90, sm_100), two elsewhere.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 890 || __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000)
#define LTX_ATTN_QUANT_CODES_CTAS 3
#else
#define LTX_ATTN_QUANT_CODES_CTAS 2
#endif
template <typename T>
__global__ void __launch_bounds__(kThreads, LTX_ATTN_QUANT_CODES_CTAS) attn_quant_codes(const Args a) {
  extern __shared__ uint4 dyn_smem[];
  __shared__ RowsSmem rows_smem;
  int64_t cta = blockIdx.x;
  if (cta >= a.n_q) ptx::wait_prerequisites();  // k and v read the statistics; q reads none of them
  if (cta >= a.n_q && cta < a.n_q + a.n_v) {
    v_tile<T, kCpt<true>>(a, a.n_q + a.n_v - 1 - cta, reinterpret_cast<uint32_t*>(dyn_smem));
    return;
  }
  const bool is_q = cta < a.n_q;
  const RowsJob& J = is_q ? a.q : a.k;
  if (!is_q) cta = a.n_q + a.n_v + a.n_k - 1 - cta;
  if (a.nc_shift >= 0) rows_tile<T, true>(J, cta, a.D, a.nc, a.nc_shift, rows_smem);
  else rows_tile<T, false>(J, cta, a.D, a.nc, a.nc_shift, rows_smem);
}

// v tiles alone (attention_values_fp8: no q or k rows): 4 chunks per thread and pass, so a tile
// of 128 keys of 64 16-bit channels is one pass of 16-byte loads, and a small register footprint
// that fits kValuesCtas CTAs per SM (the tiles' load, encode, transpose and store phases
// overlap across CTAs, not within one). Every CTA reads v_descale: it waits for launch 2.
constexpr int kValuesCpt = 4;
constexpr int kValuesCtas = 5;
template <typename T>
__global__ void __launch_bounds__(kThreads, kValuesCtas) attn_values_codes(const Args a) {
  extern __shared__ uint4 dyn_smem[];
  ptx::wait_prerequisites();
  v_tile<T, kValuesCpt>(a, a.n_v - 1 - int64_t(blockIdx.x), reinterpret_cast<uint32_t*>(dyn_smem));
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// kernel<<<grid, kThreads, smem, st>>>(a), as a programmatic dependent launch when `programmatic`.
cudaError_t launch_after(void (*kernel)(Args), unsigned grid, size_t smem, cudaStream_t st, bool programmatic,
                         const Args& a) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = st;
  cfg.attrs = attr;
  cfg.numAttrs = programmatic ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, a);
}

int log2_or_minus1(int n) {
  for (int s = 0; s < 31; ++s)
    if ((1 << s) == n) return s;
  return -1;
}

RowsJob rows_job(const void* x, const AttnStrides& xs, uint8_t* out, const AttnStrides& os, float* scale,
                 const float* mean, int64_t seq, int64_t heads, int block, int nc, bool pow2) {
  RowsJob j;
  j.x = x;
  j.xs = xs;
  j.out = out;
  j.os = os;
  j.scale = scale;
  j.mean = mean;
  j.seq = seq;
  j.heads = heads;
  j.block = block;
  j.rows = block == 1 ? (pow2 ? kTileChunks<true> : kTileChunks<false>) / nc : kKBlock;
  j.ntiles = cdiv(seq, j.rows);
  j.nsc = cdiv(seq, block);
  return j;
}

template <typename T>
cudaError_t launch(const AttnQuantParams& p, cudaStream_t st) {
  constexpr int VEC = kVec16<T>;
  Args a{};
  a.batch = p.batch;
  a.skv = p.seqlen_kv;
  a.heads_kv = p.heads_kv;
  a.D = int(p.head_dim);
  a.nc = a.D / VEC;
  a.nc_shift = log2_or_minus1(a.nc);
  const bool smooth_ws = p.smooth_k && p.k != nullptr;  // the workspace holds k's sums and mean
  a.smooth = smooth_ws && p.seqlen_kv > 0;
  a.mean_keys = attention_quant_mean_keys(p);
  a.nchunks = attention_quant_chunks(p.seqlen_kv);
  a.k_chunks = attention_quant_chunks(a.mean_keys);
  const int64_t CH = p.heads_kv * p.head_dim;
  char* ws = static_cast<char*>(p.workspace);  // the layout of attention_quant_workspace_bytes
  a.sums = smooth_ws ? reinterpret_cast<double*>(ws) : nullptr;
  const int64_t off_amax = smooth_ws ? p.batch * a.k_chunks * CH * 8 : 0;
  a.amax = reinterpret_cast<float*>(ws + off_amax);
  a.mean = smooth_ws ? reinterpret_cast<float*>(ws + off_amax + (p.batch * a.nchunks * CH * 4 + 15) / 16 * 16)
                     : nullptr;
  a.q = rows_job(p.q, p.q_stride, p.q8, p.q8_stride, p.q_descale, nullptr, p.seqlen_q, p.heads, 1, a.nc,
                 a.nc_shift >= 0);
  a.k = rows_job(p.k, p.k_stride, p.k8, p.k8_stride, p.k_descale, a.smooth ? a.mean : nullptr, p.seqlen_kv,
                 p.heads_kv, int(p.k_block), a.nc, a.nc_shift >= 0);
  a.kx = p.k;
  a.vx = p.v;
  a.ks = p.k_stride;
  a.vs = p.v_stride;
  a.v8 = p.v8;
  a.vpad = p.v_keys_padded;
  a.v_descale = p.v_descale;
  a.stat_ct = cdiv(p.heads_kv * a.nc, kStatThreads);
  a.n_stat_k = a.smooth ? p.batch * a.stat_ct * a.k_chunks : 0;
  a.n_stat_v = p.batch * a.stat_ct * a.nchunks;
  a.n_q = p.q != nullptr ? p.batch * p.heads * a.q.ntiles : 0;  // (no q / k operand: no CTAs)
  a.n_k = p.k != nullptr ? p.batch * p.heads_kv * a.k.ntiles : 0;
  a.v_tiles = cdiv(p.v_keys_padded, kVKeys);
  a.n_v = p.batch * p.heads_kv * a.v_tiles;
  constexpr int64_t kMaxGrid = INT32_MAX;
  const int64_t n1 = a.n_stat_k + a.n_stat_v, n2 = a.n_q + a.n_k + a.n_v;
  const int64_t nr = cdiv(p.batch * CH, kThreads);
  if (n1 > kMaxGrid || n2 > kMaxGrid || nr > kMaxGrid) return cudaErrorInvalidValue;
  if (attention_quant_workspace_bytes(p) > 0 && p.workspace == nullptr) return cudaErrorInvalidValue;
  // Programmatic launches only after a launch of this call, so the chain starts with an ordinary
  // one (launch 3's q CTAs rely on that, see the top of this file).
  const bool pdl = current_device_props().cc >= 90;  // programmatic dependent launch
  if (n1 > 0) {
    attn_quant_stats<T><<<unsigned(n1), kStatThreads, 0, st>>>(a);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if (nr > 0) {
    if (const cudaError_t e = launch_after(attn_quant_reduce, unsigned(nr), 0, st, pdl && n1 > 0, a); e != cudaSuccess)
      return e;
  }
  if (n2 > 0) {
    const size_t smem = a.n_v > 0 ? size_t(kVKeys) * a.D + size_t(8) * a.D : 0;
    // (programmatic only when some CTA waits for launch 2, so that launch 3 never ends before it)
    const bool after = pdl && nr > 0 && a.n_k + a.n_v > 0;
    auto* codes = a.n_q + a.n_k == 0 ? attn_values_codes<T> : attn_quant_codes<T>;
    if (const cudaError_t e = launch_after(codes, unsigned(n2), smem, st, after, a); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t quantize_attention_fp8(const AttnQuantParams& p, cudaStream_t stream) {
  if (attention_quant_check(p) != nullptr) return cudaErrorInvalidValue;
  if (p.batch == 0) return cudaSuccess;
  switch (p.dtype) {
    case AttnDtype::kBF16: return launch<__nv_bfloat16>(p, stream);
    case AttnDtype::kFP16: return launch<__half>(p, stream);
    case AttnDtype::kFP32: return launch<float>(p, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace ltx_kernels
