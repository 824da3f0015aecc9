#include <cmath>

#include "ltx_kernels/cpu/activation_math.h"
#include "ltx_kernels/cpu/activation.h"

namespace ltx_kernels {
namespace cpu {
namespace {

using act::GeluErf;
using act::GeluTanh;
using act::Silu;

template <class Act, typename T>
void elementwise(T* out, int64_t os, const T* x, int64_t xs, int64_t rb, int64_t re,
                 int64_t cols) {
  for (int64_t r = rb; r < re; ++r) {
    const T* xr = x + r * xs;
    T* orow = out + r * os;
    for (int64_t c = 0; c < cols; ++c) orow[c] = from_float<T>(Act::f(to_float(xr[c])));
  }
}

template <class Act, typename T>
void and_mul(T* out, int64_t os, const T* x, int64_t xs, int64_t rb, int64_t re, int64_t d,
             bool act_first) {
  const int64_t act_off = act_first ? 0 : d;
  const int64_t mul_off = act_first ? d : 0;
  for (int64_t r = rb; r < re; ++r) {
    const T* ar = x + r * xs + act_off;
    const T* br = x + r * xs + mul_off;
    T* orow = out + r * os;
    for (int64_t c = 0; c < d; ++c)
      orow[c] = from_float<T>(Act::f(to_float(ar[c])) * to_float(br[c]));
  }
}

}  // namespace

template <typename T>
void gelu(T* out, int64_t os, const T* x, int64_t xs, int64_t rb, int64_t re, int64_t cols) {
  elementwise<GeluErf>(out, os, x, xs, rb, re, cols);
}
template <typename T>
void gelu_tanh(T* out, int64_t os, const T* x, int64_t xs, int64_t rb, int64_t re, int64_t cols) {
  elementwise<GeluTanh>(out, os, x, xs, rb, re, cols);
}
template <typename T>
void silu(T* out, int64_t os, const T* x, int64_t xs, int64_t rb, int64_t re, int64_t cols) {
  elementwise<Silu>(out, os, x, xs, rb, re, cols);
}

template <typename T>
void gelu_and_mul(T* out, int64_t os, const T* x, int64_t xs, int64_t rb, int64_t re, int64_t d,
                  bool tanh_approx, bool act_first) {
  if (tanh_approx) and_mul<GeluTanh>(out, os, x, xs, rb, re, d, act_first);
  else and_mul<GeluErf>(out, os, x, xs, rb, re, d, act_first);
}
template <typename T>
void silu_and_mul(T* out, int64_t os, const T* x, int64_t xs, int64_t rb, int64_t re, int64_t d,
                  bool act_first) {
  and_mul<Silu>(out, os, x, xs, rb, re, d, act_first);
}

template <typename T>
void gated_attention(T* out, int64_t os, const T* x, int64_t xs, const T* gate, int64_t gs,
                     int64_t rb, int64_t re, int64_t heads, int64_t head_dim) {
  for (int64_t r = rb; r < re; ++r) {
    const T* xr = x + r * xs;
    const T* gr = gate + r * gs;
    T* orow = out + r * os;
    for (int64_t h = 0; h < heads; ++h) {
      const float s = 2.f / (1.f + std::exp(-to_float(gr[h])));
      for (int64_t j = 0; j < head_dim; ++j) {
        const int64_t c = h * head_dim + j;
        orow[c] = from_float<T>(to_float(xr[c]) * s);
      }
    }
  }
}

#define LTX_INSTANTIATE_CPU_ACTIVATION(T)                                                      \
  template void gelu<T>(T*, int64_t, const T*, int64_t, int64_t, int64_t, int64_t);            \
  template void gelu_tanh<T>(T*, int64_t, const T*, int64_t, int64_t, int64_t, int64_t);       \
  template void silu<T>(T*, int64_t, const T*, int64_t, int64_t, int64_t, int64_t);            \
  template void gelu_and_mul<T>(T*, int64_t, const T*, int64_t, int64_t, int64_t, int64_t, bool, \
                                bool);                                                         \
  template void silu_and_mul<T>(T*, int64_t, const T*, int64_t, int64_t, int64_t, int64_t, bool); \
  template void gated_attention<T>(T*, int64_t, const T*, int64_t, const T*, int64_t, int64_t,  \
                                   int64_t, int64_t, int64_t);

LTX_INSTANTIATE_CPU_ACTIVATION(float)
LTX_INSTANTIATE_CPU_ACTIVATION(half_t)
LTX_INSTANTIATE_CPU_ACTIVATION(bfloat16_t)
#undef LTX_INSTANTIATE_CPU_ACTIVATION

}  // namespace cpu
}  // namespace ltx_kernels
