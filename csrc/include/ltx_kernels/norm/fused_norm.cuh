// Row-norm kernels: ONE register-resident row kernel (and one looping kernel for rows too wide
// for registers), parameterised by a compile-time Policy, for every row norm: rms_norm (kLoad,
// RMS), add_rms_norm (kAdd), layer_norm, the AdaLN norms (modulate) and the gated residual
// (kGatedAdd). Launch shapes: norm_shape in common/rowwise_launch.h; launcher:
// csrc/cuda/norm/norm_launch.cuh.
//
//   prologue  kLoad:      v = x
//             kAdd:       v = round_T(x + x2)          -> written to res_out
//             kGatedAdd:  v = round_T(x + x2 * gate)   -> written to res_out
//   statistic RMS:        rstd = rsqrt(mean(v^2) + eps), mean = 0
//             LayerNorm:  mean = sum(v) / C, then var = sum((v - mean)^2) / C over the
//                         registers (two-pass, never E[v^2] - E[v]^2), rstd = rsqrt(var + eps)
//   epilogue  o = (v - mean) * rstd [* w] [+ b] [* (1 + scale) + shift]
//
// Bytes per row (register path): read x (+ x2, + per-token gate/scale/shift) once, write out
// (+ res_out) once. Weight, bias and per-sample tables are re-read per row through the
// read-only cache (load_cached): they stay in L1/L2 and cost DRAM traffic once. Per-token
// tables are read as a stream (load_stream). The looping kernel re-reads its row from L2.
//
// No __restrict__: an output may be exactly one of the row inputs (in place). Every element
// of a row is read by the same thread that later writes it, so in-place is race free.
#pragma once

#include "ltx_kernels/common/fused_norm_util.h"
#include "ltx_kernels/common/reduce.cuh"
#include "ltx_kernels/common/rowwise_launch.h"
#include "ltx_kernels/common/vec.cuh"

