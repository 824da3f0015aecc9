// Low-bit formats (LTX-2 FP6, OCP FP6, NVFP4), CUDA entry points (semantics and layouts:
// quant/lowbit_params.h; kernels: lowbit.cuh). Values float, __half or __nv_bfloat16.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/quant/lowbit_params.h"

namespace ltx_kernels {

cudaError_t fp6_pack(const Fp6PackParams& p, cudaStream_t stream);
cudaError_t fp6_unpack(const Fp6PackParams& p, cudaStream_t stream);
cudaError_t quantize_fp6_block(const Fp6BlockParams& p, cudaStream_t stream);
cudaError_t dequantize_fp6_block(const Fp6BlockParams& p, cudaStream_t stream);
cudaError_t quantize_fp6(const Fp6Params& p, cudaStream_t stream);
cudaError_t dequantize_fp6(const Fp6Params& p, cudaStream_t stream);
cudaError_t quantize_nvfp4(const Nvfp4Params& p, cudaStream_t stream);
cudaError_t dequantize_nvfp4(const Nvfp4Params& p, cudaStream_t stream);

// The same unpacking and NVFP4 dequantization on raw pointers, for the GEMM's dequantizing
// paths (csrc/torch/gemm.cpp). out: [groups * 4]; packed: [groups * 3].
cudaError_t fp6_unpack(uint8_t* out, const uint8_t* packed, int64_t groups, cudaStream_t stream);
// T in {float, __half, __nv_bfloat16}; layouts as Nvfp4Params.
template <typename T>
cudaError_t dequantize_nvfp4(T* out, const uint8_t* packed, const uint8_t* block_scales,
                             const float* per_tensor_scale, int64_t rows, int64_t cols,
                             bool hi_first, cudaStream_t stream);

}  // namespace ltx_kernels
