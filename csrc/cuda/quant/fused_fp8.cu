// Fused op + FP8 per-token-group quantization: launchers and explicit instantiations.
// Kernels and byte counts: fused_fp8.cuh. Every entry checks the CUDA-path preconditions
// (fused_fp8.h) and alignment itself and returns cudaErrorInvalidValue /
// cudaErrorMisalignedAddress rather than launching on a problem it cannot take.
#include "ltx_kernels/quant/fused_fp8.cuh"
#include "ltx_kernels/quant/fused_fp8.h"

namespace ltx_kernels {
namespace {

using namespace fused_fp8_detail;
namespace fn = fused_norm_detail;

template <typename T>
bool table_ok(const ModTable<T>& t) {
  return rows_ok(t.data, t.stride);
}

template <typename T>
fn::Args<T> norm_args(const T* x, int64_t xs, const T* w, int64_t rows, int64_t cols, float eps) {
  fn::Args<T> a{};
  a.out = nullptr;
  a.out_stride = 0;
  a.res_out = nullptr;
  a.res_out_stride = 0;
  a.x = x;
  a.x_stride = xs;
  a.x2 = nullptr;
  a.x2_stride = 0;
  a.weight = w;
  a.bias = nullptr;
  a.gate = ModTable<T>{nullptr, 0, 1};
  a.scale = ModTable<T>{nullptr, 0, 1};
  a.shift = ModTable<T>{nullptr, 0, 1};
  a.rows = rows;
  a.cols = int(cols);
  a.inv_cols = 1.f / float(cols);
  a.eps = eps;
  return a;
}

}  // namespace

template <typename T>
cudaError_t rms_norm_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride, const T* weight,
                         int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cudaError_t e = precheck<T>(o, cols); e != cudaSuccess) return e;
  if (!rows_ok(x, x_stride) || !rows_ok(weight, 0)) return cudaErrorMisalignedAddress;
  using P = fn::Policy<fn::Prologue::kLoad, false, false>;
  const NormOp<P, T, true> op{norm_args(x, x_stride, weight, rows, cols, eps)};
  return launch<NormOp<P, T, true>, T>(op, o, rows, cols, stream);
}

template <typename T>
cudaError_t adaln_rms_norm_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride,
                               ModTable<T> scale, ModTable<T> shift, const T* weight,
                               int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cudaError_t e = precheck<T>(o, cols); e != cudaSuccess) return e;
  if (!rows_ok(x, x_stride) || !rows_ok(weight, 0) || !table_ok(scale) || !table_ok(shift))
    return cudaErrorMisalignedAddress;
  using P = fn::Policy<fn::Prologue::kLoad, false, true>;
  fn::Args<T> a = norm_args(x, x_stride, weight, rows, cols, eps);
  a.scale = scale;
  a.shift = shift;
  return launch<NormOp<P, T, false>, T>(NormOp<P, T, false>{a}, o, rows, cols, stream);
}

template <typename T>
cudaError_t gated_residual_adaln_rms_norm_fp8(const Fp8GroupOut& o, T* h_out, int64_t h_out_stride,
                                              const T* h, int64_t h_stride, const T* y_in,
                                              int64_t y_stride, ModTable<T> gate,
                                              ModTable<T> scale, ModTable<T> shift,
                                              const T* weight, int64_t rows, int64_t cols,
                                              float eps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cudaError_t e = precheck<T>(o, cols); e != cudaSuccess) return e;
  if (!rows_ok<T>(h_out, h_out_stride) || !rows_ok(h, h_stride) || !rows_ok(y_in, y_stride) ||
      !rows_ok(weight, 0) || !table_ok(gate) || !table_ok(scale) || !table_ok(shift))
    return cudaErrorMisalignedAddress;
  using P = fn::Policy<fn::Prologue::kGatedAdd, false, true>;
  fn::Args<T> a = norm_args(h, h_stride, weight, rows, cols, eps);
  a.res_out = h_out;
  a.res_out_stride = h_out_stride;
  a.x2 = y_in;
  a.x2_stride = y_stride;
  a.gate = gate;
  a.scale = scale;
  a.shift = shift;
  return launch<NormOp<P, T, false>, T>(NormOp<P, T, false>{a}, o, rows, cols, stream);
}

