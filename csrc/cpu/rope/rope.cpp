#include <cmath>
#include <vector>

#include "ltx_kernels/cpu/rope.h"

namespace ltx_kernels {
namespace cpu {

template <typename T, typename TT>
void rope_row_f32(float* out, float* y, const T* xr, int64_t r, const T* weight, bool norm,
                  float eps, const TT* cos, RopeTableStrides cs, const TT* sin,
                  RopeTableStrides ss, const RopeShape& shape) {
  const int64_t cols = shape.cols;
  const int64_t d = shape.head_dim;
  const int64_t heads = cols / d;
  double sumsq = 0.0;  // double: a sequential fp32 sum is noisier than the GPU's tree
  for (int64_t c = 0; c < cols; ++c) {
    y[c] = to_float(xr[c]);
    sumsq += double(y[c]) * double(y[c]);
  }
  if (norm) {
    const float rstd = 1.f / std::sqrt(float(sumsq / double(cols)) + eps);
    for (int64_t c = 0; c < cols; ++c)
      y[c] = y[c] * rstd * (weight != nullptr ? to_float(weight[c]) : 1.f);
  }
  const int64_t b = r / shape.seq;
  const int64_t s = r - b * shape.seq;
  for (int64_t h = 0; h < heads; ++h) {
    const TT* ct = cos + b * cs.b + h * cs.h + s * cs.s;  // (d) or (d/2)
    const TT* st = sin + b * ss.b + h * ss.h + s * ss.s;
    const float* yh = y + h * d;
    float* oh = out + h * d;
    if (shape.split) {
      const int64_t half = d / 2;
      for (int64_t j = 0; j < half; ++j) {
        const float c = to_float(ct[j]), sn = to_float(st[j]);
        const float a = yh[j], bb = yh[j + half];
        oh[j] = a * c - bb * sn;
        oh[j + half] = bb * c + a * sn;
      }
    } else {
      for (int64_t j = 0; j < d; j += 2) {
        const float a = yh[j], bb = yh[j + 1];
        oh[j] = a * to_float(ct[j]) - bb * to_float(st[j]);
        oh[j + 1] = a * to_float(st[j + 1]) + bb * to_float(ct[j + 1]);
      }
    }
  }
}

template <typename T, typename TT>
void rope_rows(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* weight,
               bool norm, float eps, const TT* cos, RopeTableStrides cs, const TT* sin,
               RopeTableStrides ss, const RopeShape& shape, int64_t row_begin, int64_t row_end) {
  const size_t cols = static_cast<size_t>(shape.cols);
  std::vector<float> y(cols), o(cols);  // x may alias out: the row is read before it is written
  for (int64_t r = row_begin; r < row_end; ++r) {
    rope_row_f32<T, TT>(o.data(), y.data(), x + r * x_stride, r, weight, norm, eps, cos, cs, sin,
                        ss, shape);
    T* orow = out + r * out_stride;
    for (size_t c = 0; c < cols; ++c) orow[c] = from_float<T>(o[c]);
  }
}

#define LTX_ROPE_INSTANTIATE(T, TT)                                                           \
  template void rope_rows<T, TT>(T*, int64_t, const T*, int64_t, const T*, bool, float,       \
                                 const TT*, RopeTableStrides, const TT*, RopeTableStrides,    \
                                 const RopeShape&, int64_t, int64_t);                         \
  template void rope_row_f32<T, TT>(float*, float*, const T*, int64_t, const T*, bool, float, \
                                    const TT*, RopeTableStrides, const TT*, RopeTableStrides, \
                                    const RopeShape&);

LTX_ROPE_INSTANTIATE(float, float)
LTX_ROPE_INSTANTIATE(half_t, half_t)
LTX_ROPE_INSTANTIATE(half_t, float)
LTX_ROPE_INSTANTIATE(bfloat16_t, bfloat16_t)
LTX_ROPE_INSTANTIATE(bfloat16_t, float)
#undef LTX_ROPE_INSTANTIATE

}  // namespace cpu
}  // namespace ltx_kernels
