// CPU backend of the low-bit family (LTX-2 FP6, OCP FP6, NVFP4): the same params and contracts
// as the CUDA core (quant/lowbit_params.h), work spread over `parallel_for`. No torch.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/host_types.h"
#include "ltx_kernels/cpu/parallel.h"
#include "ltx_kernels/quant/lowbit_params.h"

namespace ltx_kernels {
namespace cpu {

void fp6_pack(const Fp6PackParams& p, const ParallelFor& parallel_for);
void fp6_unpack(const Fp6PackParams& p, const ParallelFor& parallel_for);
void quantize_fp6_block(const Fp6BlockParams& p, const ParallelFor& parallel_for);
void dequantize_fp6_block(const Fp6BlockParams& p, const ParallelFor& parallel_for);
void quantize_fp6(const Fp6Params& p, const ParallelFor& parallel_for);
void dequantize_fp6(const Fp6Params& p, const ParallelFor& parallel_for);
void quantize_nvfp4(const Nvfp4Params& p, const ParallelFor& parallel_for);
void dequantize_nvfp4(const Nvfp4Params& p, const ParallelFor& parallel_for);

// Ranges of the same work on raw pointers, for the GEMM's dequantizing paths
// (csrc/torch/gemm.cpp): groups [group_begin, group_end) of fp6_unpack; rows
// [row_begin, row_end) of dequantize_nvfp4 with the per-tensor scale's value s_t.
// T in {float, half_t, bfloat16_t}.
void fp6_unpack(uint8_t* out, const uint8_t* packed, int64_t group_begin, int64_t group_end);
template <typename T>
void dequantize_nvfp4(T* out, const uint8_t* packed, const uint8_t* block_scales, float s_t,
                      int64_t cols, bool hi_first, int64_t row_begin, int64_t row_end);

}  // namespace cpu
}  // namespace ltx_kernels
