// FP8 quantization, CUDA entry points (rule, layouts and block geometry: quant/fp8_params.h;
// kernels and byte counts: fp8.cuh). x / out elements float, __half or __nv_bfloat16.
#pragma once

#include <cuda_runtime.h>

#include "ltx_kernels/quant/fp8_params.h"

namespace ltx_kernels {

cudaError_t quantize_fp8_per_token_group(const Fp8QuantizeParams& p, cudaStream_t stream);
cudaError_t quantize_fp8_block(const Fp8QuantizeParams& p, cudaStream_t stream);
// Writes the scale first (amax / fmax, or given_scale copied), then the codes.
cudaError_t quantize_fp8_per_tensor(const Fp8QuantizeParams& p, cudaStream_t stream);

cudaError_t dequantize_fp8_per_token_group(const Fp8DequantizeParams& p, cudaStream_t stream);
cudaError_t dequantize_fp8_block(const Fp8DequantizeParams& p, cudaStream_t stream);
cudaError_t dequantize_fp8_per_tensor(const Fp8DequantizeParams& p, cudaStream_t stream);

}  // namespace ltx_kernels
