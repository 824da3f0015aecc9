// CPU backend of the GEMM family (fp8_blockwise_gemm, fp8_rowwise_gemm, bf16_gemm) with every
// epilogue and output of ltx_kernels/gemm/gemm_params.h. Plain C++, no torch.
//
// Accumulation:
//   FP8 (1D2D):  each 128-wide K block's dot product in fp32 (every e4m3 x e4m3 product is exact
//                in fp32), scaled by sa(m, kb) * sb(n / 128, kb) and summed over the blocks in double;
//   FP8 rowwise: the same fp32 block dot products of the e4m3 values summed in double over all of
//                K, times sa(m) * sb(n) (that product rounded to fp32, as the kernel forms it);
//   bf16:        the same structure without scales: fp32 dot products over 128-wide K blocks
//                (bf16 x bf16 products are exact in fp32; the last block may be shorter), summed
//                in double.
// Then, with y = that sum + bias[n] in double:
//   kNone, 16-bit out      ONE rounding of y to the output type (double -> T correctly rounded)
//   kGeluTanh              gelu_tanh (cpu/activation_math.h, fp32) of fp32(y), rounded to T
//   kGatedResidual         h + gate * fp32(y) in double, one rounding to T
//   kFP8 out               v = fp32(y) (or gelu_tanh of it), then per row and 128 columns exactly
//                          cpu::quantize_fp8_per_token_group's rule (s = amax / 448, q = e4m3(v / s))
#pragma once

#include <cstdint>

#include "ltx_kernels/common/host_types.h"
#include "ltx_kernels/gemm/gemm_params.h"

namespace ltx_kernels {
namespace cpu {

// Rows [row_begin, row_end) of the problem `p` (pointers are host pointers; p.config is ignored).
void gemm_rows(const gemm::GemmParams& p, int64_t row_begin, int64_t row_end);

// double -> fp32 with round-to-odd (sticky bit in the last place), so that a later RNE to a
// narrower format (bf16, fp16) equals one correctly rounded double -> narrow conversion.
float round_to_odd_f32(double v);

}  // namespace cpu
}  // namespace ltx_kernels
