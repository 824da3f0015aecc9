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
// adapter raises it naming the op).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "ltx_kernels/distributed/distributed_params.h"

namespace ltx_kernels {

constexpr int64_t kSpIpcHandleBytes = 64;  // sizeof(cudaIpcMemHandle_t)
constexpr int64_t kSpIpcFlagBytes = 512;   // flag region at the start of every block

// A communicator as an exchange sees it (a copy of the registry entry).
struct SpIpcComm {
  int device;
  int rank;
  int world;
  int64_t nbytes;                    // data bytes per rank
  char* data[kSpMaxWorld];           // every rank's data region, as mapped in this process
  uint32_t* flags[kSpMaxWorld];      // every rank's flag array
};

// Allocates this rank's block on `device` (flags zeroed), writes its IPC handle into `handle`
// (kSpIpcHandleBytes) and a new id into *id.
std::string sp_ipc_create(int device, int64_t nbytes, uint8_t* handle, int64_t* id);
// Opens every other rank's block from `handles` ([world][kSpIpcHandleBytes]); this is `rank`.
std::string sp_ipc_open(int64_t id, const uint8_t* handles, int world, int rank);
// Waits for the device, closes the peers' mappings and frees the block; an unknown id is a no-op.
void sp_ipc_close(int64_t id);
// The opened communicator `id`.
std::string sp_ipc_find(int64_t id, SpIpcComm* comm);

// One exchange. The adapter fills the layouts of `in` and `out` from the tensors (their sizes
// and strides, prefix and W); the exchange points them at the buffers.
struct SpIpcParams {
  SpIpcComm comm;
  int* status;          // int32 on the device: 0, or 1 + the first rank that did not arrive
  uint64_t timeout_ns;
  int64_t elem_size;    // bytes
  int64_t prefix[kSpMaxWorld + 1];  // token offsets of the ranks' shares; prefix[world] = T_total
  SpHeadsLayout in_heads;           // sp_ipc_send_recv_heads: x [B, T_rank, H, D]
  SpTokensLayout in_tokens;         // sp_ipc_gather_heads: y [B, T_total, H / W, D];
                                    // sp_ipc_all_gather: x as [B, T_rank, 1, F]
  const char* in;
  SpTokensLayout out;               // out as [B, T, R, D] (one segment: our buffer)
  char* out_base;
};

// x [B, T_rank, H, D] -> out [B, T_total, H / W, D]: rank r receives heads [r H/W, (r+1) H/W)
// of every rank, source s's tokens at prefix[s].
cudaError_t sp_ipc_send_recv_heads(const SpIpcParams& p, cudaStream_t stream);
// The inverse: y [B, T_total, H / W, D] -> out [B, T_rank, H, D].
cudaError_t sp_ipc_gather_heads(const SpIpcParams& p, cudaStream_t stream);
// x [B, T_rank, F] -> out [B, T_total, F], source s's tokens at prefix[s].
cudaError_t sp_ipc_all_gather(const SpIpcParams& p, cudaStream_t stream);

}  // namespace ltx_kernels
