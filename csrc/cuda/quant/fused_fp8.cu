// Fused op + FP8 per-token-group quantization: launchers and explicit instantiations.
// Kernels and byte counts: fused_fp8.cuh. Every entry checks the CUDA-path preconditions
// (fused_fp8.h) and alignment itself and returns cudaErrorInvalidValue /
// cudaErrorMisalignedAddress rather than launching on a problem it cannot take.
#include "ltx_kernels/quant/fused_fp8.cuh"
#include "ltx_kernels/cuda/ops.h"

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

template <typename T>
cudaError_t rms_norm_fp8_typed(const Fp8GroupOut& o, const T* x, int64_t x_stride, const T* weight,
                         int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cudaError_t e = precheck<T>(o, cols); e != cudaSuccess) return e;
  if (!rows_ok(x, x_stride) || !rows_ok(weight, 0)) return cudaErrorMisalignedAddress;
  using P = fn::Policy<fn::Prologue::kLoad, false, false>;
  const NormOp<P, T, true> op{norm_args(x, x_stride, weight, rows, cols, eps)};
  return launch<NormOp<P, T, true>, T>(op, o, rows, cols, stream);
}

template <typename T>
cudaError_t adaln_rms_norm_fp8_typed(const Fp8GroupOut& o, const T* x, int64_t x_stride,
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
cudaError_t gated_residual_typed(const Fp8GroupOut& o, T* h_out, int64_t h_out_stride,
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

template <class Act, typename T>
cudaError_t and_mul_fp8_typed(const Fp8GroupOut& o, const T* x, int64_t x_stride, int64_t rows,
                              int64_t d, bool act_first, cudaStream_t stream) {
  if (rows <= 0 || d <= 0) return cudaSuccess;
  if (cudaError_t e = precheck<T>(o, d); e != cudaSuccess) return e;
  if (!rows_ok(x, x_stride)) return cudaErrorMisalignedAddress;  // d % V == 0: x + d aligned too
  using Op = ActAndMulOp<Act, T>;
  return launch<Op, T>(Op{{}, x, x_stride, d, act_first}, o, rows, d, stream);
}

template <typename T>
cudaError_t gelu_tanh_fp8_typed(const Fp8GroupOut& o, const T* x, int64_t x_stride, int64_t rows,
                          int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cudaError_t e = precheck<T>(o, cols); e != cudaSuccess) return e;
  if (!rows_ok(x, x_stride)) return cudaErrorMisalignedAddress;
  using Op = ActOp<act_detail::GeluTanh, T>;
  return launch<Op, T>(Op{{}, x, x_stride}, o, rows, cols, stream);
}

template <typename T>
cudaError_t gated_attention_fp8_typed(const Fp8GroupOut& o, const T* x, int64_t x_stride, const T* gate,
                                int64_t gate_stride, int64_t rows, int64_t heads,
                                int64_t head_dim, cudaStream_t stream) {
  const int64_t cols = heads * head_dim;
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (cudaError_t e = precheck<T>(o, cols); e != cudaSuccess) return e;
  if (!rows_ok(x, x_stride)) return cudaErrorMisalignedAddress;
  using Op = GatedAttentionOp<T>;
  const Op op{{}, x, x_stride, gate, gate_stride, int(head_dim), make_fast_div32(uint32_t(head_dim)),
              head_dim % kVec16<T> == 0};
  return launch<Op, T>(op, o, rows, cols, stream);
}

template <class Act>
cudaError_t and_mul_fp8(const AndMulFp8Params& p, cudaStream_t stream) {
  const AndMulParams& a = p.op;
  return dispatch_cuda(a.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return and_mul_fp8_typed<Act, T>(p.q, a.x.ptr<T>(), a.x.layout.stride, a.x.layout.rows, a.x.layout.cols / 2,
                                     a.act_first, stream);
  });
}

}  // namespace

cudaError_t rms_norm_fp8(const RmsNormFp8Params& p, cudaStream_t stream) {
  const RmsNormParams& a = p.op;
  return dispatch_cuda(a.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return rms_norm_fp8_typed<T>(p.q, a.x.ptr<T>(), a.x.layout.stride, static_cast<const T*>(a.weight),
                                 a.x.layout.rows, a.x.layout.cols, a.eps, stream);
  });
}

cudaError_t adaln_rms_norm_fp8(const FusedNormFp8Params& p, cudaStream_t stream) {
  const FusedNormParams& a = p.op;
  return dispatch_cuda(a.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return adaln_rms_norm_fp8_typed<T>(p.q, a.x.ptr<T>(), a.x.layout.stride, typed<T>(a.scale), typed<T>(a.shift),
                                       static_cast<const T*>(a.weight), a.x.layout.rows, a.x.layout.cols, a.eps,
                                       stream);
  });
}

cudaError_t gated_residual_adaln_rms_norm_fp8(const FusedNormFp8Params& p, cudaStream_t stream) {
  const FusedNormParams& a = p.op;
  return dispatch_cuda(a.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return gated_residual_typed<T>(p.q, a.residual_out.ptr<T>(), a.residual_out.layout.stride, a.x.ptr<T>(),
                                   a.x.layout.stride, a.x2.ptr<T>(), a.x2.layout.stride, typed<T>(a.gate),
                                   typed<T>(a.scale), typed<T>(a.shift), static_cast<const T*>(a.weight),
                                   a.x.layout.rows, a.x.layout.cols, a.eps, stream);
  });
}

cudaError_t silu_and_mul_fp8(const AndMulFp8Params& p, cudaStream_t stream) {
  return and_mul_fp8<act_detail::Silu>(p, stream);
}

cudaError_t gelu_and_mul_fp8(const AndMulFp8Params& p, cudaStream_t stream) {
  return p.op.tanh_approx ? and_mul_fp8<act_detail::GeluTanh>(p, stream) : and_mul_fp8<act_detail::GeluErf>(p, stream);
}

cudaError_t gelu_tanh_fp8(const ActivationFp8Params& p, cudaStream_t stream) {
  const ActivationParams& a = p.op;
  return dispatch_cuda(a.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return gelu_tanh_fp8_typed<T>(p.q, a.x.ptr<T>(), a.x.layout.stride, a.x.layout.rows, a.x.layout.cols, stream);
  });
}

cudaError_t gated_attention_fp8(const GatedAttentionFp8Params& p, cudaStream_t stream) {
  const GatedAttentionParams& a = p.op;
  return dispatch_cuda(a.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    return gated_attention_fp8_typed<T>(p.q, a.x.ptr<T>(), a.x.layout.stride, a.gate.ptr<T>(), a.gate.layout.stride,
                                        a.x.layout.rows, a.heads, a.head_dim, stream);
  });
}

}  // namespace ltx_kernels
