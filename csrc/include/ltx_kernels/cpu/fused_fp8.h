// CPU backend of the ops with FP8 E4M3 per-token-group output (see quant/fused_fp8.h for the
// semantics). Plain C++, no torch: each row's fp32 result y is computed like the plain CPU op
// (fp32 arithmetic, row sums in double) but not rounded to T, then quantized with the CPU
// FP8 quantizer (cpu/fp8.h, the one rule of common/fp8_util.h). Rows [row_begin, row_end).
// T in {float, half_t, bfloat16_t}; q codes are raw bytes; scales[r * s_row + g * s_col].
#pragma once

#include <cstdint>

#include "ltx_kernels/common/fused_norm_util.h"
#include "ltx_kernels/common/host_types.h"
#include "ltx_kernels/common/rope_util.h"

namespace ltx_kernels {
namespace cpu {

struct Fp8GroupOutCpu {
  uint8_t* q;  // [rows, cols]
  int64_t q_stride;
  float* scales;
  int64_t s_row, s_col;
  int64_t group;
};

template <typename T>
void rms_norm_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, const T* weight,
                  int64_t row_begin, int64_t row_end, int64_t cols, float eps);

template <typename T>
void adaln_rms_norm_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, ModTable<T> scale,
                        ModTable<T> shift, const T* weight, int64_t row_begin, int64_t row_end,
                        int64_t cols, float eps);

// h_out = round_T(h + y_in * gate) is written; y from the rounded h_out.
template <typename T>
void gated_residual_adaln_rms_norm_fp8(const Fp8GroupOutCpu& o, T* h_out, int64_t h_out_stride,
                                       const T* h, int64_t h_stride, const T* y_in,
                                       int64_t y_stride, ModTable<T> gate, ModTable<T> scale,
                                       ModTable<T> shift, const T* weight, int64_t row_begin,
                                       int64_t row_end, int64_t cols, float eps);

// act: 0 silu, 1 gelu (erf), 2 gelu_tanh. x [rows, 2d] -> y [rows, d].
template <typename T>
void act_and_mul_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, int64_t row_begin,
                     int64_t row_end, int64_t d, int act, bool act_first);

template <typename T>
void gelu_tanh_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, int64_t row_begin,
                   int64_t row_end, int64_t cols);

template <typename T>
void gated_attention_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, const T* gate,
                         int64_t gate_stride, int64_t row_begin, int64_t row_end, int64_t heads,
                         int64_t head_dim);

// Whole-row RMSNorm then RoPE (interleaved / split: cpu/rope.h's rope_row_f32), y quantized.
// TT: float or T.
template <typename T, typename TT>
void rms_norm_rope_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, const T* weight,
                       const TT* cos, RopeTableStrides cs, const TT* sin, RopeTableStrides ss,
                       const RopeShape& shape, float eps, int64_t row_begin, int64_t row_end);
template <typename T, typename TT>
void rms_norm_split_rope_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, const T* weight,
                             const TT* cos, RopeTableStrides cs, const TT* sin, RopeTableStrides ss,
                             const RopeShape& shape, float eps, int64_t row_begin, int64_t row_end);

}  // namespace cpu
}  // namespace ltx_kernels
