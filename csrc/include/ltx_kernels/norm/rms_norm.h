// RMSNorm, CUDA entry point (semantics and layouts: norm/norm_params.h). fp32 arithmetic
// inside; elements float, __half or __nv_bfloat16 (p.dtype). Picks the 16-byte vector path
// when every pointer, stride and cols allow it, a scalar path otherwise.
#pragma once

#include <cuda_runtime.h>

#include "ltx_kernels/norm/norm_params.h"

namespace ltx_kernels {

cudaError_t rms_norm(const RmsNormParams& p, cudaStream_t stream);

}  // namespace ltx_kernels
