// CPU backend of the FP8 family: the same params as the CUDA core (quant/fp8_params.h) and the
// same element rule (common/fp8_util.h, formats.h's reference codec); work spread over
// `parallel_for`. No torch.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/host_types.h"
#include "ltx_kernels/cpu/parallel.h"
#include "ltx_kernels/quant/fp8_params.h"

namespace ltx_kernels {
namespace cpu {

void quantize_fp8_per_token_group(const Fp8QuantizeParams& p, const ParallelFor& parallel_for);
void quantize_fp8_block(const Fp8QuantizeParams& p, const ParallelFor& parallel_for);
void quantize_fp8_per_tensor(const Fp8QuantizeParams& p, const ParallelFor& parallel_for);

void dequantize_fp8_per_token_group(const Fp8DequantizeParams& p, const ParallelFor& parallel_for);
void dequantize_fp8_block(const Fp8DequantizeParams& p, const ParallelFor& parallel_for);
void dequantize_fp8_per_tensor(const Fp8DequantizeParams& p, const ParallelFor& parallel_for);

// One row of per-token groups: q[c] and scales[g * s_col] (g < cols / group) from x[c]. The
// per-token-group quantizer runs it per row; the FP8-output ops run it on their fp32 rows.
// T in {float, half_t, bfloat16_t}.
template <typename T>
void quantize_fp8_groups(uint8_t* q, float* scales, int64_t s_col, const T* x, int64_t cols, int64_t group,
                         Fp8Format fmt);

}  // namespace cpu
}  // namespace ltx_kernels
