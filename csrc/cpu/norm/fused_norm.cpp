// CPU backend of the fused norms: one generic row routine (prologue, statistic, epilogue)
// shared by every op, mirroring the CUDA Policy in ltx_kernels/norm/fused_norm.cuh.
#include <cmath>
#include <vector>

#include "ltx_kernels/cpu/fused_norm.h"

namespace ltx_kernels {
namespace cpu {
namespace {

enum class Prologue { kLoad, kAdd, kGatedAdd };

template <typename T>
struct Args {
  T* out;
  int64_t out_stride;
  T* res_out;  // rounded prologue value, or nullptr (kLoad)
  int64_t res_out_stride;
  const T* x;
  int64_t x_stride;
  const T* x2;  // residual (kAdd) / y (kGatedAdd)
  int64_t x2_stride;
  const T* weight;
  const T* bias;
  ModTable<T> gate, scale, shift;
  int64_t cols;
  float eps;
};

template <typename T>
const T* entry(const ModTable<T>& t, int64_t row) {
  return t.data + (row / t.rows_per_entry) * t.stride;
}

template <Prologue P, bool LAYER_NORM, bool MODULATE, typename T>
void run_rows(const Args<T>& a, int64_t row_begin, int64_t row_end) {
  const int64_t C = a.cols;
  std::vector<float> v(static_cast<size_t>(C));  // outputs may alias inputs: read the row first
  for (int64_t r = row_begin; r < row_end; ++r) {
    const T* xr = a.x + r * a.x_stride;
    if constexpr (P == Prologue::kLoad) {
      for (int64_t c = 0; c < C; ++c) v[c] = to_float(xr[c]);
    } else {
      const T* x2r = a.x2 + r * a.x2_stride;
      T* res = a.res_out + r * a.res_out_stride;
      const T* g = P == Prologue::kGatedAdd ? entry(a.gate, r) : nullptr;
      for (int64_t c = 0; c < C; ++c) {
        float f;
        if constexpr (P == Prologue::kGatedAdd) {
          const float prod = to_float(x2r[c]) * to_float(g[c]);  // fp32 product, then fp32 sum
          f = to_float(xr[c]) + prod;
        } else {
          f = to_float(xr[c]) + to_float(x2r[c]);
        }
        const T rounded = from_float<T>(f);
        v[c] = to_float(rounded);  // the norm sees the value as stored
        res[c] = rounded;
      }
    }
    // Row sums accumulate in double: a sequential fp32 sum over thousands of terms loses
    // more than the GPU's tree reduction does (the reference backend must not be the noisier).
    float mean = 0.f, var;
    if constexpr (LAYER_NORM) {
      double s = 0.0;
      for (int64_t c = 0; c < C; ++c) s += v[c];
      mean = float(s / double(C));
      double d = 0.0;
      for (int64_t c = 0; c < C; ++c) d += double(v[c] - mean) * double(v[c] - mean);
      var = float(d / double(C));
    } else {
      double s = 0.0;
      for (int64_t c = 0; c < C; ++c) s += double(v[c]) * double(v[c]);
      var = float(s / double(C));
    }
    const float rstd = 1.f / std::sqrt(var + a.eps);
    T* orow = a.out + r * a.out_stride;
    const T* sc = MODULATE ? entry(a.scale, r) : nullptr;
    const T* sh = MODULATE ? entry(a.shift, r) : nullptr;
    for (int64_t c = 0; c < C; ++c) {
      float f = (v[c] - mean) * rstd;
      if (a.weight != nullptr) f *= to_float(a.weight[c]);
      if (a.bias != nullptr) f += to_float(a.bias[c]);
      if constexpr (MODULATE) f = f * (1.f + to_float(sc[c])) + to_float(sh[c]);
      orow[c] = from_float<T>(f);
    }
  }
}

template <typename T>
Args<T> base_args(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* weight,
                  const T* bias, int64_t cols, float eps) {
  Args<T> a{};
  a.out = out;
  a.out_stride = out_stride;
  a.x = x;
  a.x_stride = x_stride;
  a.weight = weight;
  a.bias = bias;
  a.gate = a.scale = a.shift = ModTable<T>{nullptr, 0, 1};
  a.cols = cols;
  a.eps = eps;
  return a;
}

}  // namespace

template <typename T>
void add_rms_norm(T* out, int64_t out_stride, T* residual_out, int64_t residual_out_stride,
                  const T* x, int64_t x_stride, const T* residual, int64_t residual_stride,
                  const T* weight, int64_t row_begin, int64_t row_end, int64_t cols, float eps) {
  Args<T> a = base_args<T>(out, out_stride, x, x_stride, weight, nullptr, cols, eps);
  a.res_out = residual_out;
  a.res_out_stride = residual_out_stride;
  a.x2 = residual;
  a.x2_stride = residual_stride;
  run_rows<Prologue::kAdd, false, false>(a, row_begin, row_end);
}

template <typename T>
void layer_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* weight,
                const T* bias, int64_t row_begin, int64_t row_end, int64_t cols, float eps) {
  run_rows<Prologue::kLoad, true, false>(
      base_args<T>(out, out_stride, x, x_stride, weight, bias, cols, eps), row_begin, row_end);
}

template <typename T>
void adaln_rms_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride, ModTable<T> scale,
                    ModTable<T> shift, const T* weight, int64_t row_begin, int64_t row_end,
                    int64_t cols, float eps) {
  Args<T> a = base_args<T>(out, out_stride, x, x_stride, weight, nullptr, cols, eps);
  a.scale = scale;
  a.shift = shift;
  run_rows<Prologue::kLoad, false, true>(a, row_begin, row_end);
}