namespace ltx_kernels {
namespace fused_norm_detail {

enum class Prologue { kLoad, kAdd, kGatedAdd };

template <Prologue P, bool LAYER_NORM, bool MODULATE>
struct Policy {
  static constexpr Prologue kPrologue = P;
  static constexpr bool kLayerNorm = LAYER_NORM;  // subtract the mean (else RMS)
  static constexpr bool kModulate = MODULATE;     // * (1 + scale) + shift
  static constexpr bool kWritesResidual = P != Prologue::kLoad;
  static constexpr bool kGated = P == Prologue::kGatedAdd;
};

template <typename T>
struct Args {
  T* out;                // [rows, cols]
  int64_t out_stride;
  T* res_out;            // [rows, cols] rounded prologue value, or nullptr (kLoad)
  int64_t res_out_stride;
  const T* x;            // [rows, cols] (h of the gated residual)
  int64_t x_stride;
  const T* x2;           // [rows, cols] residual (kAdd) or y (kGatedAdd), else nullptr
  int64_t x2_stride;
  const T* weight;       // [cols] or nullptr
  const T* bias;         // [cols] or nullptr
  ModTable<T> gate;      // kGatedAdd only
  ModTable<T> scale;     // kModulate only
  ModTable<T> shift;     // kModulate only
  int64_t rows;
  int cols;
  float inv_cols;        // 1 / cols, computed on the host
  float eps;
};

// One row's view of a table: the entry's start and whether it is shared by many rows.
template <typename T>
struct TableRow {
  const T* p;
  bool cached;
};

// Entry index row / rows_per_entry; `memo` holds the last 64-bit division, so tables that
// share rows_per_entry (scale, shift, gate of one sample) divide once per row.
struct EntryMemo {
  int64_t rpe = 1, q = 0;
};

template <typename T>
__device__ __forceinline__ TableRow<T> table_row(const ModTable<T>& t, int64_t row,
                                                 EntryMemo& memo) {
  int64_t e = row;
  if (t.rows_per_entry != 1) {
    if (t.rows_per_entry != memo.rpe) {
      memo.rpe = t.rows_per_entry;
      // 32-bit division when both fit (inline, no 64-bit division routine per row)
      memo.q = (uint64_t(row) | uint64_t(t.rows_per_entry)) >> 32 == 0
                   ? int64_t(uint32_t(row) / uint32_t(t.rows_per_entry))
                   : row / t.rows_per_entry;
    }
    e = memo.q;
  }
  return {t.data + e * t.stride, t.rows_per_entry > 1};
}

template <typename T, int VEC>
__device__ __forceinline__ Packed<T, VEC> load_table(const TableRow<T>& t, int64_t off) {
  return t.cached ? load_cached<T, VEC>(t.p + off) : load_stream<T, VEC>(t.p + off);
}

// Plain load, for data this kernel wrote itself (the read-only path must not see it).
template <typename T, int VEC>
__device__ __forceinline__ Packed<T, VEC> load_plain(const T* p) {
  return *reinterpret_cast<const Packed<T, VEC>*>(p);
}

// Per-row pointers of every row-indexed operand.
template <typename T>
struct RowPtrs {
  const T* x;
  const T* x2;
  T* res;
  T* out;
  TableRow<T> gate, scale, shift;
};

template <class P, typename T>
__device__ __forceinline__ RowPtrs<T> row_ptrs(const Args<T>& a, int64_t row) {
  RowPtrs<T> r;
  r.x = a.x + row * a.x_stride;
  r.out = a.out + row * a.out_stride;
  r.x2 = P::kWritesResidual ? a.x2 + row * a.x2_stride : nullptr;
  r.res = P::kWritesResidual ? a.res_out + row * a.res_out_stride : nullptr;
  EntryMemo memo;
  if constexpr (P::kGated) r.gate = table_row(a.gate, row, memo);
  if constexpr (P::kModulate) {
    r.scale = table_row(a.scale, row, memo);
    r.shift = table_row(a.shift, row, memo);
  }
  return r;
}

// The prologue of access `off` (element offset in the row): loads, combines, rounds to T and
// writes res_out where the policy has one. STREAM_X: x is read once (else kept cached).
template <class P, typename T, int VEC, bool STREAM_X, bool STREAM_STORE>
__device__ __forceinline__ Packed<T, VEC> prologue(const RowPtrs<T>& r, int64_t off) {
  const Packed<T, VEC> xv =
      STREAM_X ? load_stream<T, VEC>(r.x + off) : load_cached<T, VEC>(r.x + off);
  if constexpr (P::kPrologue == Prologue::kLoad) {
    return xv;
  } else {
    const Packed<T, VEC> x2v = load_stream<T, VEC>(r.x2 + off);
    Packed<T, VEC> gv;
    if constexpr (P::kGated) gv = load_table<T, VEC>(r.gate, off);
    Packed<T, VEC> v;
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      float f;
      if constexpr (P::kGated)  // fp32 product then fp32 sum (no FMA): matches the CPU and oracle
        f = __fadd_rn(to_f32(xv.v[j]), __fmul_rn(to_f32(x2v.v[j]), to_f32(gv.v[j])));
      else
        f = to_f32(xv.v[j]) + to_f32(x2v.v[j]);
      v.v[j] = from_f32<T>(f);
    }
    if constexpr (STREAM_STORE) store_stream<T, VEC>(r.res + off, v);
    else *reinterpret_cast<Packed<T, VEC>*>(r.res + off) = v;
    return v;
  }
}

// The epilogue's per-element operands of one access (weight, bias, scale, shift).
template <typename T, int VEC>
struct EpiOperands {
  Packed<T, VEC> w, b, sc, sh;
};

template <class P, typename T, int VEC>
__device__ __forceinline__ EpiOperands<T, VEC> load_epilogue(const Args<T>& a, const RowPtrs<T>& r,
                                                             int64_t off) {
  EpiOperands<T, VEC> e;
  if (a.weight != nullptr) e.w = load_cached<T, VEC>(a.weight + off);
  if constexpr (P::kLayerNorm) {  // only the layer norms take a bias
    if (a.bias != nullptr) e.b = load_cached<T, VEC>(a.bias + off);
  }
  if constexpr (P::kModulate) {
    e.sc = load_table<T, VEC>(r.scale, off);
    e.sh = load_table<T, VEC>(r.shift, off);
  }
  return e;
}

// Normalise, affine, modulate and store one access, its operands already loaded.
template <class P, typename T, int VEC>
__device__ __forceinline__ void epilogue_with(const Args<T>& a, const RowPtrs<T>& r, int64_t off,
                                              const Packed<T, VEC>& v, float mean, float rstd,
                                              const EpiOperands<T, VEC>& e) {
  Packed<T, VEC> o;
#pragma unroll
  for (int j = 0; j < VEC; ++j) {
    float f = to_f32(v.v[j]);
    if constexpr (P::kLayerNorm) f -= mean;
    f *= rstd;
    if (a.weight != nullptr) f *= to_f32(e.w.v[j]);
    if constexpr (P::kLayerNorm) {
      if (a.bias != nullptr) f += to_f32(e.b.v[j]);
    }
    if constexpr (P::kModulate) f = f * (1.f + to_f32(e.sc.v[j])) + to_f32(e.sh.v[j]);
    o.v[j] = from_f32<T>(f);
  }
  store_stream<T, VEC>(r.out + off, o);
}

// Accesses whose epilogue operands the row kernel loads at once when they are not preloaded:
// 4 for the weight alone (plain RMS: one load per store leaves a dependent L2 round trip per
// store, see below); one for the layer norms and the modulated norms, whose 4- and 8-access
// shapes need the registers (batches of 2 slow layer_norm and adaln_layer_norm down at
// [2, 6144, 4096]; benchmarks/sweep_norm.py times the shapes, docs/design/norm.md).
template <class P>
constexpr int kEpiBatch = P::kModulate || P::kLayerNorm ? 1 : 4;

// The row in registers. Threads per row: 32 (WARP_ROWS, 4 rows per 128-thread block) or
// blockDim.x (one row per block, <= 512 threads at NV <= 2, else <= 256). Thread `tid` owns
// accesses tid + k * tpr, k < NV, of VEC elements each; every read of the row happens before the
// reduction, every write after (res_out: same thread, same element as its inputs). PRELOAD: the
// epilogue's operands (weight, bias, scale, shift) are issued with the row, so no dependent load
// sits between the reduction and the stores (latency-bound small problems; costs registers).
// The launch shapes (which NV, WARP_ROWS, PRELOAD run) are norm_shape's (common/rowwise_launch.h).
// Threads per CTA at most: the warp shape's 4 rows of 32, the block shape's limits from
// rowwise_launch.h (which norm_shape_runs checks before a launch).
template <bool WARP_ROWS, int NV>
constexpr int kNormMaxThreadsOf = WARP_ROWS ? 128 : (NV <= 2 ? kNormMaxThreads : kNormMaxThreadsWide);

template <class P, typename T, int VEC, int NV, bool WARP_ROWS, bool PRELOAD = false>
__global__ void __launch_bounds__(kNormMaxThreadsOf<WARP_ROWS, NV>)
    fused_norm_regs(const Args<T> a) {
  __shared__ float smem[32];
  const int tpr = WARP_ROWS ? 32 : blockDim.x;
  const int tid = WARP_ROWS ? (threadIdx.x & 31) : threadIdx.x;
  const int rows_per_block = WARP_ROWS ? (blockDim.x >> 5) : 1;
  const int row_in_block = WARP_ROWS ? (threadIdx.x >> 5) : 0;
  const int nvec = a.cols / VEC;  // cols % VEC == 0 on this path
  const float inv_cols = a.inv_cols;
  auto reduce = [&](float s) { return WARP_ROWS ? warp_sum(s) : block_sum(s, smem); };

  // Row loop: uniform over the block for !WARP_ROWS (block_sum's barriers), over the warp
  // for WARP_ROWS (warp_sum's shuffles).
  for (int64_t row = int64_t(blockIdx.x) * rows_per_block + row_in_block; row < a.rows;
       row += int64_t(gridDim.x) * rows_per_block) {
    const RowPtrs<T> r = row_ptrs<P>(a, row);
    Packed<T, VEC> v[NV];  // (NV, VEC) this thread's share of the row
    EpiOperands<T, VEC> e[PRELOAD ? NV : 1];
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      const int i = tid + k * tpr;
      if (i < nvec) {
        v[k] = prologue<P, T, VEC, true, true>(r, int64_t(i) * VEC);
        if constexpr (PRELOAD) e[k] = load_epilogue<P, T, VEC>(a, r, int64_t(i) * VEC);
      }
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
      if (tid + k * tpr < nvec) {
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float f = to_f32(v[k].v[j]);
          s += P::kLayerNorm ? f : f * f;
        }
        repack_barrier(v[k]);
      }
    }
    s = reduce(s);
    float mean = 0.f, var = s * inv_cols;
    if constexpr (P::kLayerNorm) {
      mean = s * inv_cols;
      float d = 0.f;
#pragma unroll
      for (int k = 0; k < NV; ++k) {
        if (tid + k * tpr < nvec) {
#pragma unroll
          for (int j = 0; j < VEC; ++j) {
            const float t = to_f32(v[k].v[j]) - mean;
            d += t * t;
          }
          repack_barrier(v[k]);
        }
      }
      var = reduce(d) * inv_cols;
    }
    const float rstd = rsqrtf(var + a.eps);
    // Without PRELOAD the epilogue's operands are loaded here, a batch of accesses at a time, all
    // of a batch before its first store: the outputs may alias the inputs (no __restrict__), so
    // the compiler cannot move a load above an earlier store, and one load per store would make
    // NV dependent L2 round trips per row (a large slowdown at rms_norm [16384, 8192]).
    constexpr int kBatch = PRELOAD ? NV : (NV < kEpiBatch<P> ? NV : kEpiBatch<P>);
#pragma unroll
    for (int k0 = 0; k0 < NV; k0 += kBatch) {
      EpiOperands<T, VEC> eb[PRELOAD ? 1 : kBatch];
      if constexpr (!PRELOAD) {
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const int i = tid + (k0 + j) * tpr;
          if (i < nvec) eb[j] = load_epilogue<P, T, VEC>(a, r, int64_t(i) * VEC);
        }
      }
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        const int i = tid + (k0 + j) * tpr;
        if (i < nvec) {
          if constexpr (PRELOAD) epilogue_with<P, T, VEC>(a, r, int64_t(i) * VEC, v[k0 + j], mean, rstd, e[k0 + j]);
          else epilogue_with<P, T, VEC>(a, r, int64_t(i) * VEC, v[k0 + j], mean, rstd, eb[j]);
        }
      }
    }
  }
}

