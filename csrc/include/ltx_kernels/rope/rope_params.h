// Parameters of the RoPE family, built once by the torch adapter and taken by both backends:
// cpu/ops.h and cuda/ops.h. No CUDA, no torch. Layouts: common/rope_util.h; fp32 arithmetic.
// Semantics in full: docs/semantics.md, section "Norms, RoPE and DiT glue".
//
//   rms_norm_rope:       y = x * rsqrt(mean(x^2) + eps) * w over the whole row, then
//                        interleaved RoPE with a full-width table (head_dim = cols):
//                          o[2i]   = y[2i]*cos[2i]   - y[2i+1]*sin[2i]
//                          o[2i+1] = y[2i]*sin[2i+1] + y[2i+1]*cos[2i+1]
//   rms_norm_split_rope: the same norm over the whole row, then per head of width d:
//                          o[j] = y[j]*cos[j] - y[j+d/2]*sin[j],  o[j+d/2] = y[j+d/2]*cos[j] + y[j]*sin[j]
//   apply_rope:          the rotation alone (interleaved or split, any even head_dim).
//
// out may alias x exactly (in place): every element is read before it is written.
#pragma once

#include "ltx_kernels/common/dtype.h"
#include "ltx_kernels/common/rope_util.h"
#include "ltx_kernels/common/rows.h"

namespace ltx_kernels {

struct RopeParams {
  DType dtype;         // of out, x and weight
  OutRows out;         // [batch * seq, cols]
  InRows x;            // [batch * seq, cols]; row r is token (r / seq, r % seq)
  const void* weight;  // [cols] contiguous or nullptr; the rms_norm_* ops only
  RopeTables tables;
  RopeShape shape;     // shape.split: rms_norm_split_rope, or apply_rope's split rotation
  float eps;           // the rms_norm_* ops only
};

}  // namespace ltx_kernels
