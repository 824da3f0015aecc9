// Sequence-parallel (Ulysses) data movement, framework-agnostic CUDA entry points.
//
// Everything here copies BYTES: a row is D elements of `elem_size` bytes moved as 16/8/4/2/1-byte
// words (the widest that the row size, every stride and every base pointer allow), so round
// trips are byte-exact for any dtype (bf16, fp16, fp32, fp8 ...). Strides are in BYTES, 64-bit.
//
// Two layouts meet a communication buffer ("buf"):
//  heads side   X [B, T, H, D] (strides sb, st, sh; D contiguous). Heads are split in W groups of
//               Hl = H / W; group w lives at base `group[w]` as rows (b, t, hl) at
//               ((b * buf_T + t0 + t) * Hl + hl) * D elements. A contiguous all_to_all send
//               buffer [W][B, T, Hl, D] is group[w] = buf + w * B*T*Hl*D, buf_T = T, t0 = 0; the
//               IPC path points group[w] at peer w's receive buffer [B, T_total, Hl, D] with
//               buf_T = T_total and t0 = prefix[rank].
//  tokens side  Y [B, T_total, Hl, D] (strides sb, st, sh). Tokens [prefix[s], prefix[s+1]) form
//               segment s, stored at base `seg[s]` as rows (b, t, hl) at
//               ((b * seg_T[s] + t) * seg_hs + hl) * D elements (seg_hs >= Hl: rows per token
//               in the buffer). The all_to_all receive buffer [W][B, T_s, Hl, D] (concatenated)
//               is seg[s] = buf + B*prefix[s]*Hl*D, seg_T[s] = T_s, seg_hs = Hl.
// No torch here; every launch is checked; empty problems return cudaSuccess.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/comm/comm_layout.h"

namespace ltx_kernels {

// heads side -> buffer (to_buf) or buffer -> heads side. `x` is the X base.
cudaError_t sp_heads_copy(const SpHeadsLayout& l, char* x, int64_t elem_size, bool to_buf,
                          cudaStream_t stream);

// tokens side -> buffer (to_buf) or buffer -> tokens side. `y` is the Y base.
cudaError_t sp_tokens_copy(const SpTokensLayout& l, char* y, int64_t elem_size, bool to_buf,
                           cudaStream_t stream);

// IPC barrier over W ranks. `flags[w]` is rank w's flag array (uint32 [kSpMaxWorld + 1], in IPC
// memory; index kSpMaxWorld is that rank's own epoch counter, never written by peers). Each call
// advances the local epoch e (device-side, so a CUDA graph may replay it), publishes e into every
// rank's flags[rank] with st.release.sys after a system fence, then polls its own flags[0..W) with
// ld.acquire.sys until all reach e or `timeout_ns` (globaltimer) passes. On timeout (or when
// *status is already non-zero on entry) it writes status = 1 + the first missing rank (if 0 before)
// and returns; it never traps and never hangs.
cudaError_t sp_ipc_barrier(uint32_t* const* flags, int rank, int world, int* status,
                           uint64_t timeout_ns, cudaStream_t stream);

// Same as sp_heads_copy / sp_tokens_copy(to_buf = true) but a no-op when *status != 0 (a barrier
// before it timed out: never write into peers that may still be reading).
cudaError_t sp_heads_copy_guarded(const SpHeadsLayout& l, const char* x, int64_t elem_size,
                                  const int* status, cudaStream_t stream);
cudaError_t sp_tokens_copy_guarded(const SpTokensLayout& l, const char* y, int64_t elem_size,
                                   const int* status, cudaStream_t stream);

}  // namespace ltx_kernels
