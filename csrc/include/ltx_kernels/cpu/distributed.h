// CPU backend of the distributed family's copies: the same params as the CUDA core
// (distributed/distributed_params.h), bytes copied row by row with memcpy, tokens (b, t) spread
// over `parallel_for`. No torch.
#pragma once

#include "ltx_kernels/cpu/parallel.h"
#include "ltx_kernels/distributed/distributed_params.h"

namespace ltx_kernels {
namespace cpu {

void sp_pack_heads(const SpHeadsParams& p, const ParallelFor& parallel_for);
void sp_unpack_tokens(const SpHeadsParams& p, const ParallelFor& parallel_for);
void sp_pack_tokens(const SpTokensParams& p, const ParallelFor& parallel_for);
void sp_unpack_heads(const SpTokensParams& p, const ParallelFor& parallel_for);
void sp_unpack_gather(const SpTokensParams& p, const ParallelFor& parallel_for);

}  // namespace cpu
}  // namespace ltx_kernels
