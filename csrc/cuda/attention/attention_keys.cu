// The k operand of FP8 attention from the pass that produces k (attention_keys_fp8), CUDA
// kernels. Generic CUDA, every architecture of the core library. Semantics:
// attention/attention_quant.h; y is the RMSNorm + RoPE arithmetic of the FP8-output RoPE ops
// (quant/fused_fp8.cuh: NormRopeOp, NormSplitRopeOp), so these codes and those of rms_norm_rope's
// FP8 output come from the same fp32 y.
//
// A factor spans 128 keys and one head, so every value of a block is needed before its first
// code, and the row's RMSNorm needs the whole row (all heads) before any value of a head:
//   launch 1  rstd: a warp per row, the row's sum of squares (cached loads: launch 3 reads the
//             row again, from L2 where it still is), rstd into the workspace; rows of the mean's
//             leading keys also write y (fp32) into the workspace; with q (attention_qk_fp8)
//             q's rows as well (rstd only);
//   launch 2  mean (smooth_keys > 0): a thread per (batch row, channel) adds y over the leading
//             keys in fp64 in key order, one division, one rounding;
//   launch 3  codes: a CTA per (batch row, 128-key block, head) of 4 D threads, each thread one
//             16-byte column chunk of the head in 32 / V rows (32 values in registers, the chunk's
//             weight and mean loaded once); y - mean, the block's amax by a block reduction, then
//             the codes (8 or 4 bytes per chunk) and the factor. With q, the same CTA then takes
//             q's chunks of the same rows and head (loaded with k's): y_q over the table values
//             k's y has just brought into L1, each (token, head)'s amax through shared memory
//             (a row's D / V threads need not share a warp), the codes and one factor per row.
// Bytes: x read twice (launch 3's read from L2 where x fits: 22 MB at B 2, S 2688, C 2048 bf16),
// the cos / sin tables once, one code byte per element and 4 bytes per (block, head) written,
// 4 bytes per row and the mean's rows (fp32) through the workspace. Against the bf16 RoPE output
// that quantize_attention_fp8 would read twice, the k operand costs no pass of its own. With q,
// q's x is read twice as well and the tables still once: against a pass of its own for q (x and
// the tables once), the fused pass saves one read of the tables (2 x 44 MB fp32 at B 2, S 2688,
// C 2048) for one more read of q's x (22 MB), and one launch.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "ltx_kernels/attention/attention_quant.h"
#include "ltx_kernels/common/fp8_util.h"
#include "ltx_kernels/common/reduce.cuh"
#include "ltx_kernels/cuda/ops.h"
#include "ltx_kernels/quant/fused_fp8.cuh"