template <typename T>
void adaln_layer_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride,
                      ModTable<T> scale, ModTable<T> shift, const T* weight, const T* bias,
                      int64_t row_begin, int64_t row_end, int64_t cols, float eps) {
  Args<T> a = base_args<T>(out, out_stride, x, x_stride, weight, bias, cols, eps);
  a.scale = scale;
  a.shift = shift;
  run_rows<Prologue::kLoad, true, true>(a, row_begin, row_end);
}

template <typename T>
void gated_residual_adaln_rms_norm(T* out, int64_t out_stride, T* h_out, int64_t h_out_stride,
                                   const T* h, int64_t h_stride, const T* y, int64_t y_stride,
                                   ModTable<T> gate, ModTable<T> scale, ModTable<T> shift,
                                   const T* weight, int64_t row_begin, int64_t row_end,
                                   int64_t cols, float eps) {
  Args<T> a = base_args<T>(out, out_stride, h, h_stride, weight, nullptr, cols, eps);
  a.res_out = h_out;
  a.res_out_stride = h_out_stride;
  a.x2 = y;
  a.x2_stride = y_stride;
  a.gate = gate;
  a.scale = scale;
  a.shift = shift;
  run_rows<Prologue::kGatedAdd, false, true>(a, row_begin, row_end);
}

#define LTX_CPU_FUSED_NORM_INSTANTIATE(T)                                                      \
  template void add_rms_norm<T>(T*, int64_t, T*, int64_t, const T*, int64_t, const T*, int64_t, \
                                const T*, int64_t, int64_t, int64_t, float);                   \
  template void layer_norm<T>(T*, int64_t, const T*, int64_t, const T*, const T*, int64_t,     \
                              int64_t, int64_t, float);                                        \
  template void adaln_rms_norm<T>(T*, int64_t, const T*, int64_t, ModTable<T>, ModTable<T>,    \
                                  const T*, int64_t, int64_t, int64_t, float);                 \
  template void adaln_layer_norm<T>(T*, int64_t, const T*, int64_t, ModTable<T>, ModTable<T>,  \
                                    const T*, const T*, int64_t, int64_t, int64_t, float);     \
  template void gated_residual_adaln_rms_norm<T>(T*, int64_t, T*, int64_t, const T*, int64_t,  \
                                                 const T*, int64_t, ModTable<T>, ModTable<T>,  \
                                                 ModTable<T>, const T*, int64_t, int64_t,      \
                                                 int64_t, float);

LTX_CPU_FUSED_NORM_INSTANTIATE(float)
LTX_CPU_FUSED_NORM_INSTANTIATE(half_t)
LTX_CPU_FUSED_NORM_INSTANTIATE(bfloat16_t)
#undef LTX_CPU_FUSED_NORM_INSTANTIATE

}  // namespace cpu
}  // namespace ltx_kernels
