// CPU reference backend for the norm family. Plain C++, no torch: rows [row_begin, row_end)
// of the same layouts as the CUDA core, fp32 arithmetic, so the adapter can split rows over
// threads.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/host_types.h"

namespace ltx_kernels {
namespace cpu {

// T in {float, half_t, bfloat16_t}.
template <typename T>
void rms_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* weight,
              int64_t row_begin, int64_t row_end, int64_t cols, float eps);

}  // namespace cpu
}  // namespace ltx_kernels