namespace ltx_kernels {
namespace {

using fused_fp8_detail::NormRopeOp;
using fused_fp8_detail::NormSplitRopeOp;
using fused_fp8_detail::rope_args;
using fused_fp8_detail::rope_inputs_ok;
using fused_fp8_detail::RopeArgs;
using fused_fp8_detail::store_code_words;

constexpr int kRowThreads = 256;  // launch 1: 8 rows per CTA
constexpr int kMeanThreads = 256;
constexpr int kValuesPerThread = 32;  // launch 3: values per thread (4 D threads cover 128 x D)

struct Work {
  float* rstd;  // [B * S]
  float* rstd_q;  // [B * S] (with q)
  float* y;     // [B, n, C]: y of the mean's rows
  float* mean;  // [B, C]
};

Work work_of(const AttnKeysParams& p) {  // attention_keys_workspace's layout
  const AttnKeysWorkspace l = attention_keys_workspace(p);
  char* ws = static_cast<char*>(p.workspace);
  auto at = [&](int64_t off) { return off < 0 ? nullptr : reinterpret_cast<float*>(ws + off); };
  return Work{at(l.rstd), at(l.rstd_q), at(l.y), at(l.mean)};
}

// y of the V columns at `off` of row context rc (the partner chunk of the split rotation loaded
// again: it is another thread's chunk of the same row, in L1 or L2).
template <class Op, typename T, int V>
__device__ __forceinline__ void y_chunk(const Op& op, const typename Op::RowCtx& rc, int off,
                                        const Packed<T, V>& ch, float rstd, float (&y)[V]) {
  if constexpr (Op::kStageRow) {
    const Packed<T, V> partner = load_cached<T, V>(rc.x + op.partner_off(off));
    op.template finish<V>(rc, off, ch, partner, rstd, y);
  } else {
    op.template finish<V>(rc, off, ch, rstd, y);
  }
}

// The rstd of row r of op's x, by the warp.
template <class Op, typename T, int V>
__device__ __forceinline__ float row_rstd(const Op& op, int64_t r, int lane, int nvec) {
  const typename Op::RowCtx rc = op.row(r);
  float s = 0.f;
#pragma unroll 4
  for (int i = lane; i < nvec; i += 32) s += op.template sumsq<V>(load_cached<T, V>(rc.x + int64_t(i) * V));
  return op.stat(warp_sum(s));
}

// rows of k, then (w.rstd_q) as many of q
template <class Op, typename T, int V>
__global__ void __launch_bounds__(kRowThreads) keys_rstd(const Op op, const Op opq, Work w, int64_t rows, int64_t seq,
                                                         int cols, int64_t mean_keys) {
  const int lane = threadIdx.x & 31;
  const int nvec = cols / V;
  const int64_t all = w.rstd_q != nullptr ? 2 * rows : rows;
  for (int64_t r = int64_t(blockIdx.x) * (kRowThreads / 32) + (threadIdx.x >> 5); r < all;
       r += int64_t(gridDim.x) * (kRowThreads / 32)) {
    if (r >= rows) {
      const float rstd = row_rstd<Op, T, V>(opq, r - rows, lane, nvec);
      if (lane == 0) w.rstd_q[r - rows] = rstd;
      continue;
    }
    const typename Op::RowCtx rc = op.row(r);
    const float rstd = row_rstd<Op, T, V>(op, r, lane, nvec);
    if (lane == 0) w.rstd[r] = rstd;
    const int64_t b = r / seq, j = r - b * seq;
    if (j >= mean_keys) continue;
    float* yr = w.y + (b * mean_keys + j) * cols;
    for (int i = lane; i < nvec; i += 32) {
      float y[V];
      y_chunk<Op, T, V>(op, rc, i * V, load_cached<T, V>(rc.x + int64_t(i) * V), rstd, y);
#pragma unroll
      for (int e = 0; e < V; ++e) yr[i * V + e] = y[e];
    }
  }
}

// A thread per (batch row, channel): the fp64 sum in key order, 8 loads in flight.
__global__ void __launch_bounds__(kMeanThreads) keys_mean(Work w, int64_t batch, int cols, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * kMeanThreads + threadIdx.x;
  if (i >= batch * cols) return;
  const int64_t b = i / cols, c = i - b * cols;
  const float* y = w.y + b * n * cols + c;
  double s = 0.0;
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    float v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = y[(j + u) * cols];
#pragma unroll
    for (int u = 0; u < 8; ++u) s += double(v[u]);
  }
  for (; j < n; ++j) s += double(y[j * cols]);
  w.mean[i] = __double2float_rn(s / double(n));
}

// The chunks of op's rows j0 + k R (k < K, j < seq) of batch row b at column off: loads (with
// BOTH, op2's chunks of the same rows into ch2, interleaved), and y.
template <typename T, int V, int K, bool BOTH, class Op>
__device__ __forceinline__ void load_rows(const Op& op, const Op& op2, int64_t b, int64_t j0, int R, int64_t seq,
                                          int off, Packed<T, V> (&ch)[K], Packed<T, V> (&ch2)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = j0 + int64_t(k) * R;
    if (j < seq) ch[k] = load_stream<T, V>(op.row(b * seq + j).x + off);
    if (BOTH && j < seq) ch2[k] = load_stream<T, V>(op2.row(b * seq + j).x + off);
  }
}

// then each chunk's y, and then(k) on it
template <typename T, int V, int K, class Op, class Then>
__device__ __forceinline__ void y_rows(const Op& op, const float* rstd, int64_t b, int64_t j0, int R, int64_t seq,
                                       int off, const Packed<T, V> (&ch)[K], float (&y)[K][V], Then&& then) {
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = j0 + int64_t(k) * R;
    if (j >= seq) continue;
    const int64_t r = b * seq + j;
    y_chunk<Op, T, V>(op, op.row(r), off, ch[k], rstd[r], y[k]);
    then(k);
  }
}

