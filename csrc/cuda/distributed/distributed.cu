// Sequence-parallel launchers: word width, threads per token, grid. See distributed.cuh.
#include <algorithm>

#include "ltx_kernels/cuda/ops.h"
#include "ltx_kernels/distributed/distributed.cuh"
#include "ltx_kernels/distributed/distributed.h"

namespace ltx_kernels {
namespace {

using distributed_detail::kThreads;
using distributed_detail::kUnroll;

constexpr int64_t kMaxGrid = int64_t(1) << 30;

// Widest word (16/8/4/2/1 bytes) dividing every value in `v` (byte sizes, strides, addresses).
int word_bytes(const int64_t* v, int n) {
  for (int w = 16; w > 1; w >>= 1) {
    bool ok = true;
    for (int i = 0; i < n && ok; ++i) ok = v[i] % w == 0;
    if (ok) return w;
  }
  return 1;
}

// Threads per token: a power of two covering the token's words in <= kUnroll passes.
int tpt_log2_for(int64_t words_per_token) {
  int lg = 0;
  while ((int64_t(1) << lg) * kUnroll < words_per_token && (1 << lg) < kThreads) ++lg;
  return lg;
}

unsigned grid_for(int64_t tokens, int tpt_log2) {
  const int64_t per_block = kThreads >> tpt_log2;
  return unsigned(std::min<int64_t>((tokens + per_block - 1) / per_block, kMaxGrid));
}

template <int V>
cudaError_t heads_launch(const SpHeadsLayout& l, char* x, int64_t row_bytes, bool to_buf,
                         const int* status, cudaStream_t stream) {
  const int wpr = int(row_bytes / V);
  const int lg = tpt_log2_for(l.H * wpr);
  const unsigned grid = grid_for(l.B * l.T, lg);
  if (to_buf)
    distributed_detail::heads_kernel<V, true><<<grid, kThreads, 0, stream>>>(l, x, wpr, lg, status);
  else
    distributed_detail::heads_kernel<V, false><<<grid, kThreads, 0, stream>>>(l, x, wpr, lg, status);
  return cudaGetLastError();
}

template <int V>
cudaError_t tokens_launch(const SpTokensLayout& l, char* y, int64_t row_bytes, bool to_buf,
                          const int* status, cudaStream_t stream) {
  const int wpr = int(row_bytes / V);
  const int lg = tpt_log2_for(l.Hl * wpr);
  const unsigned grid = grid_for(l.B * l.T, lg);
  if (to_buf)
    distributed_detail::tokens_kernel<V, true><<<grid, kThreads, 0, stream>>>(l, y, wpr, lg, status);
  else
    distributed_detail::tokens_kernel<V, false><<<grid, kThreads, 0, stream>>>(l, y, wpr, lg, status);
  return cudaGetLastError();
}

bool sizes_ok(int64_t W, int64_t D, int64_t elem_size) {
  return W >= 1 && W <= kSpMaxWorld && D >= 1 &&
         (elem_size == 1 || elem_size == 2 || elem_size == 4 || elem_size == 8);
}

cudaError_t heads_impl(const SpHeadsLayout& l, char* x, int64_t es, bool to_buf, const int* status,
                       cudaStream_t stream) {
  if (l.B <= 0 || l.T <= 0 || l.H <= 0) return cudaSuccess;
  if (!sizes_ok(l.W, l.D, es) || l.H % l.W != 0) return cudaErrorInvalidValue;
  const int64_t row_bytes = l.D * es;
  if (l.H * row_bytes > int64_t(INT32_MAX)) return cudaErrorInvalidValue;  // 32-bit word index
  int64_t v[5 + kSpMaxWorld];
  int n = 0;
  v[n++] = row_bytes;
  v[n++] = l.sb;
  v[n++] = l.st;
  v[n++] = l.sh;
  for (int64_t w = 0; w < l.W; ++w) v[n++] = int64_t(reinterpret_cast<uintptr_t>(l.group[w]));
  v[n++] = int64_t(reinterpret_cast<uintptr_t>(x));
  const int V = word_bytes(v, n);
  switch (V) {
    case 16: return heads_launch<16>(l, x, row_bytes, to_buf, status, stream);
    case 8: return heads_launch<8>(l, x, row_bytes, to_buf, status, stream);
    case 4: return heads_launch<4>(l, x, row_bytes, to_buf, status, stream);
    case 2: return heads_launch<2>(l, x, row_bytes, to_buf, status, stream);
    default: return heads_launch<1>(l, x, row_bytes, to_buf, status, stream);
  }
}

cudaError_t tokens_impl(const SpTokensLayout& l, char* y, int64_t es, bool to_buf,
                        const int* status, cudaStream_t stream) {
  if (l.B <= 0 || l.T <= 0 || l.Hl <= 0) return cudaSuccess;
  if (!sizes_ok(l.W, l.D, es) || l.seg_hs < l.Hl || l.prefix[0] != 0 || l.prefix[l.W] != l.T)
    return cudaErrorInvalidValue;
  const int64_t row_bytes = l.D * es;
  if (l.Hl * row_bytes > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  int64_t v[5 + kSpMaxWorld];
  int n = 0;
  v[n++] = row_bytes;
  v[n++] = l.sb;
  v[n++] = l.st;
  v[n++] = l.sh;
  v[n++] = int64_t(reinterpret_cast<uintptr_t>(y));
  for (int64_t s = 0; s < l.W; ++s) v[n++] = int64_t(reinterpret_cast<uintptr_t>(l.seg[s]));
  switch (word_bytes(v, n)) {
    case 16: return tokens_launch<16>(l, y, row_bytes, to_buf, status, stream);
    case 8: return tokens_launch<8>(l, y, row_bytes, to_buf, status, stream);
    case 4: return tokens_launch<4>(l, y, row_bytes, to_buf, status, stream);
    case 2: return tokens_launch<2>(l, y, row_bytes, to_buf, status, stream);
    default: return tokens_launch<1>(l, y, row_bytes, to_buf, status, stream);
  }
}

}  // namespace

cudaError_t sp_pack_heads(const SpHeadsParams& p, cudaStream_t stream) {
  return heads_impl(p.layout, p.x, p.elem_size, true, nullptr, stream);
}

cudaError_t sp_unpack_tokens(const SpHeadsParams& p, cudaStream_t stream) {
  return heads_impl(p.layout, p.x, p.elem_size, false, nullptr, stream);
}

cudaError_t sp_pack_tokens(const SpTokensParams& p, cudaStream_t stream) {
  return tokens_impl(p.layout, p.y, p.elem_size, true, nullptr, stream);
}

cudaError_t sp_unpack_heads(const SpTokensParams& p, cudaStream_t stream) {
  return tokens_impl(p.layout, p.y, p.elem_size, false, nullptr, stream);
}

cudaError_t sp_unpack_gather(const SpTokensParams& p, cudaStream_t stream) {
  return tokens_impl(p.layout, p.y, p.elem_size, false, nullptr, stream);
}

cudaError_t sp_heads_copy(const SpHeadsLayout& l, char* x, int64_t elem_size, bool to_buf,
                          cudaStream_t stream) {
  return heads_impl(l, x, elem_size, to_buf, nullptr, stream);
}

cudaError_t sp_tokens_copy(const SpTokensLayout& l, char* y, int64_t elem_size, bool to_buf,
                           cudaStream_t stream) {
  return tokens_impl(l, y, elem_size, to_buf, nullptr, stream);
}

cudaError_t sp_heads_copy_guarded(const SpHeadsLayout& l, const char* x, int64_t elem_size,
                                  const int* status, cudaStream_t stream) {
  return heads_impl(l, const_cast<char*>(x), elem_size, true, status, stream);
}

cudaError_t sp_tokens_copy_guarded(const SpTokensLayout& l, const char* y, int64_t elem_size,
                                   const int* status, cudaStream_t stream) {
  return tokens_impl(l, const_cast<char*>(y), elem_size, true, status, stream);
}

cudaError_t sp_ipc_barrier(uint32_t* const* flags, int rank, int world, int* status,
                           uint64_t timeout_ns, cudaStream_t stream) {
  if (world < 1 || world > kSpMaxWorld || rank < 0 || rank >= world || status == nullptr)
    return cudaErrorInvalidValue;
  distributed_detail::FlagPtrs p{};
  for (int i = 0; i < world; ++i) {
    if (flags[i] == nullptr) return cudaErrorInvalidValue;
    p.flags[i] = flags[i];
  }
  distributed_detail::barrier_kernel<<<1, kSpMaxWorld, 0, stream>>>(p, rank, world, status, timeout_ns);
  return cudaGetLastError();
}

}  // namespace ltx_kernels
