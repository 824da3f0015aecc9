#include <cmath>
#include <vector>

#include "ltx_kernels/cpu/ops.h"
#include "ltx_kernels/cpu/shared_rows.h"

namespace ltx_kernels {
namespace cpu {
namespace {

constexpr int64_t kGrain = 16;  // rows per task

template <typename T, typename TT>
void row_f32(float* out, float* y, const T* xr, int64_t r, const T* weight, bool norm, float eps,
             const RopeTables& tables, const RopeShape& shape) {
  const TT* cos = static_cast<const TT*>(tables.cos);
  const TT* sin = static_cast<const TT*>(tables.sin);
  const RopeTableStrides cs = tables.cos_strides, ss = tables.sin_strides;
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

// The whole family: with `norm`, the RMSNorm first; then the rotation p.shape.split selects.
void rope_rows(const RopeParams& p, bool norm, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    const T* weight = norm ? static_cast<const T*>(p.weight) : nullptr;
    parallel_for(p.x.layout.rows, kGrain, [&](int64_t rb, int64_t re) {
      const size_t cols = static_cast<size_t>(p.shape.cols);
      std::vector<float> y(cols), o(cols);  // x may alias out: the row is read before it is written
      for (int64_t r = rb; r < re; ++r) {
        rope_row_f32<T>(o.data(), y.data(), p.x.ptr<T>() + r * p.x.layout.stride, r, weight, norm, p.eps,
                        p.tables, p.shape);
        T* orow = p.out.ptr<T>() + r * p.out.layout.stride;
        for (size_t c = 0; c < cols; ++c) orow[c] = from_float<T>(o[c]);
      }
    });
  });
}

}  // namespace

template <typename T>
void rope_row_f32(float* out, float* scratch, const T* xr, int64_t r, const T* weight, bool norm,
                  float eps, const RopeTables& tables, const RopeShape& shape) {
  dispatch_tables<T>(tables, [&](auto tag) {
    row_f32<T, type_of<decltype(tag)>>(out, scratch, xr, r, weight, norm, eps, tables, shape);
  });
}

template void rope_row_f32<float>(float*, float*, const float*, int64_t, const float*, bool, float,
                                  const RopeTables&, const RopeShape&);
template void rope_row_f32<half_t>(float*, float*, const half_t*, int64_t, const half_t*, bool, float,
                                   const RopeTables&, const RopeShape&);
template void rope_row_f32<bfloat16_t>(float*, float*, const bfloat16_t*, int64_t, const bfloat16_t*, bool,
                                       float, const RopeTables&, const RopeShape&);

void rms_norm_rope(const RopeParams& p, const ParallelFor& parallel_for) { rope_rows(p, true, parallel_for); }
void rms_norm_split_rope(const RopeParams& p, const ParallelFor& parallel_for) { rope_rows(p, true, parallel_for); }
void apply_rope(const RopeParams& p, const ParallelFor& parallel_for) { rope_rows(p, false, parallel_for); }

}  // namespace cpu
}  // namespace ltx_kernels
