// Row routines the CPU backend's families share: the FP8-output ops compute y with the plain
// ops' arithmetic and quantize it with the per-token-group quantizer's rule. No torch.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/fp8_util.h"
#include "ltx_kernels/common/host_types.h"
#include "ltx_kernels/common/rope_util.h"

namespace ltx_kernels {
namespace cpu {

// One row of per-token groups: q[c] and scales[g * s_col] (g < cols / group) from x[c].
// T in {float, half_t, bfloat16_t} (csrc/cpu/quant/fp8.cpp).
template <typename T>
void quantize_fp8_groups(uint8_t* q, float* scales, int64_t s_col, const T* x, int64_t cols, int64_t group,
                         Fp8Format fmt);

// One row's RoPE result in fp32, not rounded: row r of x (token (r / seq, r % seq)) into
// out[cols]; with `norm`, the RMSNorm (weight [cols] or nullptr) first. `scratch` holds cols
// floats. T: the activation's type (csrc/cpu/rope/rope.cpp).
template <typename T>
void rope_row_f32(float* out, float* scratch, const T* xr, int64_t r, const T* weight, bool norm,
                  float eps, const RopeTables& tables, const RopeShape& shape);

}  // namespace cpu
}  // namespace ltx_kernels