// Rows too wide for registers: one block per row (grid-stride, uniform per block). Pass 1
// runs the prologue (writing res_out with a plain store so it stays in L2) and sums; layer
// norm adds a deviation pass; the last pass re-reads the row (res_out with plain loads: this
// kernel wrote it; x through the cache, streaming on the final read).
template <class P, typename T, int VEC>
__global__ void __launch_bounds__(512) fused_norm_loop(const Args<T> a) {
  __shared__ float smem[32];
  const int nvec = a.cols / VEC;
  const float inv_cols = a.inv_cols;
  auto reload = [&](const RowPtrs<T>& r, int64_t off, bool last) {
    if constexpr (P::kWritesResidual) return load_plain<T, VEC>(r.res + off);
    else return last ? load_stream<T, VEC>(r.x + off) : load_cached<T, VEC>(r.x + off);
  };
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const RowPtrs<T> r = row_ptrs<P>(a, row);
    float s = 0.f;
    for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
      const Packed<T, VEC> v =
          prologue<P, T, VEC, P::kWritesResidual, false>(r, int64_t(i) * VEC);
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float f = to_f32(v.v[j]);
        s += P::kLayerNorm ? f : f * f;
      }
    }
    s = block_sum(s, smem);
    float mean = 0.f, var = s * inv_cols;
    if constexpr (P::kLayerNorm) {
      mean = s * inv_cols;
      float d = 0.f;
      for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
        const Packed<T, VEC> v = reload(r, int64_t(i) * VEC, false);
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float t = to_f32(v.v[j]) - mean;
          d += t * t;
        }
      }
      var = block_sum(d, smem) * inv_cols;
    }
    const float rstd = rsqrtf(var + a.eps);
    for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
      const Packed<T, VEC> v = reload(r, int64_t(i) * VEC, true);
      epilogue_with<P, T, VEC>(a, r, int64_t(i) * VEC, v, mean, rstd,
                               load_epilogue<P, T, VEC>(a, r, int64_t(i) * VEC));
    }
  }
}

}  // namespace fused_norm_detail
}  // namespace ltx_kernels
