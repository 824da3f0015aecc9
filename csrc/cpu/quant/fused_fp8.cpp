#include <type_traits>
// CPU backend of the ops with FP8 per-token-group output: y in fp32 (the plain CPU ops'
// arithmetic, same order), then cpu::quantize_fp8_per_token_group on the fp32 row.
#include "ltx_kernels/cpu/activation_math.h"
#include "ltx_kernels/cpu/fused_fp8.h"

#include <cmath>
#include <vector>

#include "ltx_kernels/cpu/fp8.h"
#include "ltx_kernels/cpu/rope.h"

namespace ltx_kernels {
namespace cpu {
namespace {

void quantize_row(const Fp8GroupOutCpu& o, int64_t r, const float* y, int64_t cols) {
  // One row through the per-token-group quantizer's row routine.
  quantize_fp8_groups<float>(o.q + r * o.q_stride, o.scales + r * o.s_row, o.s_col, y, cols, o.group,
                             Fp8Format::E4M3);
}

template <typename T>
const T* entry(const ModTable<T>& t, int64_t row) {
  return t.data + (row / t.rows_per_entry) * t.stride;
}

// v: the prologue value (fp32 of T); y := rms_norm(v) * w [* (1 + scale) + shift].
// RMS_DIV: the standalone rms_norm's rstd = 1 / sqrt(float(ss / C) + eps) (as the fused ones).
template <typename T>
void norm_row(const std::vector<float>& v, std::vector<float>& y, const T* w, const T* sc,
              const T* sh, int64_t C, float eps) {
  double s = 0.0;  // double: as the plain CPU norms
  for (int64_t c = 0; c < C; ++c) s += double(v[c]) * double(v[c]);
  const float rstd = 1.f / std::sqrt(float(s / double(C)) + eps);
  for (int64_t c = 0; c < C; ++c) {
    float f = v[c] * rstd;
    if (w != nullptr) f *= to_float(w[c]);
    if (sc != nullptr) f = f * (1.f + to_float(sc[c])) + to_float(sh[c]);
    y[c] = f;
  }
}

using act::GeluErf;
using act::GeluTanh;
using act::Silu;

template <class Act, typename T>
void and_mul(const Fp8GroupOutCpu& o, const T* x, int64_t xs, int64_t rb, int64_t re, int64_t d,
             bool act_first) {
  std::vector<float> y(static_cast<size_t>(d));
  for (int64_t r = rb; r < re; ++r) {
    const T* ar = x + r * xs;
    const T* br = ar + d;
    for (int64_t c = 0; c < d; ++c) {
      const float a = to_float(ar[c]), b = to_float(br[c]);
      y[c] = act_first ? Act::f(a) * b : a * Act::f(b);
    }
    quantize_row(o, r, y.data(), d);
  }
}

}  // namespace

template <typename T>
void rms_norm_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, const T* weight,
                  int64_t row_begin, int64_t row_end, int64_t cols, float eps) {
  std::vector<float> v(static_cast<size_t>(cols)), y(static_cast<size_t>(cols));
  for (int64_t r = row_begin; r < row_end; ++r) {
    const T* xr = x + r * x_stride;
    for (int64_t c = 0; c < cols; ++c) v[c] = to_float(xr[c]);
    norm_row<T>(v, y, weight, nullptr, nullptr, cols, eps);
    quantize_row(o, r, y.data(), cols);
  }
}

template <typename T>
void adaln_rms_norm_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, ModTable<T> scale,
                        ModTable<T> shift, const T* weight, int64_t row_begin, int64_t row_end,
                        int64_t cols, float eps) {
  std::vector<float> v(static_cast<size_t>(cols)), y(static_cast<size_t>(cols));
  for (int64_t r = row_begin; r < row_end; ++r) {
    const T* xr = x + r * x_stride;
    for (int64_t c = 0; c < cols; ++c) v[c] = to_float(xr[c]);
    norm_row<T>(v, y, weight, entry(scale, r), entry(shift, r), cols, eps);
    quantize_row(o, r, y.data(), cols);
  }
}

