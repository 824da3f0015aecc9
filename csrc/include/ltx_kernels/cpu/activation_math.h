// The activation formulas of the CPU backend (fp32), shared by the activation ops and the ops
// with FP8 output so both compute the same y. No torch.
#pragma once

#include <cmath>

namespace ltx_kernels {
namespace cpu {
namespace act {

struct GeluErf {
  static float f(float x) { return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752440f)); }
};
struct GeluTanh {
  static float f(float x) {
    return 0.5f * x * (1.f + std::tanh(0.79788456080286535588f * (x + 0.044715f * x * x * x)));
  }
};
struct Silu {
  static float f(float x) { return x / (1.f + std::exp(-x)); }
};

}  // namespace act
}  // namespace cpu
}  // namespace ltx_kernels
