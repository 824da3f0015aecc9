// The sequence-parallel copies and the IPC barrier on raw layouts: what the pack / unpack entry
// points (cuda/ops.h) and the IPC transport (distributed/sp_ipc.h) are made of. Layouts:
// distributed/distributed_params.h; kernels: distributed.cuh. Every launch is checked; empty
// problems return cudaSuccess.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/distributed/distributed_params.h"

namespace ltx_kernels {

// heads side -> buffer (to_buf) or buffer -> heads side; tokens side -> buffer or back.
cudaError_t sp_heads_copy(const SpHeadsLayout& l, char* x, int64_t elem_size, bool to_buf, cudaStream_t stream);
cudaError_t sp_tokens_copy(const SpTokensLayout& l, char* y, int64_t elem_size, bool to_buf, cudaStream_t stream);

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
