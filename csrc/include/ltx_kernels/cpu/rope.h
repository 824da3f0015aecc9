// CPU backend of the RoPE family: the same params as the CUDA core (rope/rope_params.h), fp32
// arithmetic with row sums in double, rows spread over `parallel_for`. No torch.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/host_types.h"
#include "ltx_kernels/cpu/parallel.h"
#include "ltx_kernels/rope/rope_params.h"

namespace ltx_kernels {
namespace cpu {

void rms_norm_rope(const RopeParams& p, const ParallelFor& parallel_for);
void rms_norm_split_rope(const RopeParams& p, const ParallelFor& parallel_for);
void apply_rope(const RopeParams& p, const ParallelFor& parallel_for);

// One row's fp32 result, not rounded (the FP8-output ops quantize it): row r of x (token
// (r / seq, r % seq)) into out[cols]; with `norm`, the RMSNorm (weight [cols] or nullptr)
// first. `scratch` holds cols floats. T: the activation's type (float, half_t, bfloat16_t).
template <typename T>
void rope_row_f32(float* out, float* scratch, const T* xr, int64_t r, const T* weight, bool norm,
                  float eps, const RopeTables& tables, const RopeShape& shape);

}  // namespace cpu
}  // namespace ltx_kernels
