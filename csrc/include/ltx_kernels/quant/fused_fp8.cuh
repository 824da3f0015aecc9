// Fused "op + FP8 per-token-group quantization" kernels (entry points: fused_fp8.h).
//
// ONE register-resident row kernel, fp8_rows, parameterised by an Op (the per-row math):
//   Op::row(r)                  per-row pointers
//   Op::load<V>(rc, off, ch)    read the chunk of V columns at `off` (a 16-byte access of each
//                               row input; prologue outputs such as h_out are written here)
//   Op::kNorm, sumsq, stat      optional row statistic (rstd) from the sum of squares
//   Op::finish<V>(rc, off, ch, stat, y)   the op's fp32 result y (never rounded to T)
// then the FP8 epilogue: thread `tid` owns chunks tid + k * tpr, so a group of `group` columns
// is `lpg` = group / V consecutive lanes (tpr is a multiple of 32, lpg a power of two <= 32):
// its amax is a warp_max over width lpg, every lane encodes its V values (the shared rule of
// common/fp8_util.h: fp8_quantize_bounded_words, two per hardware conversion, four codes per
// word) and writes V code bytes (8 bytes for 16-bit T),
// the group's first lane writes the scale.
// One scale per token (PER_ROW: group == cols wider than a warp's lanes cover, 16-bit inputs; an
// instantiation of its own, so the per-group kernels are unchanged): the row's amax needs every
// chunk, so a first pass runs Op::finish over the thread's chunks and reduces their absolute
// maximum over the row's warp or block; the second pass encodes with the row's scale, written by
// the row's first thread. Where the kernel has a register cap and a thread up to 4 chunks (rows
// up to 8192 16-bit columns), the first pass's fp32 results wait for the second in shared memory
// (fp8_rows_keeps: 4 bytes per value, each thread reading back only its own words, so no
// barrier; in registers they would spill under the cap). Otherwise the second pass runs
// Op::finish again on the row's inputs, which stay in registers (the same arithmetic, so the
// same values; only the small tables of Op::finish are read twice). Keeping the results matters
// for the activations: recomputing the tanh-GELU of an 8192-wide row doubles its exp2 /
// reciprocal work on the special-function units (4 per element), which then take as long as the
// row's memory traffic and only partly overlap it.
//
// Bytes per row: the op's inputs read once (as the plain op), cols code bytes + 4 bytes per
// group written (instead of cols * sizeof(T)); h_out of the gated residual written once.
//
// Reuse: the fused norms' prologue / row pointers / table loads (norm/fused_norm.cuh) and the
// activation functions (activation/activation.cuh); the epilogue arithmetic repeats theirs
// (same operations, same order) but stops before the rounding to T.
#pragma once

#include <algorithm>
#include <type_traits>

#include "ltx_kernels/activation/activation.cuh"
#include "ltx_kernels/common/device.h"
#include "ltx_kernels/common/fp8_util.h"
#include "ltx_kernels/common/reduce.cuh"
#include "ltx_kernels/common/rowwise_launch.h"
#include "ltx_kernels/common/vec.cuh"
#include "ltx_kernels/norm/fused_norm.cuh"
#include "ltx_kernels/quant/fused_fp8_params.h"
#include "ltx_kernels/rope/rope.cuh"

namespace ltx_kernels {
namespace fused_fp8_detail {

// ---- the ops ------------------------------------------------------------------------------

// RMSNorm family through the fused-norm policy (P::kLayerNorm is false here).
// RMS_DIV: rstd from s / cols (as the standalone rms_norm) instead of s * (1 / cols).
template <class P, typename T, bool RMS_DIV>
struct NormOp {
  fused_norm_detail::Args<T> a;
  static constexpr bool kNorm = true;
  // the gated residual spills under 64 registers; 80 keeps the 3 CTAs of 256 threads it had
  static constexpr int kRegCap = P::kGated ? 80 : 64;
  static constexpr int kWarpRowsRegCap = P::kGated ? 0 : 64;
  static constexpr bool kStageRow = false;
  using RowCtx = fused_norm_detail::RowPtrs<T>;
  template <int V>
  using Chunk = Packed<T, V>;