// MAX_THREADS: 512 (head dims up to 128, no register cap below 128) or 1024 (up to 256).
// WITH_Q: q's codes of the CTA's rows and head too, into q8 / q_descale. q's chunks are loaded
// with k's (PREFETCH_Q, up to 512 threads: <= 128 registers without spills) or after k's codes
// (1024 threads, 64 registers: head dim 256).
template <class Op, typename T, int V, int MAX_THREADS, bool WITH_Q>
__global__ void __launch_bounds__(MAX_THREADS) keys_blocks(const Op op, const Op opq, Work w, uint8_t* k8,
                                                           float* k_descale, uint8_t* q8, float* q_descale, int64_t seq,
                                                           int cols, int heads, int64_t nblocks) {
  constexpr int K = kValuesPerThread / V;  // chunks per thread
  constexpr bool PREFETCH_Q = WITH_Q && MAX_THREADS <= 512;
  __shared__ float red[32];
  __shared__ unsigned qmax[WITH_Q ? kAttnKeysBlock : 1];  // a row's amax (a float >= +0: ordered as unsigned)
  if constexpr (WITH_Q) {  // 4 D threads: fewer than 128 below head dim 32; block_max's barriers order it
    for (int i = threadIdx.x; i < kAttnKeysBlock; i += blockDim.x) qmax[i] = 0u;
  }
  const int D = cols / heads, nc = D / V;
  const int64_t cta = blockIdx.x;
  const int h = int(cta % heads);
  const int64_t blk = (cta / heads) % nblocks, b = cta / (int64_t(heads) * nblocks);
  const int cc = threadIdx.x % nc, R = blockDim.x / nc;
  const int off = h * D + cc * V;
  const int64_t j0 = blk * kAttnKeysBlock + threadIdx.x / nc;
  float mu[V];
#pragma unroll
  for (int e = 0; e < V; ++e) mu[e] = 0.f;
  if (w.mean != nullptr) {
    const float* m = w.mean + b * cols + off;
#pragma unroll
    for (int e = 0; e < V; ++e) mu[e] = m[e];
  }
  Packed<T, V> ch[K], qch[K];
  load_rows<T, V, K, PREFETCH_Q>(op, opq, b, j0, R, seq, off, ch, qch);  // every load first
  float kc[K][V];
  float m = 0.f;
  y_rows<T, V, K>(op, w.rstd, b, j0, R, seq, off, ch, kc, [&](int k) {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      kc[k][e] = kc[k][e] - mu[e];
      m = fp8_absmax(m, kc[k][e]);
    }
  });
  m = block_max(m, red);
  const float s = fp8_scale_from_amax<E4M3>(m);
  const Fp8Divisor dv = fp8_divisor(s);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = j0 + int64_t(k) * R;
    if (j >= seq) continue;
    uint32_t c[V / 4];
    fp8_quantize_bounded_words<E4M3, V>(kc[k], dv, c);  // the block's own scale: bounded quotients
    store_code_words<V>(k8 + (b * seq + j) * cols + off, c);
  }
  if (threadIdx.x == 0) k_descale[cta] = s;  // [B, nblocks, H]: the CTA order
  if constexpr (!WITH_Q) return;
  if constexpr (!PREFETCH_Q) load_rows<T, V, K, false>(opq, opq, b, j0, R, seq, off, qch, qch);
  float yq[K][V];
  y_rows<T, V, K>(opq, w.rstd_q, b, j0, R, seq, off, qch, yq, [&](int k) {
    float mq = 0.f;
#pragma unroll
    for (int e = 0; e < V; ++e) mq = fp8_absmax(mq, yq[k][e]);
    atomicMax(&qmax[threadIdx.x / nc + k * R], __float_as_uint(mq));
  });
  __syncthreads();
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = j0 + int64_t(k) * R;
    if (j >= seq) continue;
    const float sq = fp8_scale_from_amax<E4M3>(__uint_as_float(qmax[threadIdx.x / nc + k * R]));
    uint32_t c[V / 4];
    fp8_quantize_bounded_words<E4M3, V>(yq[k], fp8_divisor(sq), c);  // the group's own scale
    store_code_words<V>(q8 + (b * seq + j) * cols + off, c);
    if (cc == 0) q_descale[(b * seq + j) * heads + h] = sq;
  }
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <class Op, typename T>
cudaError_t launch(const Op& op, const Op& opq, const AttnKeysParams& p, cudaStream_t st) {
  constexpr int V = kVec16<T>;
  const RopeShape& sh = p.op.shape;
  const int64_t rows = sh.batch * sh.seq, n = attention_keys_mean_keys(p);
  const int cols = int(sh.cols), D = int(sh.cols / p.heads);
  const int64_t nb = cdiv(sh.seq, kAttnKeysBlock), ctas = sh.batch * nb * p.heads;
  if (ctas > INT32_MAX) return cudaErrorInvalidValue;
  const Work w = work_of(p);
  const int64_t all_rows = w.rstd_q != nullptr ? 2 * rows : rows;
  keys_rstd<Op, T, V><<<unsigned(std::min<int64_t>(cdiv(all_rows, kRowThreads / 32), kRowwiseMaxGrid)), kRowThreads,
                        0, st>>>(op, opq, w, rows, sh.seq, cols, n);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (n > 0) {
    keys_mean<<<unsigned(cdiv(sh.batch * cols, kMeanThreads)), kMeanThreads, 0, st>>>(w, sh.batch, cols, n);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  auto blocks = [&](auto max_threads, auto with_q) {
    keys_blocks<Op, T, V, decltype(max_threads)::value, decltype(with_q)::value>
        <<<unsigned(ctas), unsigned(4 * D), 0, st>>>(op, opq, w, p.k8, p.k_descale, p.q8, p.q_descale, sh.seq, cols,
                                                     int(p.heads), nb);
  };
  using Q = std::true_type;
  using NoQ = std::false_type;
  using T512 = std::integral_constant<int, 512>;
  using T1024 = std::integral_constant<int, 1024>;
  const bool with_q = w.rstd_q != nullptr;
  if (D <= 128) with_q ? blocks(T512{}, Q{}) : blocks(T512{}, NoQ{});
  else with_q ? blocks(T1024{}, Q{}) : blocks(T1024{}, NoQ{});
  return cudaGetLastError();
}

}  // namespace

