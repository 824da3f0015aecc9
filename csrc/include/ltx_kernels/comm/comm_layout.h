// Layouts of the sequence-parallel copies (see comm.h for what they mean). No CUDA, no torch:
// shared by the CUDA core and the CPU backend.
#pragma once

#include <cstdint>

namespace ltx_kernels {

constexpr int kSpMaxWorld = 64;  // ranks per communicator (the IPC transport uses <= 8)

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

}  // namespace ltx_kernels
