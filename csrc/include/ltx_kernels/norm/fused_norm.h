// Fused norms, CUDA entry points (semantics, layouts and aliasing: norm/fused_norm_params.h;
// kernels and byte counts: fused_norm.cuh). Elements float, __half or __nv_bfloat16.
#pragma once

#include <cuda_runtime.h>

#include "ltx_kernels/norm/fused_norm_params.h"

namespace ltx_kernels {

cudaError_t add_rms_norm(const FusedNormParams& p, cudaStream_t stream);
cudaError_t layer_norm(const FusedNormParams& p, cudaStream_t stream);
cudaError_t adaln_rms_norm(const FusedNormParams& p, cudaStream_t stream);
cudaError_t adaln_layer_norm(const FusedNormParams& p, cudaStream_t stream);
cudaError_t gated_residual_adaln_rms_norm(const FusedNormParams& p, cudaStream_t stream);

}  // namespace ltx_kernels
