// Activation family, CUDA entry points (semantics and layouts: activation/activation_params.h).
// Each picks a 16-byte vector path when pointers, strides and widths allow it, a scalar path
// otherwise; gelu / gelu_tanh / silu treat dense operands (stride == cols, or one row) as one
// flat array.
#pragma once

#include <cuda_runtime.h>

#include "ltx_kernels/activation/activation_params.h"

namespace ltx_kernels {

cudaError_t gelu(const ActivationParams& p, cudaStream_t stream);
cudaError_t gelu_tanh(const ActivationParams& p, cudaStream_t stream);
cudaError_t silu(const ActivationParams& p, cudaStream_t stream);
cudaError_t gelu_and_mul(const AndMulParams& p, cudaStream_t stream);
cudaError_t silu_and_mul(const AndMulParams& p, cudaStream_t stream);
cudaError_t gated_attention(const GatedAttentionParams& p, cudaStream_t stream);

}  // namespace ltx_kernels
