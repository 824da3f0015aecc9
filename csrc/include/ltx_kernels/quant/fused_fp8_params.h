// Parameters of the ops with FP8 E4M3 per-token-group output (<op>_fp8), built once by the
// torch adapter and taken by both backends: cpu/fused_fp8.h and quant/fused_fp8.h. No CUDA, no
// torch.
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

}  // namespace ltx_kernels
