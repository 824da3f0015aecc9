#include <cmath>
#include <vector>

#include "ltx_kernels/cpu/ops.h"

namespace ltx_kernels {
namespace cpu {
namespace {

constexpr int64_t kGrain = 16;  // rows per task

template <typename T>
void rms_norm_rows(const RmsNormParams& p, int64_t row_begin, int64_t row_end) {
  const int64_t cols = p.x.layout.cols;
  const T* weight = static_cast<const T*>(p.weight);
  std::vector<float> row(static_cast<size_t>(cols));  // x may alias out: read the row first
  for (int64_t r = row_begin; r < row_end; ++r) {
    const T* xr = p.x.ptr<T>() + r * p.x.layout.stride;
    double ss = 0.0;  // double: a sequential fp32 sum is noisier than the GPU's tree
    for (int64_t c = 0; c < cols; ++c) {
      row[c] = to_float(xr[c]);
      ss += double(row[c]) * double(row[c]);
    }
    const float rstd = 1.f / std::sqrt(float(ss / double(cols)) + p.eps);
    T* orow = p.out.ptr<T>() + r * p.out.layout.stride;
    for (int64_t c = 0; c < cols; ++c) {
      const float w = weight != nullptr ? to_float(weight[c]) : 1.f;
      orow[c] = from_float<T>(row[c] * rstd * w);
    }
  }
}

}  // namespace

void rms_norm(const RmsNormParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    parallel_for(p.x.layout.rows, kGrain, [&](int64_t b, int64_t e) { rms_norm_rows<T>(p, b, e); });
  });
}

}  // namespace cpu
}  // namespace ltx_kernels