cudaError_t attention_keys_fp8(const AttnKeysParams& p, cudaStream_t stream) {
  const RopeParams& a = p.op;
  const RopeShape& sh = a.shape;
  if (attention_keys_check(p) != nullptr) return cudaErrorInvalidValue;
  if (sh.batch * sh.seq == 0 || sh.cols == 0) return cudaSuccess;
  if (sh.cols > int64_t(INT32_MAX) / 4 || p.workspace == nullptr) return cudaErrorInvalidValue;
  return dispatch_cuda(a.dtype, [&](auto tag) -> cudaError_t {
    using T = type_of<decltype(tag)>;
    constexpr int V = kVec16<T>;
    if (sh.split && split_rope_fp8_cuda_unsupported(int(sizeof(T)), sh.head_dim) != nullptr)
      return cudaErrorInvalidValue;
    if ((sh.cols / p.heads) % V != 0) return cudaErrorInvalidValue;
    const bool with_q = attention_keys_with_q(p);
    if (!aligned_to(p.k8, 16) || (with_q && !aligned_to(p.q8, 16))) return cudaErrorMisalignedAddress;
    return dispatch_tables<T>(a.tables, [&](auto table_tag) -> cudaError_t {
      using TT = type_of<decltype(table_tag)>;
      const T* x = a.x.ptr<T>();
      const T* w = static_cast<const T*>(a.weight);
      const TT* cos = static_cast<const TT*>(a.tables.cos);
      const TT* sin = static_cast<const TT*>(a.tables.sin);
      const RopeTableStrides &cs = a.tables.cos_strides, &ss = a.tables.sin_strides;
      if (const cudaError_t e = rope_inputs_ok(x, a.x.layout.stride, w, cos, cs, sin, ss); e != cudaSuccess) return e;
      const RopeArgs<T, TT> args = rope_args(x, a.x.layout.stride, w, cos, cs, sin, ss, sh, a.eps);
      RopeArgs<T, TT> qargs = args;  // q: its own rows, weight and eps over the same tables
      if (with_q) {
        const T* qx = p.q_x.ptr<T>();
        const T* qw = static_cast<const T*>(p.q_weight);
        if (const cudaError_t e = rope_inputs_ok(qx, p.q_x.layout.stride, qw, cos, cs, sin, ss); e != cudaSuccess)
          return e;
        qargs = rope_args(qx, p.q_x.layout.stride, qw, cos, cs, sin, ss, sh, p.q_eps);
      }
      if (sh.split)
        return launch<NormSplitRopeOp<T, TT>, T>(NormSplitRopeOp<T, TT>{args}, NormSplitRopeOp<T, TT>{qargs}, p, stream);
      return launch<NormRopeOp<T, TT>, T>(NormRopeOp<T, TT>{args}, NormRopeOp<T, TT>{qargs}, p, stream);
    });
  });
}

}  // namespace ltx_kernels
