// The activation formulas of the CPU backend (fp32), shared by the activation ops and the ops
// with FP8 output so both compute the same y. No torch. They follow the CUDA kernels
// (ltx_kernels/activation/activation.cuh) formula for formula, so both backends have the same
// special values (documented in docs and in the Python docstrings):
//   gelu:      gelu_erfc_f32 (ltx_kernels/activation/gelu_erfc.h), the same code on both.
//   gelu_tanh: 0.5 x (1 + tanh(v)) = x / (1 + e^{-2v}), v = sqrt(2/pi) (x + 0.044715 x^3). The
//              tanh form cancels for x << 0 (1 + tanh(v) near 0 keeps only the absolute error
//              of tanh near -1, ~2^-24); this form has none. What remains is the conditioning
//              of e^{-2v}: the relative error of v (a few fp32 roundings) is multiplied by
//              |2v|, so the relative error of the result grows like ~14 |v| 2^-24 for x << 0.
//              For e^{-2v} > 2^126 (x < -10.0) the result is -0 (exact value > -1.2e-37).
//   silu:      x / (1 + e^{-x}); -0 for e^{-x} > 2^126 (x < -87.3, exact value > -1.1e-36).
// The 2^126 cut keeps the CUDA kernels' approximate reciprocal of 1 + e out of the subnormal
// range, where it flushes to 0; the CPU uses it too, so gelu_tanh(-inf) and silu(-inf) are -0
// (not -inf / inf = NaN) on both backends. The CUDA kernels evaluate e with __expf and the
// quotient as x * rcp.approx(1 + e) (a few ulps more than the CPU's expf and division, bounded
// in tests/bounds.py); the CPU keeps the IEEE operations.
#pragma once

#include <cmath>

#include "ltx_kernels/activation/gelu_erfc.h"

namespace ltx_kernels {
namespace cpu {
namespace act {

struct GeluErf {
  static float f(float x) { return gelu_erfc_f32(x); }
};
struct GeluTanh {
  static float f(float x) {
    const float v = 0.79788456080286535588f * (x + 0.044715f * x * x * x);
    const float e = std::exp(-2.f * v);
    return e > 0x1p126f ? -0.f : x / (1.f + e);
  }
};
struct Silu {
  static float f(float x) {
    const float e = std::exp(-x);
    return e > 0x1p126f ? -0.f : x / (1.f + e);
  }
};

}  // namespace act
}  // namespace cpu
}  // namespace ltx_kernels
