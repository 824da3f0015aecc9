// Norms and activations with FP8 E4M3 output and per-token-group scales, emitted in the same
// pass (issue #4): framework-agnostic CUDA entry points. fp32 arithmetic inside; T in {float,
// __half, __nv_bfloat16}.
//
// For every row the op's fp32 result y is computed exactly as the plain op computes it, but
// NOT rounded to T (the plain op's last step); then per group of `group` consecutive columns
// the rule of quantize_fp8_per_token_group (common/fp8_util.h) is applied to y:
//   s = amax(|y|) / 448 (NaN ignored; 0 for an all-zero group), q = e4m3(y / s) (true fp32
//   division, RNE, saturating; s == 0 -> encode(y): exact zeros).
// Outputs: q [rows, cols] codes (row stride q_stride), scales at scales[r * s_row + g * s_col].
//
// CUDA path limits (the adapter checks them with fused_fp8_cuda_unsupported first):
//   group % V == 0 and group / V a power of two <= 32, where V = 16 / sizeof(T) (a group is
//   then group / V consecutive lanes of a warp); every pointer 16-byte aligned and every row
//   stride a multiple of V (the adapter copies inputs that are not); cols / V <= 4096.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ltx_kernels/common/fused_norm_util.h"
#include "ltx_kernels/common/rope_util.h"

namespace ltx_kernels {

struct Fp8GroupOut {
  uint8_t* q;        // [rows, cols] e4m3 codes
  int64_t q_stride;  // elements (bytes) between rows
  float* scales;     // logical [rows, cols / group]
  int64_t s_row;     // "row": cols / group; "mn_major": 1
  int64_t s_col;     // "row": 1;            "mn_major": M_pad
  int64_t group;     // columns per scale
};

// Why the CUDA path cannot take this problem, or nullptr when it can.
inline const char* fused_fp8_cuda_unsupported(int elem_size, int64_t cols, int64_t group) {
  const int64_t v = 16 / elem_size;
  if (group % v != 0) return "group_size must be a multiple of 16 bytes of the input dtype";
  const int64_t lanes = group / v;
  if (lanes > 32 || (lanes & (lanes - 1)) != 0)
    return "group_size / (16 / element size) must be a power of two <= 32";
  if (cols / v > 4096) return "rows wider than 4096 16-byte vectors are not supported";
  return nullptr;
}

enum class Fp8Act : int { kSilu = 0, kGelu = 1, kGeluTanh = 2 };

// y = rms_norm(x) * w
template <typename T>
cudaError_t rms_norm_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride, const T* weight,
                         int64_t rows, int64_t cols, float eps, cudaStream_t stream);

// y = rms_norm(x) * w * (1 + scale) + shift
template <typename T>
cudaError_t adaln_rms_norm_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride,
                               ModTable<T> scale, ModTable<T> shift, const T* weight,
                               int64_t rows, int64_t cols, float eps, cudaStream_t stream);

// h_out = round_T(h + y_in * gate) (written), y = rms_norm(h_out) * w * (1 + scale) + shift
template <typename T>
cudaError_t gated_residual_adaln_rms_norm_fp8(const Fp8GroupOut& o, T* h_out, int64_t h_out_stride,
                                              const T* h, int64_t h_stride, const T* y_in,
                                              int64_t y_stride, ModTable<T> gate,
                                              ModTable<T> scale, ModTable<T> shift,
                                              const T* weight, int64_t rows, int64_t cols,
                                              float eps, cudaStream_t stream);

// x [rows, 2d] -> y [rows, d] = act(x[:, :d]) * x[:, d:] (act_first) or x[:, :d] * act(x[:, d:])
template <typename T>
cudaError_t act_and_mul_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride, int64_t rows,
                            int64_t d, Fp8Act act, bool act_first, cudaStream_t stream);

// y = gelu_tanh(x)
template <typename T>
cudaError_t gelu_tanh_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride, int64_t rows,
                          int64_t cols, cudaStream_t stream);

// y[r, h*D + j] = x[r, h*D + j] * 2 * sigmoid(gate[r, h])
template <typename T>
cudaError_t gated_attention_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride, const T* gate,
                                int64_t gate_stride, int64_t rows, int64_t heads,
                                int64_t head_dim, cudaStream_t stream);

// Whole-row RMSNorm then RoPE (rope/rope.h's rms_norm_rope / rms_norm_split_rope), y not
// rounded: x rows are tokens (b, s) = (r / shape.seq, r % shape.seq); tables (TT = float or T)
// as common/rope_util.h with 16-byte aligned rows (the adapter copies them otherwise).
//   interleaved (shape.split false, shape.head_dim == cols): pairs (2i, 2i+1), tables [B|1, S, C];
//   split (shape.split true): pairs (j, j + d/2) per head, tables [B|1, H, S, d/2];
//     CUDA needs d % (2 * V) == 0 (a 16-byte chunk never straddles a half-head).
template <typename T, typename TT>
cudaError_t rms_norm_rope_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride, const T* weight,
                              const TT* cos, RopeTableStrides cs, const TT* sin,
                              RopeTableStrides ss, const RopeShape& shape, float eps,
                              cudaStream_t stream);
template <typename T, typename TT>
cudaError_t rms_norm_split_rope_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride,
                                    const T* weight, const TT* cos, RopeTableStrides cs,
                                    const TT* sin, RopeTableStrides ss, const RopeShape& shape,
                                    float eps, cudaStream_t stream);

// Why the split CUDA path cannot take head_dim, or nullptr.
inline const char* split_rope_fp8_cuda_unsupported(int elem_size, int64_t head_dim) {
  return head_dim % (2 * (16 / elem_size)) != 0
             ? "the head dim must be a multiple of 2 x (16 / element size) (16 for 16-bit x, 8 for float32)"
             : nullptr;
}

}  // namespace ltx_kernels
