// CPU reference backend for the blockwise-scaled FP8 GEMM (REFERENCE.md section 2). Plain C++,
// no torch; the same contract as ltx_kernels/gemm/fp8_gemm.h:
//
//   D[m, n] = round_T( sum_kb (A[m, kb] . B[n, kb]) * sa(m, kb) * sb(n / 128, kb) + bias[n] )
//
// with the 128-wide dot products in fp32 (every e4m3 x e4m3 product is exact in fp32), the
// scaled block sums and the bias added in double, and ONE rounding to T (double -> T correctly
// rounded, via round-to-odd to fp32). Rows [row_begin, row_end) so the adapter parallelises.
#pragma once

#include <cstdint>

#include "ltx_kernels/common/host_types.h"

namespace ltx_kernels {
namespace cpu {

// a: e4m3 bytes, element (m, k) at a[m * lda + k]; b: e4m3 bytes [N, K] at b[n * ldb + k];
// sa(m, kb) = a_scales[m * sa_m + kb * sa_k]; sb(nb, kb) = b_scales[nb * sb_n + kb * sb_k];
// bias fp32 [N] or nullptr; d: T [M, N] at d[m * ldd + n]. K % 128 == 0.
// T in {half_t, bfloat16_t, float}.
template <typename T>
void fp8_blockwise_gemm(T* d, int64_t ldd, const uint8_t* a, int64_t lda, const float* a_scales,
                        int64_t sa_m, int64_t sa_k, const uint8_t* b, int64_t ldb,
                        const float* b_scales, int64_t sb_n, int64_t sb_k, const float* bias,
                        int64_t row_begin, int64_t row_end, int64_t N, int64_t K);

// double -> fp32 with round-to-odd (sticky bit in the last place), so that a later RNE to a
// narrower format (bf16, fp16) equals one correctly rounded double -> narrow conversion.
float round_to_odd_f32(double v);

}  // namespace cpu
}  // namespace ltx_kernels
