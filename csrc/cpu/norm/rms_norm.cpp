#include <cmath>
#include <vector>

#include "ltx_kernels/cpu/norm.h"

namespace ltx_kernels {
namespace cpu {

template <typename T>
void rms_norm(T* out, int64_t out_stride, const T* x, int64_t x_stride, const T* weight,
              int64_t row_begin, int64_t row_end, int64_t cols, float eps) {
  std::vector<float> row(static_cast<size_t>(cols));  // x may alias out: read the row first
  for (int64_t r = row_begin; r < row_end; ++r) {
    const T* xr = x + r * x_stride;
    double ss = 0.0;  // double: a sequential fp32 sum is noisier than the GPU's tree
    for (int64_t c = 0; c < cols; ++c) {
      row[c] = to_float(xr[c]);
      ss += double(row[c]) * double(row[c]);
    }
    const float rstd = 1.f / std::sqrt(float(ss / double(cols)) + eps);
    T* orow = out + r * out_stride;
    for (int64_t c = 0; c < cols; ++c) {
      const float w = weight != nullptr ? to_float(weight[c]) : 1.f;
      orow[c] = from_float<T>(row[c] * rstd * w);
    }
  }
}

template void rms_norm<float>(float*, int64_t, const float*, int64_t, const float*, int64_t,
                              int64_t, int64_t, float);
template void rms_norm<half_t>(half_t*, int64_t, const half_t*, int64_t, const half_t*, int64_t,
                               int64_t, int64_t, float);
template void rms_norm<bfloat16_t>(bfloat16_t*, int64_t, const bfloat16_t*, int64_t,
                                   const bfloat16_t*, int64_t, int64_t, int64_t, float);

}  // namespace cpu
}  // namespace ltx_kernels
