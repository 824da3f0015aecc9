// Parameters of the ops with FP8 E4M3 per-token-group output (<op>_fp8), built once by the
// torch adapter and taken by both backends (cpu/ops.h, cuda/ops.h). No CUDA, no torch.
//
// Each is a plain op of the norm, fused-norm, activation or RoPE family whose fp32 result y is
// computed exactly as the plain op computes it but NOT rounded to the input type (the plain
// op's last step); per group of `group` consecutive columns the rule of
// quantize_fp8_per_token_group (common/fp8_util.h) is applied to y instead:
//   s = amax(|y|) / 448 (NaN ignored; 0 for an all-zero group), q = e4m3(y / s) (true fp32
//   division, RNE, saturating; s == 0 -> encode(y): exact zeros).
// So the params are the plain op's own (its `out` unused) plus where q and the scales go.
#pragma once

#include <cstdint>

#include "ltx_kernels/activation/activation_params.h"
#include "ltx_kernels/norm/fused_norm_params.h"
#include "ltx_kernels/norm/norm_params.h"
#include "ltx_kernels/rope/rope_params.h"

namespace ltx_kernels {

// Where an <op>_fp8 writes: codes q [rows, cols] and scales[r * s_row + g * s_col].
struct Fp8GroupOut {
  uint8_t* q;        // [rows, cols] e4m3 codes
  int64_t q_stride;  // elements (bytes) between rows
  float* scales;     // logical [rows, cols / group]
  int64_t s_row;     // "row": cols / group; "mn_major": 1
  int64_t s_col;     // "row": 1;            "mn_major": M_pad
  int64_t group;     // columns per scale
};

template <class OpParams>
struct Fp8OutParams {
  OpParams op;     // the plain op (op.out unused)
  Fp8GroupOut q;
};

using RmsNormFp8Params = Fp8OutParams<RmsNormParams>;          // rms_norm_fp8
using FusedNormFp8Params = Fp8OutParams<FusedNormParams>;      // adaln_rms_norm_fp8, gated_residual_adaln_rms_norm_fp8
using AndMulFp8Params = Fp8OutParams<AndMulParams>;            // silu_and_mul_fp8, gelu_and_mul_fp8
using ActivationFp8Params = Fp8OutParams<ActivationParams>;    // gelu_tanh_fp8
using GatedAttentionFp8Params = Fp8OutParams<GatedAttentionParams>;  // gated_attention_fp8
using RopeFp8Params = Fp8OutParams<RopeParams>;                // rms_norm_rope_fp8, rms_norm_split_rope_fp8

// ---- the CUDA path's limits (the adapter checks them first and copies inputs that are not
// aligned): group % V == 0 and group / V a power of two <= 32, where V = 16 / sizeof(T) (a group is
// then group / V consecutive lanes of a warp), or, for 16-bit inputs, group == cols with cols % V
// == 0 (one scale per token, fused_fp8_cuda_per_row); every pointer 16-byte aligned and every row
// stride a multiple of V; cols / V <= 4096; RoPE tables with 16-byte aligned rows; the split
// RoPE needs head_dim % (2 V) == 0 (a 16-byte chunk never straddles a half-head).

// Whether a group is one a warp's lanes cover: a power of two <= 32 of 16-byte vectors.
inline bool fused_fp8_warp_group(int elem_size, int64_t group) {
  const int64_t v = 16 / elem_size, lanes = group / v;
  return group % v == 0 && lanes <= 32 && (lanes & (lanes - 1)) == 0;
}

// Whether the CUDA path runs its one-scale-per-token kernel for this problem: group == cols and
// not a warp group.
inline bool fused_fp8_cuda_per_row(int elem_size, int64_t cols, int64_t group) {
  return group == cols && !fused_fp8_warp_group(elem_size, group);
}

// Why the CUDA path cannot take this problem, or nullptr when it can.
inline const char* fused_fp8_cuda_unsupported(int elem_size, int64_t cols, int64_t group) {
  const int64_t v = 16 / elem_size;
  if (fused_fp8_cuda_per_row(elem_size, cols, group) && cols % v == 0 && cols / v <= 4096) {
    if (elem_size != 2) return "one scale per token (group_size = the row width) takes a 16-bit input here";
    return nullptr;
  }
  if (group % v != 0) return "group_size must be a multiple of 16 bytes of the input dtype";
  if (!fused_fp8_warp_group(elem_size, group))
    return "group_size / (16 / element size) must be a power of two <= 32 (or the row width: one scale per token)";
  if (cols / v > 4096) return "rows wider than 4096 16-byte vectors are not supported";
  return nullptr;
}

// Why the split CUDA path cannot take head_dim, or nullptr.
inline const char* split_rope_fp8_cuda_unsupported(int elem_size, int64_t head_dim) {
  return head_dim % (2 * (16 / elem_size)) != 0
             ? "the head dim must be a multiple of 2 x (16 / element size) (16 for 16-bit x, 8 for float32)"
             : nullptr;
}

// Whether rows at `data` (`rows` rows `stride` elements of `elem_size` bytes apart) are read or
// written as whole 16-byte vectors: a 16-byte aligned base and, beyond one row, a row stride of
// whole vectors. On CUDA the adapter copies inputs that are not, and refuses q and h_out.
inline bool fp8_vector_rows(const void* data, int64_t rows, int64_t stride, int64_t elem_size) {
  return reinterpret_cast<uintptr_t>(data) % 16 == 0 && (rows <= 1 || stride % (16 / elem_size) == 0);
}

// Whether cos/sin tables at `data` with strides `st` (elements of `elem_size` bytes) have 16-byte
// aligned rows.
inline bool fp8_vector_tables(const void* data, const RopeTableStrides& st, int64_t elem_size) {
  const int64_t k = 16 / elem_size;
  return reinterpret_cast<uintptr_t>(data) % 16 == 0 && st.b % k == 0 && st.h % k == 0 && st.s % k == 0;
}

// Columns of an <op>_fp8's output row (q's): the input row's, half of it for the gated
// activations (x [..., 2d] -> [..., d]).
template <class OpParams>
inline int64_t fp8_out_cols(const Fp8OutParams<OpParams>& p) {
  return p.op.x.layout.cols;
}
inline int64_t fp8_out_cols(const AndMulFp8Params& p) { return p.op.x.layout.cols / 2; }

}  // namespace ltx_kernels
