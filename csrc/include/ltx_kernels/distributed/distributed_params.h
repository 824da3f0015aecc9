// Parameters of the distributed family: the sequence-parallel (Ulysses) data movement around an
// all_to_all / all_gather, built once per call (distributed/sp_layout.h, from the shapes the torch
// adapter checked) and taken by both backends (cpu/distributed.h, distributed/distributed.h); the
// IPC transport's in distributed/sp_ipc_plan.h.
// No CUDA, no torch. Semantics in full: docs/semantics.md, section "Sequence-parallel all-to-all".
//
// Everything copies BYTES: a row is D elements of `elem_size` bytes (1, 2, 4 or 8) moved as
// 16/8/4/2/1-byte words (the widest that the row size, every stride and every base pointer
// allow), so round trips are byte-exact for any dtype (bf16, fp16, fp32, fp8 ...). Strides are in
// BYTES, 64-bit.
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
#pragma once

#include <cstdint>

namespace ltx_kernels {

constexpr int kSpMaxWorld = 64;  // ranks per communicator (the IPC transport uses <= 8)
constexpr int64_t kSpIpcHandleBytes = 64;  // an IPC handle (sizeof(cudaIpcMemHandle_t), distributed/sp_ipc.h)

struct SpHeadsLayout {
  int64_t B, T, H, D, W;    // X is [B, T, H, D]; Hl = H / W
  int64_t sb, st, sh;       // X strides in bytes (D is contiguous)
  int64_t buf_T, t0;        // buffer tokens per batch entry, first token written/read
  char* group[kSpMaxWorld]; // base of head group w in the buffer (may be a peer's memory)
};

struct SpTokensLayout {
  int64_t B, T, Hl, D, W;        // Y is [B, T, Hl, D], T = prefix[W]
  int64_t sb, st, sh;            // Y strides in bytes
  int64_t seg_hs;                // rows of D per token in the buffer (Hl for a packed buffer)
  int64_t prefix[kSpMaxWorld + 1];
  int64_t seg_T[kSpMaxWorld];    // token stride per batch entry of segment s in the buffer
  char* seg[kSpMaxWorld];        // base of segment s (may be a peer's memory)
};

// sp_pack_heads (X -> head groups) and sp_unpack_tokens (head groups -> X, its inverse).
struct SpHeadsParams {
  SpHeadsLayout layout;
  char* x;            // X's base
  int64_t elem_size;  // bytes
};

// sp_pack_tokens (Y -> token segments), sp_unpack_heads and sp_unpack_gather (segments -> Y).
struct SpTokensParams {
  SpTokensLayout layout;
  char* y;            // Y's base
  int64_t elem_size;  // bytes
};

}  // namespace ltx_kernels