  __device__ __forceinline__ RowCtx row(int64_t r) const {
    return fused_norm_detail::row_ptrs<P>(a, r);
  }
  template <int V>
  __device__ __forceinline__ void load(const RowCtx& rc, int64_t off, Chunk<V>& v) const {
    v = fused_norm_detail::prologue<P, T, V, true, true>(rc, off);
  }
  template <int V>
  __device__ __forceinline__ float sumsq(const Chunk<V>& v) const { return rope_detail::sum_sq(v); }
  __device__ __forceinline__ float stat(float s) const {
    return RMS_DIV ? rsqrtf(s / float(a.cols) + a.eps) : rsqrtf(s * a.inv_cols + a.eps);
  }
  template <int V>
  __device__ __forceinline__ void finish(const RowCtx& rc, int64_t off, const Chunk<V>& v,
                                         float rstd, float (&y)[V]) const {
    Packed<T, V> wv, sc, sh;
    if (a.weight != nullptr) wv = load_cached<T, V>(a.weight + off);
    if constexpr (P::kModulate) {
      sc = fused_norm_detail::load_table<T, V>(rc.scale, off);
      sh = fused_norm_detail::load_table<T, V>(rc.shift, off);
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float f = to_f32(v.v[j]) * rstd;
      if (a.weight != nullptr) f *= to_f32(wv.v[j]);
      if constexpr (P::kModulate) f = f * (1.f + to_f32(sc.v[j])) + to_f32(sh.v[j]);
      y[j] = f;
    }
  }
};

// The row statistic of ops without a norm: none.
struct NoNormOp {
  static constexpr bool kNorm = false;
  static constexpr bool kStageRow = false;
  template <class C>
  __device__ __forceinline__ float sumsq(const C&) const { return 0.f; }
  __device__ __forceinline__ float stat(float) const { return 0.f; }
};

template <class Act, typename T>
struct ActAndMulOp : NoNormOp {
  const T* x;  // [rows, 2d]
  int64_t x_stride;
  int64_t d;
  bool act_first;
  static constexpr int kRegCap = std::is_same<T, __nv_bfloat16>::value ? 0 : 64;
  static constexpr int kWarpRowsRegCap = kRegCap;
  using RowCtx = const T*;
  template <int V>
  struct Chunk {
    Packed<T, V> a, b;
  };
  __device__ __forceinline__ RowCtx row(int64_t r) const { return x + r * x_stride; }
  template <int V>
  __device__ __forceinline__ void load(const RowCtx& xr, int64_t off, Chunk<V>& c) const {
    c.a = load_stream<T, V>(xr + off);
    c.b = load_stream<T, V>(xr + d + off);
  }
  template <int V>
  __device__ __forceinline__ void finish(const RowCtx&, int64_t, const Chunk<V>& c, float,
                                         float (&y)[V]) const {
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const float fa = to_f32(c.a.v[j]), fb = to_f32(c.b.v[j]);
      y[j] = act_first ? Act::f(fa) * fb : fa * Act::f(fb);
    }
  }
};

template <class Act, typename T>
struct ActOp : NoNormOp {
  const T* x;
  int64_t x_stride;
  static constexpr int kRegCap = 64;
  static constexpr int kWarpRowsRegCap = 64;
  using RowCtx = const T*;
  template <int V>
  using Chunk = Packed<T, V>;
  __device__ __forceinline__ RowCtx row(int64_t r) const { return x + r * x_stride; }
  template <int V>
  __device__ __forceinline__ void load(const RowCtx& xr, int64_t off, Chunk<V>& c) const {
    c = load_stream<T, V>(xr + off);
  }
  template <int V>
  __device__ __forceinline__ void finish(const RowCtx&, int64_t, const Chunk<V>& c, float,
                                         float (&y)[V]) const {
#pragma unroll
    for (int j = 0; j < V; ++j) y[j] = Act::f(to_f32(c.v[j]));
  }
};

template <typename T>
struct GatedAttentionOp : NoNormOp {
  const T* x;  // [rows, heads * head_dim]
  int64_t x_stride;
  const T* gate;  // [rows, heads]
  int64_t gate_stride;
  int head_dim;
  FastDiv32 hdiv;    // division by head_dim
  bool whole_heads;  // head_dim % V == 0: a chunk lies in one head, its gate loaded with it
  static constexpr int kRegCap = 64;
  static constexpr int kWarpRowsRegCap = 64;
  struct RowCtx {
    const T* x;
    const T* g;
  };
  template <int V>
  struct Chunk {
    Packed<T, V> x;
    T g;  // the chunk's gate logit (whole_heads)
  };
  __device__ __forceinline__ RowCtx row(int64_t r) const {
    return {x + r * x_stride, gate + r * gate_stride};
  }
  // column c < 2^31 -> its head, by a multiply-high (rowwise_launch.h's FastDiv32)
  __device__ __forceinline__ int head_of(int c) const {
    return int(fast_div(uint32_t(c), hdiv));
  }
  template <int V>
  __device__ __forceinline__ void load(const RowCtx& rc, int64_t off, Chunk<V>& c) const {
    c.x = load_stream<T, V>(rc.x + off);
    if (whole_heads) c.g = rc.g[head_of(int(off))];
  }
  template <int V>
  __device__ __forceinline__ void finish(const RowCtx& rc, int64_t off, const Chunk<V>& c, float,
                                         float (&y)[V]) const {
    if (whole_heads) {
      const float g = act_detail::gate2(to_f32(c.g));
#pragma unroll
      for (int j = 0; j < V; ++j) y[j] = to_f32(c.x.v[j]) * g;
      return;
    }
    int h = head_of(int(off));  // (cols <= INT32_MAX)
    int next = (h + 1) * head_dim;  // first column of the next head
    float g = act_detail::gate2(to_f32(rc.g[h]));
#pragma unroll
    for (int j = 0; j < V; ++j) {
      while (int(off) + j >= next) {  // a chunk may cross head boundaries (small head_dim)
        ++h;
        next += head_dim;
        g = act_detail::gate2(to_f32(rc.g[h]));
      }
      y[j] = to_f32(c.x.v[j]) * g;
    }
  }
};

// Whole-row RMSNorm then RoPE (the arithmetic of rope.cuh's rotate_store, same order).
template <typename T, typename TT>
struct RopeArgs {
  const T* x;
  int64_t x_stride;
  const T* w;  // [cols] or nullptr
  const TT* cos;
  RopeTableStrides cs;
  const TT* sin;
  RopeTableStrides ss;
  int64_t seq;
  int cols;
  int head_dim;  // split: d; interleaved: cols
  float eps;
};

template <typename T, typename TT>
struct RopeRowCtx {
  const T* x;
  const TT* c;  // table rows of token (b, s); heads are added per chunk (split)
  const TT* s;
};

template <typename T, typename TT>
__device__ __forceinline__ RopeRowCtx<T, TT> rope_row(const RopeArgs<T, TT>& a, int64_t r) {
  const int64_t b = r / a.seq, s = r - b * a.seq;
  return {a.x + r * a.x_stride, a.cos + b * a.cs.b + s * a.cs.s, a.sin + b * a.ss.b + s * a.ss.s};
}

// What the two RMSNorm + RoPE ops share: the arguments, the row context, the statistic (rstd)
// and the register caps (fp8_rows_min_ctas).
template <typename T, typename TT, int REG_CAP, int WARP_ROWS_REG_CAP>
struct NormRopeBase {
  RopeArgs<T, TT> a;
  static constexpr bool kNorm = true;
  static constexpr int kRegCap = REG_CAP;
  static constexpr int kWarpRowsRegCap = WARP_ROWS_REG_CAP;
  static constexpr bool kStageRow = false;
  using RowCtx = RopeRowCtx<T, TT>;
  __device__ __forceinline__ RowCtx row(int64_t r) const { return rope_row(a, r); }
  __device__ __forceinline__ float stat(float s) const { return rsqrtf(s / float(a.cols) + a.eps); }
};

// Interleaved pairs (2i, 2i+1) of the whole row; a 16-byte chunk holds whole pairs.
template <typename T, typename TT>
struct NormRopeOp : NormRopeBase<T, TT, 64, 64> {
  using NormRopeBase<T, TT, 64, 64>::a;
  using typename NormRopeBase<T, TT, 64, 64>::RowCtx;
  template <int V>
  using Chunk = Packed<T, V>;
  template <int V>
  __device__ __forceinline__ void load(const RowCtx& rc, int64_t off, Chunk<V>& v) const {
    v = load_stream<T, V>(rc.x + off);
  }
  template <int V>
  __device__ __forceinline__ float sumsq(const Chunk<V>& v) const { return rope_detail::sum_sq(v); }
  template <int V>
  __device__ __forceinline__ void finish(const RowCtx& rc, int64_t off, const Chunk<V>& v,
                                         float rstd, float (&y)[V]) const {
    float ya[V], co[V], si[V];
#pragma unroll
    for (int j = 0; j < V; ++j) ya[j] = to_f32(v.v[j]) * rstd;
    if (a.w != nullptr) {
      float wv[V];
      rope_detail::load_f32<T, V, true>(a.w + off, wv);
#pragma unroll
      for (int j = 0; j < V; ++j) ya[j] *= wv[j];
    }
    rope_detail::load_f32<TT, V, true>(rc.c + off, co);
    rope_detail::load_f32<TT, V, true>(rc.s + off, si);
#pragma unroll
    for (int j = 0; j < V; j += 2) {
      y[j] = ya[j] * co[j] - ya[j + 1] * si[j];
      y[j + 1] = ya[j] * si[j + 1] + ya[j + 1] * co[j + 1];
    }
  }
};

// Split pairs (j, j + d/2) per head. A chunk is V output columns inside one half-head; its
// partner chunk d/2 away (the other half of its pairs) is another thread's own chunk of the same
// row, read from the row the kernel stages in shared memory (kStageRow): x is read from DRAM
// once and each thread holds only its own chunks (a partner load from global memory through L1
// sends part of those loads to DRAM again, at low occupancy; docs/design/rope.md).
template <typename T, typename TT>
struct NormSplitRopeOp : NormRopeBase<T, TT, 64, 0> {
  using NormRopeBase<T, TT, 64, 0>::a;
  using typename NormRopeBase<T, TT, 64, 0>::RowCtx;
  static constexpr bool kStageRow = true;
  template <int V>
  using Chunk = Packed<T, V>;
  // (offsets inside a row fit in int: cols <= INT32_MAX; 32-bit division is not a call)
  __device__ __forceinline__ int partner_off(int off) const {
    const int half = a.head_dim >> 1;
    const int p = off % a.head_dim;
    return p < half ? off + half : off - half;
  }
  template <int V>
  __device__ __forceinline__ void load(const RowCtx& rc, int64_t off, Chunk<V>& c) const {
    c = load_stream<T, V>(rc.x + off);
  }
  template <int V>
  __device__ __forceinline__ float sumsq(const Chunk<V>& c) const { return rope_detail::sum_sq(c); }
  template <int V>
  __device__ __forceinline__ void finish(const RowCtx& rc, int64_t off, const Chunk<V>& own,
                                         const Chunk<V>& partner, float rstd, float (&y)[V]) const {
    const int half = a.head_dim >> 1;
    const int h = int(off) / a.head_dim;
    const int p = int(off) - h * a.head_dim;
    const bool first = p < half;
    const int64_t poff = first ? off + half : off - half;
    const int j = first ? p : p - half;
    float yo[V], yp[V], co[V], si[V];
#pragma unroll
    for (int i = 0; i < V; ++i) {
      yo[i] = to_f32(own.v[i]) * rstd;
      yp[i] = to_f32(partner.v[i]) * rstd;
    }
    if (a.w != nullptr) {
      float wo[V], wp[V];
      rope_detail::load_f32<T, V, true>(a.w + off, wo);
      rope_detail::load_f32<T, V, true>(a.w + poff, wp);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        yo[i] *= wo[i];
        yp[i] *= wp[i];
      }
    }
    rope_detail::load_f32<TT, V, true>(rc.c + int64_t(h) * a.cs.h + j, co);
    rope_detail::load_f32<TT, V, true>(rc.s + int64_t(h) * a.ss.h + j, si);
#pragma unroll
    for (int i = 0; i < V; ++i)  // first half: a c - b s; second half: b c + a s
      y[i] = first ? yo[i] * co[i] - yp[i] * si[i] : yo[i] * co[i] + yp[i] * si[i];
  }
};

