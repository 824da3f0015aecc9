// CPU backend of the ops with FP8 per-token-group output: y in fp32 (the plain CPU ops'
// arithmetic, same order), then the per-token-group quantizer's row routine on the fp32 row.
#include "ltx_kernels/cpu/ops.h"
#include "ltx_kernels/cpu/shared_rows.h"

#include <cmath>
#include <utility>
#include <vector>

#include "ltx_kernels/cpu/activation_math.h"

namespace ltx_kernels {
namespace cpu {
namespace {

constexpr int64_t kGrain = 16;  // rows per task

void quantize_row(const Fp8GroupOut& o, int64_t r, const float* y, int64_t cols) {
  quantize_fp8_groups<float>(o.q + r * o.q_stride, o.scales + r * o.s_row, o.s_col, y, cols, o.group,
                             Fp8Format::E4M3);
}

template <typename T>
const T* entry(const ModTable<T>& t, int64_t row) {
  return t.data == nullptr ? nullptr : t.data + (row / t.rows_per_entry) * t.stride;
}

// v: the prologue value (fp32 of T); y := rms_norm(v) * w [* (1 + scale) + shift]; rstd as the
// plain CPU norms compute it, 1 / sqrt(float(ss / C) + eps) with ss summed in double.
template <typename T>
void norm_row(const std::vector<float>& v, std::vector<float>& y, const T* w, const T* sc,
              const T* sh, int64_t C, float eps) {
  double s = 0.0;
  for (int64_t c = 0; c < C; ++c) s += double(v[c]) * double(v[c]);
  const float rstd = 1.f / std::sqrt(float(s / double(C)) + eps);
  for (int64_t c = 0; c < C; ++c) {
    float f = v[c] * rstd;
    if (w != nullptr) f *= to_float(w[c]);
    if (sc != nullptr) f = f * (1.f + to_float(sc[c])) + to_float(sh[c]);
    y[c] = f;
  }
}

// Rows of `rows` x `cols`: row(r, y) fills y (cols floats), then y is quantized; T from dtype.
template <class P, class Row>
void fp8_rows(const Fp8OutParams<P>& p, int64_t rows, int64_t cols, const ParallelFor& parallel_for, Row&& row) {
  dispatch_cpu(p.op.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    parallel_for(rows, kGrain, [&](int64_t b, int64_t e) {
      std::vector<float> y(static_cast<size_t>(cols)), scratch(static_cast<size_t>(cols));
      for (int64_t r = b; r < e; ++r) {
        row(TypeTag<T>{}, r, y, scratch);
        quantize_row(p.q, r, y.data(), cols);
      }
    });
  });
}

// The modulation (scale, shift) rows of row r: rms_norm_fp8 has none.
template <typename T>
std::pair<const T*, const T*> mod_rows(const RmsNormParams&, int64_t) {
  return {nullptr, nullptr};
}

template <typename T>
std::pair<const T*, const T*> mod_rows(const FusedNormParams& a, int64_t r) {
  return {entry(typed<T>(a.scale), r), entry(typed<T>(a.shift), r)};
}

// rms_norm_fp8 and adaln_rms_norm_fp8 (GATED false), gated_residual_adaln_rms_norm_fp8 (h_out =
// round(h + y * gate) written first; the norm sees it as stored).
template <bool GATED, class Params>
void norm_fp8(const Params& p, const ParallelFor& parallel_for) {
  const auto& a = p.op;
  const int64_t cols = a.x.layout.cols;
  fp8_rows(p, a.x.layout.rows, cols, parallel_for, [&](auto tag, int64_t r, std::vector<float>& y, std::vector<float>& v) {
    using T = type_of<decltype(tag)>;
    const T* xr = a.x.template ptr<T>() + r * a.x.layout.stride;
    if constexpr (GATED) {
      const T* yr = a.x2.template ptr<T>() + r * a.x2.layout.stride;
      const T* g = entry(typed<T>(a.gate), r);
      T* ho = a.residual_out.template ptr<T>() + r * a.residual_out.layout.stride;
      for (int64_t c = 0; c < cols; ++c) {  // h_out may be h: each element read before written
        const float prod = to_float(yr[c]) * to_float(g[c]);  // fp32 product, then fp32 sum
        const T rounded = from_float<T>(to_float(xr[c]) + prod);
        v[c] = to_float(rounded);
        ho[c] = rounded;
      }
    } else {
      for (int64_t c = 0; c < cols; ++c) v[c] = to_float(xr[c]);
    }
    const std::pair<const T*, const T*> mod = mod_rows<T>(a, r);
    norm_row<T>(v, y, static_cast<const T*>(a.weight), mod.first, mod.second, cols, a.eps);
  });
}

template <class Act>
void and_mul_fp8(const AndMulFp8Params& p, const ParallelFor& parallel_for) {
  const AndMulParams& a = p.op;
  const int64_t d = a.x.layout.cols / 2;
  fp8_rows(p, a.x.layout.rows, d, parallel_for, [&](auto tag, int64_t r, std::vector<float>& y, std::vector<float>&) {
    using T = type_of<decltype(tag)>;
    const T* ar = a.x.ptr<T>() + r * a.x.layout.stride;
    const T* br = ar + d;
    for (int64_t c = 0; c < d; ++c) {
      const float u = to_float(ar[c]), w = to_float(br[c]);
      y[c] = a.act_first ? Act::f(u) * w : u * Act::f(w);
    }
  });
}

void rope_fp8(const RopeFp8Params& p, const ParallelFor& parallel_for) {
  const RopeParams& a = p.op;
  fp8_rows(p, a.x.layout.rows, a.shape.cols, parallel_for,
           [&](auto tag, int64_t r, std::vector<float>& y, std::vector<float>& scratch) {
             using T = type_of<decltype(tag)>;
             rope_row_f32<T>(y.data(), scratch.data(), a.x.ptr<T>() + r * a.x.layout.stride, r,
                             static_cast<const T*>(a.weight), true, a.eps, a.tables, a.shape);
           });
}

}  // namespace

void rms_norm_fp8(const RmsNormFp8Params& p, const ParallelFor& parallel_for) {
  norm_fp8<false>(p, parallel_for);
}

void adaln_rms_norm_fp8(const FusedNormFp8Params& p, const ParallelFor& parallel_for) {
  norm_fp8<false>(p, parallel_for);
}

void gated_residual_adaln_rms_norm_fp8(const FusedNormFp8Params& p, const ParallelFor& parallel_for) {
  norm_fp8<true>(p, parallel_for);
}

void silu_and_mul_fp8(const AndMulFp8Params& p, const ParallelFor& parallel_for) {
  and_mul_fp8<act::Silu>(p, parallel_for);
}

void gelu_and_mul_fp8(const AndMulFp8Params& p, const ParallelFor& parallel_for) {
  if (p.op.tanh_approx) and_mul_fp8<act::GeluTanh>(p, parallel_for);
  else and_mul_fp8<act::GeluErf>(p, parallel_for);
}

void gelu_tanh_fp8(const ActivationFp8Params& p, const ParallelFor& parallel_for) {
  const ActivationParams& a = p.op;
  const int64_t cols = a.x.layout.cols;
  fp8_rows(p, a.x.layout.rows, cols, parallel_for, [&](auto tag, int64_t r, std::vector<float>& y, std::vector<float>&) {
    using T = type_of<decltype(tag)>;
    const T* xr = a.x.ptr<T>() + r * a.x.layout.stride;
    for (int64_t c = 0; c < cols; ++c) y[c] = act::GeluTanh::f(to_float(xr[c]));
  });
}

void gated_attention_fp8(const GatedAttentionFp8Params& p, const ParallelFor& parallel_for) {
  const GatedAttentionParams& a = p.op;
  fp8_rows(p, a.x.layout.rows, a.heads * a.head_dim, parallel_for,
           [&](auto tag, int64_t r, std::vector<float>& y, std::vector<float>&) {
             using T = type_of<decltype(tag)>;
             const T* xr = a.x.ptr<T>() + r * a.x.layout.stride;
             const T* gr = a.gate.ptr<T>() + r * a.gate.layout.stride;
             for (int64_t hh = 0; hh < a.heads; ++hh) {
               const float s = 2.f / (1.f + std::exp(-to_float(gr[hh])));
               for (int64_t j = 0; j < a.head_dim; ++j)
                 y[hh * a.head_dim + j] = to_float(xr[hh * a.head_dim + j]) * s;
             }
           });
}

void rms_norm_rope_fp8(const RopeFp8Params& p, const ParallelFor& parallel_for) { rope_fp8(p, parallel_for); }
void rms_norm_split_rope_fp8(const RopeFp8Params& p, const ParallelFor& parallel_for) { rope_fp8(p, parallel_for); }

}  // namespace cpu
}  // namespace ltx_kernels
