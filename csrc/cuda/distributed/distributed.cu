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

// The kernels of one side of the buffer: heads (X [B, T, H, D]) or tokens (Y [B, T, Hl, D]).
struct HeadsSide {
  using Layout = SpHeadsLayout;
  template <int V, bool TO_BUF>
  static constexpr auto kernel = distributed_detail::heads_kernel<V, TO_BUF>;
  static int64_t rows_per_token(const Layout& l) { return l.H; }
};
struct TokensSide {
  using Layout = SpTokensLayout;
  template <int V, bool TO_BUF>
  static constexpr auto kernel = distributed_detail::tokens_kernel<V, TO_BUF>;
  static int64_t rows_per_token(const Layout& l) { return l.Hl; }
};

template <class Side, int V>
cudaError_t launch(const typename Side::Layout& l, char* base, int64_t row_bytes, bool to_buf, const int* status,
                   cudaStream_t stream) {
  const int wpr = int(row_bytes / V);
  const int lg = tpt_log2_for(Side::rows_per_token(l) * wpr);
  const unsigned grid = grid_for(l.B * l.T, lg);
  auto kernel = to_buf ? Side::template kernel<V, true> : Side::template kernel<V, false>;
  kernel<<<grid, kThreads, 0, stream>>>(l, base, wpr, lg, status);
  return cudaGetLastError();
}

// The widest word the row size, the strides and the n base addresses in `ptrs` allow, then launch.
template <class Side>
cudaError_t launch_words(const typename Side::Layout& l, char* base, char* const* ptrs, int64_t n, int64_t row_bytes,
                         bool to_buf, const int* status, cudaStream_t stream) {
  int64_t v[5 + kSpMaxWorld];
  int k = 0;
  v[k++] = row_bytes;
  v[k++] = l.sb;
  v[k++] = l.st;
  v[k++] = l.sh;
  v[k++] = int64_t(reinterpret_cast<uintptr_t>(base));
  for (int64_t i = 0; i < n; ++i) v[k++] = int64_t(reinterpret_cast<uintptr_t>(ptrs[i]));
  switch (word_bytes(v, k)) {
    case 16: return launch<Side, 16>(l, base, row_bytes, to_buf, status, stream);
    case 8: return launch<Side, 8>(l, base, row_bytes, to_buf, status, stream);
    case 4: return launch<Side, 4>(l, base, row_bytes, to_buf, status, stream);
    case 2: return launch<Side, 2>(l, base, row_bytes, to_buf, status, stream);
    default: return launch<Side, 1>(l, base, row_bytes, to_buf, status, stream);
  }
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
  return launch_words<HeadsSide>(l, x, l.group, l.W, row_bytes, to_buf, status, stream);
}

cudaError_t tokens_impl(const SpTokensLayout& l, char* y, int64_t es, bool to_buf,
                        const int* status, cudaStream_t stream) {
  if (l.B <= 0 || l.T <= 0 || l.Hl <= 0) return cudaSuccess;
  if (!sizes_ok(l.W, l.D, es) || l.seg_hs < l.Hl || l.prefix[0] != 0 || l.prefix[l.W] != l.T)
    return cudaErrorInvalidValue;
  const int64_t row_bytes = l.D * es;
  if (l.Hl * row_bytes > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  return launch_words<TokensSide>(l, y, l.seg, l.W, row_bytes, to_buf, status, stream);
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