template <typename T>
cudaError_t act_and_mul_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride, int64_t rows,
                            int64_t d, Fp8Act act, bool act_first, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return cudaSuccess;
  if (cudaError_t e = precheck<T>(o, d); e != cudaSuccess) return e;
  if (!rows_ok(x, x_stride)) return cudaErrorMisalignedAddress;  // d % V == 0: x + d aligned too
  switch (act) {
    case Fp8Act::kSilu: {
      using Op = ActAndMulOp<act_detail::Silu, T>;
      return launch<Op, T>(Op{{}, x, x_stride, d, act_first}, o, rows, d, stream);
    }
    case Fp8Act::kGelu: {
      using Op = ActAndMulOp<act_detail::GeluErf, T>;
      return launch<Op, T>(Op{{}, x, x_stride, d, act_first}, o, rows, d, stream);
    }
    case Fp8Act::kGeluTanh: {
      using Op = ActAndMulOp<act_detail::GeluTanh, T>;
      return launch<Op, T>(Op{{}, x, x_stride, d, act_first}, o, rows, d, stream);
    }
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t gelu_tanh_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride, int64_t rows,
                          int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cudaError_t e = precheck<T>(o, cols); e != cudaSuccess) return e;
  if (!rows_ok(x, x_stride)) return cudaErrorMisalignedAddress;
  using Op = ActOp<act_detail::GeluTanh, T>;
  return launch<Op, T>(Op{{}, x, x_stride}, o, rows, cols, stream);
}

template <typename T>
cudaError_t gated_attention_fp8(const Fp8GroupOut& o, const T* x, int64_t x_stride, const T* gate,
                                int64_t gate_stride, int64_t rows, int64_t heads,
                                int64_t head_dim, cudaStream_t stream) {
  const int64_t cols = heads * head_dim;
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cudaError_t e = precheck<T>(o, cols); e != cudaSuccess) return e;
  if (!rows_ok(x, x_stride)) return cudaErrorMisalignedAddress;
  using Op = GatedAttentionOp<T>;
  return launch<Op, T>(Op{{}, x, x_stride, gate, gate_stride, int(head_dim)}, o, rows, cols, stream);
}

#define LTX_INSTANTIATE_FUSED_FP8(T)                                                              \
  template cudaError_t rms_norm_fp8<T>(const Fp8GroupOut&, const T*, int64_t, const T*, int64_t,  \
                                       int64_t, float, cudaStream_t);                             \
  template cudaError_t adaln_rms_norm_fp8<T>(const Fp8GroupOut&, const T*, int64_t, ModTable<T>,  \
                                             ModTable<T>, const T*, int64_t, int64_t, float,      \
                                             cudaStream_t);                                       \
  template cudaError_t gated_residual_adaln_rms_norm_fp8<T>(                                      \
      const Fp8GroupOut&, T*, int64_t, const T*, int64_t, const T*, int64_t, ModTable<T>,         \
      ModTable<T>, ModTable<T>, const T*, int64_t, int64_t, float, cudaStream_t);                 \
  template cudaError_t act_and_mul_fp8<T>(const Fp8GroupOut&, const T*, int64_t, int64_t, int64_t, \
                                          Fp8Act, bool, cudaStream_t);                            \
  template cudaError_t gelu_tanh_fp8<T>(const Fp8GroupOut&, const T*, int64_t, int64_t, int64_t,  \
                                        cudaStream_t);                                            \
  template cudaError_t gated_attention_fp8<T>(const Fp8GroupOut&, const T*, int64_t, const T*,    \
                                              int64_t, int64_t, int64_t, int64_t, cudaStream_t);

LTX_INSTANTIATE_FUSED_FP8(float)
LTX_INSTANTIATE_FUSED_FP8(__half)
LTX_INSTANTIATE_FUSED_FP8(__nv_bfloat16)

}  // namespace ltx_kernels
