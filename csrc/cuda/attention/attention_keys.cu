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
//             leading keys also write y (fp32) into the workspace;
//   launch 2  mean (smooth_keys > 0): a thread per (batch row, channel) adds y over the leading
//             keys in fp64 in key order, one division, one rounding;
//   launch 3  codes: a CTA per (128-key block, batch row, head) of 4 D threads, each thread one
//             16-byte column chunk of the head in 32 / V rows (32 values in registers, the chunk's
//             weight and mean loaded once); y - mean, the block's amax by a block reduction, then
//             the codes (8 or 4 bytes per chunk) and the factor. The batch rows of a key block
//             are neighbours in the launch order, so where the cos / sin tables have one row for
//             the whole batch (LTX-Video's grid coordinates) the second row's CTAs find the
//             block's table rows in L2 instead of reading them again from memory.
// Bytes: x read twice (launch 3's read from L2 where x fits: 22 MB at B 2, S 2688, C 2048 bf16),
// the cos / sin tables once, one code byte per element and 4 bytes per (block, head) written,
// 4 bytes per row and the mean's rows (fp32) through the workspace. Against the bf16 RoPE output
// that quantize_attention_fp8 would read twice, the k operand costs no pass of its own.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

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
  float* y;     // [B, n, C]: y of the mean's rows
  float* mean;  // [B, C]
};

Work work_of(const AttnKeysParams& p) {  // attention_keys_workspace's layout
  const AttnKeysWorkspace l = attention_keys_workspace(p);
  char* ws = static_cast<char*>(p.workspace);
  auto at = [&](int64_t off) { return off < 0 ? nullptr : reinterpret_cast<float*>(ws + off); };
  return Work{at(l.rstd), at(l.y), at(l.mean)};
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

template <class Op, typename T, int V>
__global__ void __launch_bounds__(kRowThreads) keys_rstd(const Op op, Work w, int64_t rows, int64_t seq, int cols,
                                                         int64_t mean_keys) {
  const int lane = threadIdx.x & 31;
  const int nvec = cols / V;
  for (int64_t r = int64_t(blockIdx.x) * (kRowThreads / 32) + (threadIdx.x >> 5); r < rows;
       r += int64_t(gridDim.x) * (kRowThreads / 32)) {
    const typename Op::RowCtx rc = op.row(r);
    float s = 0.f;
#pragma unroll 4
    for (int i = lane; i < nvec; i += 32) s += op.template sumsq<V>(load_cached<T, V>(rc.x + int64_t(i) * V));
    const float rstd = op.stat(warp_sum(s));
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

// MAX_THREADS: 512 (head dims up to 128, no register cap below 128) or 1024 (up to 256).
template <class Op, typename T, int V, int MAX_THREADS>
__global__ void __launch_bounds__(MAX_THREADS) keys_blocks(const Op op, Work w, uint8_t* k8,
                                                                        float* k_descale, int64_t seq, int cols,
                                                                        int heads, int64_t nblocks, int64_t batch) {
  constexpr int K = kValuesPerThread / V;  // chunks per thread
  __shared__ float red[32];
  const int D = cols / heads, nc = D / V;
  const int64_t cta = blockIdx.x;
  const int h = int(cta % heads);
  const int64_t b = (cta / heads) % batch, blk = cta / (int64_t(heads) * batch);
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
  Packed<T, V> ch[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {  // every load first
    const int64_t j = j0 + int64_t(k) * R;
    if (j < seq) ch[k] = load_stream<T, V>(op.row(b * seq + j).x + off);
  }
  float kc[K][V];
  float m = 0.f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = j0 + int64_t(k) * R;
    if (j >= seq) continue;
    const int64_t r = b * seq + j;
    y_chunk<Op, T, V>(op, op.row(r), off, ch[k], w.rstd[r], kc[k]);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      kc[k][e] = kc[k][e] - mu[e];
      m = fp8_absmax(m, kc[k][e]);
    }
  }
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
  if (threadIdx.x == 0) k_descale[(b * nblocks + blk) * heads + h] = s;  // [B, nblocks, H]
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

template <class Op, typename T>
cudaError_t launch(const Op& op, const AttnKeysParams& p, cudaStream_t st) {
  constexpr int V = kVec16<T>;
  const RopeShape& sh = p.op.shape;
  const int64_t rows = sh.batch * sh.seq, n = attention_keys_mean_keys(p);
  const int cols = int(sh.cols), D = int(sh.cols / p.heads);
  const int64_t nb = cdiv(sh.seq, kAttnKeysBlock), ctas = sh.batch * nb * p.heads;
  if (ctas > INT32_MAX) return cudaErrorInvalidValue;
  const Work w = work_of(p);
  keys_rstd<Op, T, V><<<unsigned(std::min<int64_t>(cdiv(rows, kRowThreads / 32), kRowwiseMaxGrid)), kRowThreads, 0,
                        st>>>(op, w, rows, sh.seq, cols, n);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  if (n > 0) {
    keys_mean<<<unsigned(cdiv(sh.batch * cols, kMeanThreads)), kMeanThreads, 0, st>>>(w, sh.batch, cols, n);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  if (D <= 128)
    keys_blocks<Op, T, V, 512><<<unsigned(ctas), unsigned(4 * D), 0, st>>>(op, w, p.k8, p.k_descale, sh.seq, cols,
                                                                          int(p.heads), nb, sh.batch);
  else
    keys_blocks<Op, T, V, 1024><<<unsigned(ctas), unsigned(4 * D), 0, st>>>(op, w, p.k8, p.k_descale, sh.seq, cols,
                                                                           int(p.heads), nb, sh.batch);
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
    if (!aligned_to(p.k8, 16)) return cudaErrorMisalignedAddress;
    return dispatch_tables<T>(a.tables, [&](auto table_tag) -> cudaError_t {
      using TT = type_of<decltype(table_tag)>;
      const T* x = a.x.ptr<T>();
      const T* w = static_cast<const T*>(a.weight);
      const TT* cos = static_cast<const TT*>(a.tables.cos);
      const TT* sin = static_cast<const TT*>(a.tables.sin);
      const RopeTableStrides &cs = a.tables.cos_strides, &ss = a.tables.sin_strides;
      if (const cudaError_t e = rope_inputs_ok(x, a.x.layout.stride, w, cos, cs, sin, ss); e != cudaSuccess) return e;
      const RopeArgs<T, TT> args = rope_args(x, a.x.layout.stride, w, cos, cs, sin, ss, sh, a.eps);
      if (sh.split) return launch<NormSplitRopeOp<T, TT>, T>(NormSplitRopeOp<T, TT>{args}, p, stream);
      return launch<NormRopeOp<T, TT>, T>(NormRopeOp<T, TT>{args}, p, stream);
    });
  });
}

}  // namespace ltx_kernels
