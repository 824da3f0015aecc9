// Parameters of the activation family, built once by the torch adapter and taken by both
// backends: cpu/ops.h and cuda/ops.h. No CUDA, no torch. fp32 arithmetic;
// every element type is the params' dtype.
//
//   gelu(x)      = 0.5 x (1 + erf(x / sqrt(2)))
//   gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
//   silu(x)      = x sigmoid(x)
//   *_and_mul(x) = act(x[:, :d]) * x[:, d:]   (act_first, vLLM / kernels-community)
//                = x[:, :d] * act(x[:, d:])   (!act_first, diffusers GEGLU: value, gate = chunk)
//   gated_attention(x, g)[r, h*D + j] = x[r, h*D + j] * 2 * sigmoid(g[r, h])   (LTX-2)
#pragma once

#include <cstdint>

#include "ltx_kernels/common/dtype.h"
#include "ltx_kernels/common/rows.h"

namespace ltx_kernels {

// gelu, gelu_tanh, silu: out = act(x) elementwise.
struct ActivationParams {
  DType dtype;
  OutRows out;  // [rows, cols]; may be exactly x (in place)
  InRows x;     // [rows, cols]
};

// gelu_and_mul, silu_and_mul: out = act(a) * b with (a, b) the halves of x in act_first's order.
struct AndMulParams {
  DType dtype;
  OutRows out;       // [rows, d]; must not overlap x
  InRows x;          // [rows, 2d]
  bool act_first;    // act on the first half (else on the second)
  bool tanh_approx;  // gelu_and_mul: gelu_tanh instead of the exact gelu
};

// gated_attention: a per-head gate.
struct GatedAttentionParams {
  DType dtype;
  OutRows out;  // [rows, heads * head_dim]; may be exactly x
  InRows x;     // [rows, heads * head_dim]
  InRows gate;  // [rows, heads]
  int64_t heads;
  int64_t head_dim;
};

}  // namespace ltx_kernels
