// Parameters of the norm family (rms_norm), built once by the torch adapter and taken by both
// backends: cpu/ops.h and cuda/ops.h. No CUDA, no torch. Semantics: docs/semantics.md,
// section "Norms, RoPE and DiT glue".
#pragma once

#include "ltx_kernels/common/dtype.h"
#include "ltx_kernels/common/rows.h"
#include "ltx_kernels/common/rowwise_launch.h"

namespace ltx_kernels {

// out[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight   (fp32 arithmetic)
struct RmsNormParams {
  DType dtype;         // of out, x and weight
  OutRows out;         // [rows, cols]; may be exactly x (in place)
  InRows x;            // [rows, cols]
  const void* weight;  // [cols] contiguous, or nullptr for no weight
  float eps;
  NormShape shape;     // launch shape to force (kind kAuto: the heuristic's, rowwise_launch.h)
};

}  // namespace ltx_kernels