template <typename T>
void gated_residual_adaln_rms_norm_fp8(const Fp8GroupOutCpu& o, T* h_out, int64_t h_out_stride,
                                       const T* h, int64_t h_stride, const T* y_in,
                                       int64_t y_stride, ModTable<T> gate, ModTable<T> scale,
                                       ModTable<T> shift, const T* weight, int64_t row_begin,
                                       int64_t row_end, int64_t cols, float eps) {
  std::vector<float> v(static_cast<size_t>(cols)), y(static_cast<size_t>(cols));
  for (int64_t r = row_begin; r < row_end; ++r) {
    const T* hr = h + r * h_stride;
    const T* yr = y_in + r * y_stride;
    const T* g = entry(gate, r);
    T* ho = h_out + r * h_out_stride;
    for (int64_t c = 0; c < cols; ++c) {  // h_out may be h: each element read before written
      const float prod = to_float(yr[c]) * to_float(g[c]);  // fp32 product, then fp32 sum
      const T rounded = from_float<T>(to_float(hr[c]) + prod);
      v[c] = to_float(rounded);  // the norm sees h_new as stored
      ho[c] = rounded;
    }
    norm_row<T>(v, y, weight, entry(scale, r), entry(shift, r), cols, eps);
    quantize_row(o, r, y.data(), cols);
  }
}

template <typename T>
void act_and_mul_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, int64_t row_begin,
                     int64_t row_end, int64_t d, int act, bool act_first) {
  if (act == 0) and_mul<Silu>(o, x, x_stride, row_begin, row_end, d, act_first);
  else if (act == 1) and_mul<GeluErf>(o, x, x_stride, row_begin, row_end, d, act_first);
  else and_mul<GeluTanh>(o, x, x_stride, row_begin, row_end, d, act_first);
}

template <typename T>
void gelu_tanh_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, int64_t row_begin,
                   int64_t row_end, int64_t cols) {
  std::vector<float> y(static_cast<size_t>(cols));
  for (int64_t r = row_begin; r < row_end; ++r) {
    const T* xr = x + r * x_stride;
    for (int64_t c = 0; c < cols; ++c) y[c] = GeluTanh::f(to_float(xr[c]));
    quantize_row(o, r, y.data(), cols);
  }
}

template <typename T>
void gated_attention_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, const T* gate,
                         int64_t gate_stride, int64_t row_begin, int64_t row_end, int64_t heads,
                         int64_t head_dim) {
  const int64_t cols = heads * head_dim;
  std::vector<float> y(static_cast<size_t>(cols));
  for (int64_t r = row_begin; r < row_end; ++r) {
    const T* xr = x + r * x_stride;
    const T* gr = gate + r * gate_stride;
    for (int64_t hh = 0; hh < heads; ++hh) {
      const float s = 2.f / (1.f + std::exp(-to_float(gr[hh])));
      for (int64_t j = 0; j < head_dim; ++j) y[hh * head_dim + j] = to_float(xr[hh * head_dim + j]) * s;
    }
    quantize_row(o, r, y.data(), cols);
  }
}

namespace {
template <typename T, typename TT>
void norm_rope_rows_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, const T* weight,
                        const TT* cos, RopeTableStrides cs, const TT* sin, RopeTableStrides ss,
                        const RopeShape& shape, float eps, int64_t row_begin, int64_t row_end) {
  const size_t cols = static_cast<size_t>(shape.cols);
  std::vector<float> y(cols), scratch(cols);
  for (int64_t r = row_begin; r < row_end; ++r) {
    rope_row_f32<T>(y.data(), scratch.data(), x + r * x_stride, r, weight, true, eps,
                    RopeTables{cos, sin, cs, ss, std::is_same<TT, float>::value}, shape);
    quantize_row(o, r, y.data(), shape.cols);
  }
}
}  // namespace

