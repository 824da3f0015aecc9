// The IPC exchanges' params (distributed/sp_ipc.h runs them) and the plans that fill them from
// the arrays' shapes: the rules of each exchange (token counts, the shapes of the input and of
// out, the receive buffer's size) and its layouts. Host only; no CUDA, no torch. Unit-tested in
// tests/cpp/test_sp_layout.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "ltx_kernels/distributed/distributed_params.h"

namespace ltx_kernels {

// A communicator as an exchange sees it (a copy of the registry entry).
struct SpIpcComm {
  int device;
  int rank;
  int world;
  int64_t nbytes;                    // data bytes per rank
  char* data[kSpMaxWorld];           // every rank's data region, as mapped in this process
  uint32_t* flags[kSpMaxWorld];      // every rank's flag array
};

// One exchange. The plan fills the layouts of `in` and `out` from the arrays (their sizes and
// strides, prefix and W); the exchange points them at the buffers.
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

// An array as a plan reads it: `nd` sizes and strides (elements) of `elem_size`-byte elements.
struct SpStrided {
  char* data;
  int64_t elem_size;
  int64_t nd;
  const int64_t* size;
  const int64_t* stride;
};

// Each plan takes the call's arrays, the per-rank token counts (n of them) and the timeout, with
// p->comm the communicator (sp_ipc_find) and p->status set; it checks the call against the
// communicator in the order below and fills the rest of *p. It returns "" or the rule the call
// breaks (the adapter raises it naming the op). Every plan first checks: one token count per
// rank, timeout > 0, counts >= 0.
//
// send_recv_heads: x [B, T_rank, H, D] (4-D, last dimension contiguous; T_rank this rank's
// count, H divisible by world) -> out [B, T_total, H / world, D] (last dimension contiguous).
std::string sp_ipc_plan_send_recv_heads(const SpStrided& x, const SpStrided& out, const int64_t* tokens,
                                        int64_t n, double timeout_s, SpIpcParams* p);
// gather_heads: y [B, T_total, H / world, D] (4-D, last dimension contiguous) -> out
// [B, T_rank, H, D] (last dimension contiguous).
std::string sp_ipc_plan_gather_heads(const SpStrided& y, const SpStrided& out, const int64_t* tokens, int64_t n,
                                     double timeout_s, SpIpcParams* p);
// all_gather: x [B, T_rank, ...] (nd >= 2, contiguous) -> out [B, T_total, ...] (contiguous).
std::string sp_ipc_plan_all_gather(const SpStrided& x, const SpStrided& out, const int64_t* tokens, int64_t n,
                                   double timeout_s, SpIpcParams* p);

}  // namespace ltx_kernels