// ---- the kernel ---------------------------------------------------------------------------

// V codes as V / 4 words (V bytes, V-aligned: q rows are 16-byte aligned, chunks V-aligned).
template <int V>
__device__ __forceinline__ void store_code_words(uint8_t* p, const uint32_t (&w)[V / 4]) {
  if constexpr (V == 8) {
    *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  } else {
    static_assert(V == 4, "4 or 8 codes");
    *reinterpret_cast<uint32_t*>(p) = w[0];
  }
}

// Threads per row: 32 (WARP_ROWS, 4 rows per 128-thread block) or blockDim.x (one row per
// block, a multiple of 32, <= 256). cols % V == 0, (cols / V) <= NV * tpr.
// Register caps of the 4-access shapes (0: none), asked for as 65536 / (threads * cap) resident
// CTAs: Op::kRegCap for the block-per-row shape, Op::kWarpRowsRegCap for the warp-per-row one;
// the 16-access shape is never capped. 64: uncapped, rms_norm -> fp8 takes 74 registers, too few
// warps in flight for the row's loads (docs/design/quant.md).
// Ops that would spill more than a few words under 64 (ptxas -v: bf16 *_and_mul, the gated
// residual) keep the compiler's choice, but for a block-per-row cap that keeps their CTAs per SM:
// the gated residual 80 (3 CTAs of 256 threads). Their warp-per-row kernels are uncapped (the
// gated residual's spilled 48 bytes under 80), as is the split RoPE's.
template <class Op, bool WARP_ROWS, int NV>
constexpr int fp8_rows_min_ctas() {
  constexpr int threads = WARP_ROWS ? 128 : 256;
  constexpr int cap = NV > 4 ? 0 : WARP_ROWS ? Op::kWarpRowsRegCap : Op::kRegCap;
  return cap > 0 ? 65536 / (threads * cap) : 1;
}
// One scale per token: whether the first pass's results wait in shared memory for the second
// (else the second pass computes them again), and the bytes that takes for a CTA of `threads`.
// Only under a register cap: there the kept values relieve the registers (ptxas -v: the capped
// per-token kernels spill less or nothing), while the uncapped kernels (bf16 *_and_mul, the
// gated residual's warp rows) would grow past the register count that sets their occupancy.
template <class Op, bool WARP_ROWS, int NV, bool PER_ROW>
constexpr bool fp8_rows_keeps() {
  return PER_ROW && NV <= 4 && !Op::kStageRow && (WARP_ROWS ? Op::kWarpRowsRegCap : Op::kRegCap) > 0;
}
template <class Op, int V, bool WARP_ROWS, int NV, bool PER_ROW>
constexpr size_t fp8_rows_kept_bytes(int threads) {
  return fp8_rows_keeps<Op, WARP_ROWS, NV, PER_ROW>() ? size_t(NV) * V * sizeof(float) * size_t(threads) : 0;
}
template <class Op, typename T, int V, int NV, bool WARP_ROWS, bool PER_ROW>
__global__ void __launch_bounds__(WARP_ROWS ? 128 : 256, fp8_rows_min_ctas<Op, WARP_ROWS, NV>())
    fp8_rows(const Op op, const Fp8GroupOut o, int64_t rows, int cols, int lpg, int lpg_shift) {
  __shared__ float smem[32];
  // Dynamic shared memory, sized by launch(): with Op::kStageRow the row as loaded, one per row of
  // the CTA, for ops whose result at a column also needs another thread's chunk (the split RoPE's
  // partner half); with one scale per token (fp8_rows_keeps) the first pass's results
  extern __shared__ __align__(16) unsigned char staged[];
  const int tpr = WARP_ROWS ? 32 : blockDim.x;
  const int tid = WARP_ROWS ? (threadIdx.x & 31) : threadIdx.x;
  const int rows_per_block = WARP_ROWS ? (blockDim.x >> 5) : 1;
  const int row_in_block = WARP_ROWS ? (threadIdx.x >> 5) : 0;
  const int nvec = cols / V;

  // Row loop: uniform over the block (!WARP_ROWS, block_sum's barriers) or the warp.
  for (int64_t row = int64_t(blockIdx.x) * rows_per_block + row_in_block; row < rows;
       row += int64_t(gridDim.x) * rows_per_block) {
    const typename Op::RowCtx rc = op.row(row);
    typename Op::template Chunk<V> ch[NV];  // (NV) this thread's share of the row
    T* srow = reinterpret_cast<T*>(staged) + (WARP_ROWS ? int64_t(row_in_block) * cols : 0);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = tid + k * tpr;
      if (i < nvec) {
        op.template load<V>(rc, int64_t(i) * V, ch[k]);
        if constexpr (Op::kStageRow) *reinterpret_cast<Packed<T, V>*>(srow + i * V) = ch[k];
        if constexpr (Op::kNorm) s += op.template sumsq<V>(ch[k]);
      }
    }
    float st = 0.f;
    if constexpr (Op::kNorm) st = op.stat(WARP_ROWS ? warp_sum(s) : block_sum(s, smem));
    // the staged row is complete: block_sum ends with barriers; the warp's row needs its own
    if constexpr (Op::kStageRow && WARP_ROWS) __syncwarp();
    uint8_t* qrow = o.q + row * o.q_stride;
    // the op's fp32 result for chunk k (column i * V) and its absolute maximum
    auto finish = [&](int k, int i, float (&y)[V]) {
      if constexpr (Op::kStageRow)
        op.template finish<V>(rc, int64_t(i) * V, ch[k],
                              *reinterpret_cast<const Packed<T, V>*>(srow + op.partner_off(i * V)), st, y);
      else
        op.template finish<V>(rc, int64_t(i) * V, ch[k], st, y);
      float m = 0.f;
#pragma unroll
      for (int j = 0; j < V; ++j) m = fp8_absmax(m, y[j]);
      return m;
    };
    // the first pass's results, kept for the second: word (k * V + j) * blockDim.x + threadIdx.x
    constexpr bool KEEP = fp8_rows_keeps<Op, WARP_ROWS, NV, PER_ROW>();
    float* kept = reinterpret_cast<float*>(staged);
    // one scale per token: the row's amax first (block_sum above ended with a barrier, so smem is
    // free for block_max, which ends with one too)
    float row_amax = 0.f;
    if constexpr (PER_ROW) {
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        const int i = tid + k * tpr;
        if (i < nvec) {
          float y[V];
          row_amax = fmaxf(row_amax, finish(k, i, y));
          if constexpr (KEEP) {
#pragma unroll
            for (int j = 0; j < V; ++j) kept[(k * V + j) * int(blockDim.x) + int(threadIdx.x)] = y[j];
          }
        }
      }
      row_amax = WARP_ROWS ? warp_max(row_amax) : block_max(row_amax, smem);
      if (tid == 0) o.scales[row * o.s_row] = fp8_scale_from_amax<E4M3>(row_amax);
    }
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = tid + k * tpr;
      const bool ok = i < nvec;  // a group is wholly in or out (nvec % lpg == 0, tpr % lpg == 0)
      float y[V];
      float m = 0.f;
      if constexpr (KEEP) {
#pragma unroll
        for (int j = 0; j < V; ++j) y[j] = kept[(k * V + j) * int(blockDim.x) + int(threadIdx.x)];
      } else {
        if (ok) m = finish(k, i, y);
      }
      if constexpr (PER_ROW) {
        m = row_amax;
      } else {
        m = warp_max(m, lpg);  // every lane of the warp takes part
      }
      const float sc = fp8_scale_from_amax<E4M3>(m);
      const Fp8Divisor dv = fp8_divisor(sc);
      if (ok) {
        uint32_t c[V / 4];
        fp8_quantize_bounded_words<E4M3, V>(y, dv, c);  // the group's own scale: bounded quotients
        store_code_words<V>(qrow + int64_t(i) * V, c);
        if (!PER_ROW && (i & (lpg - 1)) == 0) o.scales[row * o.s_row + int64_t(i >> lpg_shift) * o.s_col] = sc;
      }
    }
    if constexpr (Op::kStageRow) {  // every read of the staged row before the next row's writes
      if constexpr (WARP_ROWS) __syncwarp();
      else __syncthreads();
    }
  }
}

