// CPU backend of the sequence-parallel copies: the same layouts as the CUDA core
// (ltx_kernels/comm/comm_layout.h), bytes copied row by row with memcpy, over tokens
// [tok_begin, tok_end) of B * T so the adapter can split them over threads. No torch.
#pragma once

#include <cstdint>

#include "ltx_kernels/comm/comm_layout.h"

namespace ltx_kernels {
namespace cpu {

// X [B, T, H, D] <-> head groups; tokens index b * T + t.
void sp_heads_copy(const SpHeadsLayout& l, char* x, int64_t elem_size, bool to_buf,
                   int64_t tok_begin, int64_t tok_end);

// Y [B, T_total, Hl, D] <-> token segments; tokens index b * T_total + t.
void sp_tokens_copy(const SpTokensLayout& l, char* y, int64_t elem_size, bool to_buf,
                    int64_t tok_begin, int64_t tok_end);

}  // namespace cpu
}  // namespace ltx_kernels
