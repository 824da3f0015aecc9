// RoPE, with and without a fused RMSNorm in front: CUDA entry points (semantics and layouts:
// rope/rope_params.h; kernels and byte counts: rope.cuh). Elements float, __half or
// __nv_bfloat16; tables float32 or the elements' type (diffusers keeps them in fp32).
#pragma once

#include <cuda_runtime.h>

#include "ltx_kernels/rope/rope_params.h"

namespace ltx_kernels {

cudaError_t rms_norm_rope(const RopeParams& p, cudaStream_t stream);
cudaError_t rms_norm_split_rope(const RopeParams& p, cudaStream_t stream);
cudaError_t apply_rope(const RopeParams& p, cudaStream_t stream);

}  // namespace ltx_kernels