// Launcher preconditions shared by fused_fp8.cu and fused_fp8_rope.cu: the FP8 output and the
// row width (fused_fp8.h's CUDA-path limits), and 16-byte aligned rows of whole vectors.
template <typename T>
cudaError_t precheck(const Fp8GroupOut& o, int64_t cols) {
  constexpr int V = kVec16<T>;
  if (o.group <= 0 || cols % o.group != 0) return cudaErrorInvalidValue;
  if (fused_fp8_cuda_unsupported(int(sizeof(T)), cols, o.group) != nullptr)
    return cudaErrorInvalidValue;
  if (cols > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  if (!aligned_to(o.q, 16) || o.q_stride % V != 0 || cols % V != 0)
    return cudaErrorMisalignedAddress;
  return cudaSuccess;
}

template <typename T>
bool rows_ok(const T* p, int64_t stride) {
  return p == nullptr || (aligned_to(p, 16) && stride % kVec16<T> == 0);
}

// The RoPE ops' inputs as NormRopeOp / NormSplitRopeOp read them (fused_fp8_rope.cu and
// attention_keys_fp8): x and the weight in whole 16-byte vectors, cos / sin with 16-byte aligned
// rows; and their arguments.
template <typename T, typename TT>
cudaError_t rope_inputs_ok(const T* x, int64_t x_stride, const T* w, const TT* cos, const RopeTableStrides& cs,
                           const TT* sin, const RopeTableStrides& ss) {
  if (!rows_ok(x, x_stride) || !rows_ok(w, 0)) return cudaErrorMisalignedAddress;
  if (!fp8_vector_tables(cos, cs, sizeof(TT)) || !fp8_vector_tables(sin, ss, sizeof(TT)))
    return cudaErrorMisalignedAddress;
  return cudaSuccess;
}

template <typename T, typename TT>
RopeArgs<T, TT> rope_args(const T* x, int64_t xs, const T* w, const TT* cos, RopeTableStrides cs,
                          const TT* sin, RopeTableStrides ss, const RopeShape& sh, float eps) {
  return RopeArgs<T, TT>{x, xs, w, cos, cs, sin, ss, sh.seq, int(sh.cols), int(sh.head_dim), eps};
}

// Launch shape by row width: fp8_rows_shape (common/rowwise_launch.h).
template <class Op, typename T>
cudaError_t launch(const Op& op, const Fp8GroupOut& o, int64_t rows, int64_t cols,
                   cudaStream_t stream) {
  constexpr int V = kVec16<T>;
  const int nvec = int(cols / V);
  // lanes per group, a power of two (fused_fp8_cuda_unsupported), unless one scale per token
  const bool per_row = fused_fp8_cuda_per_row(int(sizeof(T)), cols, o.group);
  const int lpg = per_row ? 0 : int(o.group / V);
  int lpg_shift = 0;                   // chunk -> group index by a shift
  while ((1 << lpg_shift) < lpg) ++lpg_shift;
  // Op::kStageRow: the staged rows in dynamic shared memory (the warp shape's 4 rows of <= 128
  // 16-byte vectors: <= 8 KB; a block's row of <= 4096 vectors: <= 64 KB)
  const RowRegShape sh = fp8_rows_shape(nvec);
  const unsigned grid = unsigned(std::min<int64_t>(sh.kind == RowRegShape::kWarp ? (rows + 3) / 4 : rows, kRowwiseMaxGrid));
  // One instantiation per kernel (the argument types differ), so its static limit is per kernel.
  auto run = [&](auto warp, auto nv, auto row) -> cudaError_t {
    auto kernel = fp8_rows<Op, T, V, decltype(nv)::value, decltype(warp)::value, decltype(row)::value>;
    size_t smem = fp8_rows_kept_bytes<Op, V, decltype(warp)::value, decltype(nv)::value, decltype(row)::value>(sh.threads);
    if constexpr (Op::kStageRow) {
      constexpr int per_cta = decltype(warp)::value ? 4 : 1;  // rows staged per CTA
      smem = size_t(per_cta) * size_t(cols) * sizeof(T);
      static PerDeviceMax smem_limit;  // above 48 KB, once per device and size: common/per_device.h
      if (smem > 48 * 1024) {
        const cudaError_t e = raise_dynamic_smem(smem_limit, kernel, int(smem));
        if (e != cudaSuccess) return e;
      }
    }
    kernel<<<grid, unsigned(sh.threads), smem, stream>>>(op, o, rows, int(cols), lpg, lpg_shift);
    return cudaGetLastError();
  };
  using W = std::true_type;
  using B = std::false_type;
  using I4 = std::integral_constant<int, 4>;
  using I16 = std::integral_constant<int, 16>;
  auto shape = [&](auto row) -> cudaError_t {
    if (sh.kind == RowRegShape::kWarp) return run(W{}, I4{}, row);
    if (sh.kind == RowRegShape::kBlock && sh.nv == 4) return run(B{}, I4{}, row);
    if (sh.kind == RowRegShape::kBlock && sh.nv == 16) return run(B{}, I16{}, row);
    return cudaErrorInvalidValue;
  };
  if constexpr (sizeof(T) == 2) {  // one scale per token: 16-bit inputs (fused_fp8_cuda_unsupported)
    if (per_row) return shape(std::true_type{});
  } else {
    if (per_row) return cudaErrorInvalidValue;
  }
  return shape(std::false_type{});
}

}  // namespace fused_fp8_detail
}  // namespace ltx_kernels