template <typename T, typename TT>
void rms_norm_rope_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, const T* weight,
                       const TT* cos, RopeTableStrides cs, const TT* sin, RopeTableStrides ss,
                       const RopeShape& shape, float eps, int64_t row_begin, int64_t row_end) {
  norm_rope_rows_fp8<T, TT>(o, x, x_stride, weight, cos, cs, sin, ss, shape, eps, row_begin, row_end);
}

template <typename T, typename TT>
void rms_norm_split_rope_fp8(const Fp8GroupOutCpu& o, const T* x, int64_t x_stride, const T* weight,
                             const TT* cos, RopeTableStrides cs, const TT* sin, RopeTableStrides ss,
                             const RopeShape& shape, float eps, int64_t row_begin, int64_t row_end) {
  norm_rope_rows_fp8<T, TT>(o, x, x_stride, weight, cos, cs, sin, ss, shape, eps, row_begin, row_end);
}

#define LTX_INSTANTIATE_CPU_ROPE_FP8(T, TT)                                                      \
  template void rms_norm_rope_fp8<T, TT>(const Fp8GroupOutCpu&, const T*, int64_t, const T*,     \
                                         const TT*, RopeTableStrides, const TT*,                 \
                                         RopeTableStrides, const RopeShape&, float, int64_t,     \
                                         int64_t);                                               \
  template void rms_norm_split_rope_fp8<T, TT>(const Fp8GroupOutCpu&, const T*, int64_t,         \
                                               const T*, const TT*, RopeTableStrides, const TT*, \
                                               RopeTableStrides, const RopeShape&, float,        \
                                               int64_t, int64_t);
LTX_INSTANTIATE_CPU_ROPE_FP8(float, float)
LTX_INSTANTIATE_CPU_ROPE_FP8(half_t, half_t)
LTX_INSTANTIATE_CPU_ROPE_FP8(half_t, float)
LTX_INSTANTIATE_CPU_ROPE_FP8(bfloat16_t, bfloat16_t)
LTX_INSTANTIATE_CPU_ROPE_FP8(bfloat16_t, float)
#undef LTX_INSTANTIATE_CPU_ROPE_FP8

#define LTX_INSTANTIATE_CPU_FUSED_FP8(T)                                                          \
  template void rms_norm_fp8<T>(const Fp8GroupOutCpu&, const T*, int64_t, const T*, int64_t,      \
                                int64_t, int64_t, float);                                         \
  template void adaln_rms_norm_fp8<T>(const Fp8GroupOutCpu&, const T*, int64_t, ModTable<T>,      \
                                      ModTable<T>, const T*, int64_t, int64_t, int64_t, float);   \
  template void gated_residual_adaln_rms_norm_fp8<T>(                                             \
      const Fp8GroupOutCpu&, T*, int64_t, const T*, int64_t, const T*, int64_t, ModTable<T>,      \
      ModTable<T>, ModTable<T>, const T*, int64_t, int64_t, int64_t, float);                      \
  template void act_and_mul_fp8<T>(const Fp8GroupOutCpu&, const T*, int64_t, int64_t, int64_t,    \
                                   int64_t, int, bool);                                           \
  template void gelu_tanh_fp8<T>(const Fp8GroupOutCpu&, const T*, int64_t, int64_t, int64_t,      \
                                 int64_t);                                                        \
  template void gated_attention_fp8<T>(const Fp8GroupOutCpu&, const T*, int64_t, const T*,        \
                                       int64_t, int64_t, int64_t, int64_t, int64_t);

LTX_INSTANTIATE_CPU_FUSED_FP8(float)
LTX_INSTANTIATE_CPU_FUSED_FP8(half_t)
LTX_INSTANTIATE_CPU_FUSED_FP8(bfloat16_t)

}  // namespace cpu
}  // namespace ltx_kernels
