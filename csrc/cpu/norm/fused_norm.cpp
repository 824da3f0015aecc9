// CPU backend of the fused norms: one generic row routine (prologue, statistic, epilogue)
// shared by every op, mirroring the CUDA Policy in ltx_kernels/norm/fused_norm.cuh.
#include <cmath>
#include <vector>

#include "ltx_kernels/cpu/ops.h"

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

constexpr int64_t kGrain = 16;  // rows per task

template <Prologue P, bool LAYER_NORM, bool MODULATE>
void run(const FusedNormParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    Args<T> a = fused_norm_args<T, Args<T>>(p);
    a.cols = p.x.layout.cols;
    parallel_for(p.x.layout.rows, kGrain, [&](int64_t b, int64_t e) { run_rows<P, LAYER_NORM, MODULATE>(a, b, e); });
  });
}

}  // namespace

void add_rms_norm(const FusedNormParams& p, const ParallelFor& parallel_for) {
  run<Prologue::kAdd, false, false>(p, parallel_for);
}

void layer_norm(const FusedNormParams& p, const ParallelFor& parallel_for) {
  run<Prologue::kLoad, true, false>(p, parallel_for);
}

void adaln_rms_norm(const FusedNormParams& p, const ParallelFor& parallel_for) {
  run<Prologue::kLoad, false, true>(p, parallel_for);
}

void adaln_layer_norm(const FusedNormParams& p, const ParallelFor& parallel_for) {
  run<Prologue::kLoad, true, true>(p, parallel_for);
}

void gated_residual_adaln_rms_norm(const FusedNormParams& p, const ParallelFor& parallel_for) {
  run<Prologue::kGatedAdd, false, true>(p, parallel_for);
}

}  // namespace cpu
}  // namespace ltx_kernels
