// The low-bit CPU routines on raw pointers under the family's entry points (cpu/ops.h, which the
// adapters call). No torch.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/host_types.h"
#include "ltx_kernels/cpu/ops.h"

namespace ltx_kernels {
namespace cpu {

// Groups [group_begin, group_end) of fp6_unpack: packed [groups * 3] -> out [groups * 4].
void fp6_unpack(uint8_t* out, const uint8_t* packed, int64_t group_begin, int64_t group_end);
// Rows [row_begin, row_end) of dequantize_nvfp4 with the per-tensor scale's value s_t.
// T in {float, half_t, bfloat16_t}.
template <typename T>
void dequantize_nvfp4(T* out, const uint8_t* packed, const uint8_t* block_scales, float s_t,
                      int64_t cols, bool hi_first, int64_t row_begin, int64_t row_end);

}  // namespace cpu
}  // namespace ltx_kernels
