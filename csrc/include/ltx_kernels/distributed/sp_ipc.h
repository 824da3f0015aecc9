// The CUDA IPC transport of the sequence-parallel exchanges (one node, a few GPUs or processes):
// a process-wide registry of communicators and the three fused exchanges. Host code; no torch.
//
// A communicator owns one cudaMalloc'd block per rank,
//   [flags: uint32 [kSpMaxWorld + 1], padded to kSpIpcFlagBytes][data: nbytes]
// and opens every other rank's block through cudaIpcOpenMemHandle. Each exchange is: a barrier
// (every peer finished reading its buffer), stores straight into the peers' buffers at the
// final layout (skipped once a barrier timed out), a barrier (every peer's stores into ours are
// done), then a copy of our buffer into `out`. A rank missing for timeout_ns sets *status =
// 1 + its rank; nothing traps and nothing hangs (distributed.h's sp_ipc_barrier).
//
// Registry functions return "" on success, else the rule or the CUDA call that failed (the
// adapter raises it naming the op). An exchange's params: distributed/sp_ipc_plan.h.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "ltx_kernels/distributed/sp_ipc_plan.h"  // SpIpcComm, SpIpcParams

namespace ltx_kernels {

constexpr int64_t kSpIpcFlagBytes = 512;   // flag region at the start of every block

// Allocates this rank's block on `device` (flags zeroed), writes its IPC handle into `handle`
// (kSpIpcHandleBytes) and a new id into *id.
std::string sp_ipc_create(int device, int64_t nbytes, uint8_t* handle, int64_t* id);
// Opens every other rank's block from `handles` ([world][kSpIpcHandleBytes]); this is `rank`.
std::string sp_ipc_open(int64_t id, const uint8_t* handles, int world, int rank);
// Waits for the device, closes the peers' mappings and frees the block; an unknown id is a no-op.
void sp_ipc_close(int64_t id);
// The opened communicator `id`.
std::string sp_ipc_find(int64_t id, SpIpcComm* comm);

// x [B, T_rank, H, D] -> out [B, T_total, H / W, D]: rank r receives heads [r H/W, (r+1) H/W)
// of every rank, source s's tokens at prefix[s].
cudaError_t sp_ipc_send_recv_heads(const SpIpcParams& p, cudaStream_t stream);
// The inverse: y [B, T_total, H / W, D] -> out [B, T_rank, H, D].
cudaError_t sp_ipc_gather_heads(const SpIpcParams& p, cudaStream_t stream);
// x [B, T_rank, F] -> out [B, T_total, F], source s's tokens at prefix[s].
cudaError_t sp_ipc_all_gather(const SpIpcParams& p, cudaStream_t stream);

}  // namespace ltx_kernels
