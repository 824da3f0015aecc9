#include <algorithm>
#include <cmath>

#include "ltx_kernels/cpu/ops.h"
#include "ltx_kernels/cpu/activation_math.h"

namespace ltx_kernels {
namespace cpu {
namespace {

using act::GeluErf;
using act::GeluTanh;
using act::Silu;

// Rows per task: about 16K elements each.
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, (int64_t(1) << 14) / std::max<int64_t>(cols, 1)); }

template <class Act>
void elementwise(const ActivationParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    const int64_t cols = p.x.layout.cols;
    parallel_for(p.x.layout.rows, row_grain(cols), [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const T* xr = p.x.ptr<T>() + r * p.x.layout.stride;
        T* orow = p.out.ptr<T>() + r * p.out.layout.stride;
        for (int64_t c = 0; c < cols; ++c) orow[c] = from_float<T>(Act::f(to_float(xr[c])));
      }
    });
  });
}

template <class Act>
void and_mul(const AndMulParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    const int64_t d = p.out.layout.cols;
    const int64_t act_off = p.act_first ? 0 : d;
    const int64_t mul_off = p.act_first ? d : 0;
    parallel_for(p.x.layout.rows, row_grain(d), [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const T* ar = p.x.ptr<T>() + r * p.x.layout.stride + act_off;
        const T* br = p.x.ptr<T>() + r * p.x.layout.stride + mul_off;
        T* orow = p.out.ptr<T>() + r * p.out.layout.stride;
        for (int64_t c = 0; c < d; ++c) orow[c] = from_float<T>(Act::f(to_float(ar[c])) * to_float(br[c]));
      }
    });
  });
}

}  // namespace

void gelu(const ActivationParams& p, const ParallelFor& parallel_for) { elementwise<GeluErf>(p, parallel_for); }
void gelu_tanh(const ActivationParams& p, const ParallelFor& parallel_for) { elementwise<GeluTanh>(p, parallel_for); }
void silu(const ActivationParams& p, const ParallelFor& parallel_for) { elementwise<Silu>(p, parallel_for); }

void gelu_and_mul(const AndMulParams& p, const ParallelFor& parallel_for) {
  if (p.tanh_approx) and_mul<GeluTanh>(p, parallel_for);
  else and_mul<GeluErf>(p, parallel_for);
}

void silu_and_mul(const AndMulParams& p, const ParallelFor& parallel_for) { and_mul<Silu>(p, parallel_for); }

void gated_attention(const GatedAttentionParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    parallel_for(p.x.layout.rows, row_grain(p.x.layout.cols), [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const T* xr = p.x.ptr<T>() + r * p.x.layout.stride;
        const T* gr = p.gate.ptr<T>() + r * p.gate.layout.stride;
        T* orow = p.out.ptr<T>() + r * p.out.layout.stride;
        for (int64_t h = 0; h < p.heads; ++h) {
          const float s = 2.f / (1.f + std::exp(-to_float(gr[h])));
          for (int64_t j = 0; j < p.head_dim; ++j) {
            const int64_t c = h * p.head_dim + j;
            orow[c] = from_float<T>(to_float(xr[c]) * s);
          }
        }
      }
    });
  });
}

}  // namespace cpu
}  // namespace ltx_kernels
