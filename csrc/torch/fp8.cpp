// Torch adapter for the FP8 family: checks, layouts, dtype dispatch, then the CPU backend or
// the CUDA core. FP8 tensors (float8_e4m3fn / float8_e5m2) are handled as raw bytes; the
// format comes from q's dtype.
#include "common.h"
#include "ltx_kernels/cpu/fp8.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/quant/fp8.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

constexpr int64_t kCpuGrain = 16;  // rows per CPU task

Fp8Format fp8_format(const at::Tensor& q, const char* op) {
  if (q.scalar_type() == at::kFloat8_e4m3fn) return Fp8Format::E4M3;
  if (q.scalar_type() == at::kFloat8_e5m2) return Fp8Format::E5M2;
  LTX_CHECK(false, op, "q must be float8_e4m3fn or float8_e5m2 (got ", q.scalar_type(), ")");
  return Fp8Format::E4M3;
}

void check_scale_tensor(const at::Tensor& s, const at::Tensor& x, const char* op, const char* name) {
  LTX_CHECK(s.scalar_type() == at::kFloat, op, name, " must be float32 (got ", s.scalar_type(), ")");
  check_same_device(s, x, op, name, "x");
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

void check_device(const at::Tensor& x, const char* op) {
#ifdef LTX_KERNELS_WITH_CUDA
  LTX_CHECK(x.is_cpu() || x.is_cuda(), op, "x must be a CPU or CUDA tensor (got ", x.device(), ")");
#else
  LTX_CHECK(x.is_cpu(), op, "this build has no CUDA backend (got a tensor on ", x.device(), ")");
#endif
}

}  // namespace

void quantize_fp8_per_token_group(at::Tensor& q, at::Tensor& scales, const at::Tensor& x,
                                  int64_t group_size, c10::string_view scale_layout) {
  constexpr const char* op = "quantize_fp8_per_token_group";
  const std::string layout(scale_layout.data(), scale_layout.size());
  LTX_CHECK(layout == "row" || layout == "mn_major", op,
            "scale_layout must be 'row' or 'mn_major' (got '", layout, "')");
  check_float_type(x, op, "x");
  LTX_CHECK(x.dim() >= 1, op, "x must have at least one dimension (got a scalar)");
  const Fp8Format fmt = fp8_format(q, op);
  check_same_device(q, x, op, "q", "x");
  check_scale_tensor(scales, x, op, "scales");
  check_device(x, op);
  LTX_CHECK(group_size > 0, op, "group_size must be > 0 (got ", group_size, ")");
  const int64_t K = x.size(-1);
  LTX_CHECK(K % group_size == 0, op, "x.shape[-1] must be a multiple of group_size (got ", K,
            " and group_size ", group_size, ")");
  LTX_CHECK(q.sizes() == x.sizes(), op, "q must have the shape of x (got ", shape_str(q.sizes()),
            " and ", shape_str(x.sizes()), ")");
  int64_t M = 1;
  for (int64_t d = 0; d + 1 < x.dim(); ++d) M *= x.size(d);
  const int64_t G = K / group_size;
  LTX_CHECK(scales.dim() == 2 && scales.size(0) == M && scales.size(1) == G, op,
            "scales must have shape [M, K / group_size] = [", M, ", ", G, "] (got ",
            shape_str(scales.sizes()), ")");
  if (layout == "row") {
    LTX_CHECK((G <= 1 || scales.stride(1) == 1) && (M <= 1 || scales.stride(0) >= G), op,
              "scales for scale_layout 'row' must be row-major, strides (", G, ", 1) (got ",
              shape_str(scales.strides()), ")");
  } else {
    LTX_CHECK((M <= 1 || scales.stride(0) == 1) && (G <= 1 || scales.stride(1) >= M), op,
              "scales for scale_layout 'mn_major' must be M-major, strides (1, M_pad) (got ",
              shape_str(scales.strides()), ")");
  }
  if (x.numel() == 0) return;
  at::Tensor xh;
  const RowLayout xl = input_rows(x, xh);
  const RowLayout ql = output_rows(q, op);
  check_rows_fit(xl, op);
  auto* qp = reinterpret_cast<uint8_t*>(q.data_ptr());
  auto* sp = scales.data_ptr<float>();
  const int64_t sr = scales.stride(0), sc = scales.stride(1);
  if (x.is_cpu()) {
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* xp = reinterpret_cast<const scalar_t*>(xh.data_ptr());
      at::parallel_for(0, xl.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::quantize_fp8_per_token_group<scalar_t>(qp, ql.stride, sp, sr, sc, xp, xl.stride, b, e,
                                                    xl.cols, group_size, fmt);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    auto* xp = reinterpret_cast<const cuda_t*>(xh.data_ptr());
    check_cuda(ltx_kernels::quantize_fp8_per_token_group<cuda_t>(qp, ql.stride, sp, sr, sc, xp,
                                                                 xl.stride, xl.rows, xl.cols,
                                                                 group_size, fmt, scope.stream),
               op);
  });
#endif
}

void quantize_fp8_block(at::Tensor& q, at::Tensor& scales, const at::Tensor& w, int64_t block_n,
                        int64_t block_k) {
  constexpr const char* op = "quantize_fp8_block";
  check_float_type(w, op, "w");
  LTX_CHECK(w.dim() == 2, op, "w must be 2-D [N, K] (got shape ", shape_str(w.sizes()), ")");
  const Fp8Format fmt = fp8_format(q, op);
  check_same_device(q, w, op, "q", "w");
  check_scale_tensor(scales, w, op, "scales");
  check_device(w, op);
  LTX_CHECK(block_n > 0 && block_k > 0, op, "block sizes must be > 0 (got (", block_n, ", ",
            block_k, "))");
  LTX_CHECK(q.sizes() == w.sizes(), op, "q must have the shape of w (got ", shape_str(q.sizes()),
            " and ", shape_str(w.sizes()), ")");
  const int64_t N = w.size(0), K = w.size(1);
  const int64_t tn = ceil_div(N, block_n), tk = ceil_div(K, block_k);
  LTX_CHECK(scales.dim() == 2 && scales.size(0) == tn && scales.size(1) == tk, op,
            "scales must have shape [ceil(N / block_n), ceil(K / block_k)] = [", tn, ", ", tk,
            "] (got ", shape_str(scales.sizes()), ")");
  if (w.numel() == 0) return;
  at::Tensor wh;
  const RowLayout wl = input_rows(w, wh);
  const RowLayout ql = output_rows(q, op);
  check_rows_fit(wl, op);
  auto* qp = reinterpret_cast<uint8_t*>(q.data_ptr());
  auto* sp = scales.data_ptr<float>();
  const int64_t sr = scales.stride(0), sc = scales.stride(1);
  if (w.is_cpu()) {
    LTX_DISPATCH_FLOAT(w.scalar_type(), op, {
      auto* wp = reinterpret_cast<const scalar_t*>(wh.data_ptr());
      at::parallel_for(0, tn, 1, [&](int64_t b, int64_t e) {
        cpu::quantize_fp8_block<scalar_t>(qp, ql.stride, sp, sr, sc, wp, wl.stride, b, e, N, K,
                                          block_n, block_k, fmt);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(w, op);
  LTX_DISPATCH_FLOAT(w.scalar_type(), op, {
    auto* wp = reinterpret_cast<const cuda_t*>(wh.data_ptr());
    check_cuda(ltx_kernels::quantize_fp8_block<cuda_t>(qp, ql.stride, sp, sr, sc, wp, wl.stride, N,
                                                       K, block_n, block_k, fmt, scope.stream),
               op);
  });
#endif
}

void quantize_fp8_per_tensor(at::Tensor& q, at::Tensor& scale, const at::Tensor& x,
                             const std::optional<at::Tensor>& given_scale) {
  constexpr const char* op = "quantize_fp8_per_tensor";
  check_float_type(x, op, "x");
  const Fp8Format fmt = fp8_format(q, op);
  check_same_device(q, x, op, "q", "x");
  check_scale_tensor(scale, x, op, "scale");
  check_device(x, op);
  LTX_CHECK(scale.numel() == 1, op, "scale must have one element (got shape ",
            shape_str(scale.sizes()), ")");
  if (given_scale.has_value()) {
    check_scale_tensor(*given_scale, x, op, "the given scale");
    LTX_CHECK(given_scale->numel() == 1, op, "the given scale must have one element (got shape ",
              shape_str(given_scale->sizes()), ")");
  }
  LTX_CHECK(q.sizes() == x.sizes(), op, "q must have the shape of x (got ", shape_str(q.sizes()),
            " and ", shape_str(x.sizes()), ")");
  LTX_CHECK(q.is_contiguous(), op, "q must be contiguous (got strides ", shape_str(q.strides()), ")");
  const at::Tensor xc = x.contiguous();
  const int64_t n = x.numel();
  auto* qp = reinterpret_cast<uint8_t*>(q.data_ptr());
  auto* sp = scale.data_ptr<float>();
  if (x.is_cpu()) {
    float s = 0.f;
    LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
      auto* xp = reinterpret_cast<const scalar_t*>(xc.data_ptr());
      if (given_scale.has_value()) {
        s = given_scale->contiguous().data_ptr<float>()[0];
      } else {
        const float amax = at::parallel_reduce(
            0, n, 4096, 0.f,
            [&](int64_t b, int64_t e, float m) { return std::fmax(m, cpu::fp8_amax<scalar_t>(xp + b, 0, 0, 1, e - b)); },
            [](float a, float b) { return std::fmax(a, b); });
        s = fmt == Fp8Format::E5M2 ? fp8_scale_from_amax<E5M2>(amax) : fp8_scale_from_amax<E4M3>(amax);
      }
      at::parallel_for(0, n, 4096, [&](int64_t b, int64_t e) {
        cpu::quantize_fp8_scaled<scalar_t>(qp + b, 0, xp + b, 0, 0, 1, e - b, s, fmt);
      });
    });
    sp[0] = s;
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(x, op);
  const cudaStream_t stream = scope.stream;
  if (given_scale.has_value()) {
    const at::Tensor g = given_scale->contiguous();
    check_cuda(cudaMemcpyAsync(sp, g.data_ptr<float>(), sizeof(float), cudaMemcpyDeviceToDevice, stream), op);
  }
  LTX_DISPATCH_FLOAT(x.scalar_type(), op, {
    auto* xp = reinterpret_cast<const cuda_t*>(xc.data_ptr());
    check_cuda(ltx_kernels::quantize_fp8_per_tensor<cuda_t>(qp, sp, xp, n, !given_scale.has_value(),
                                                            fmt, stream),
               op);
  });
#endif
}

namespace {

// Shared by the three dequantizers: out[r, c] = decode(q[r, c]) * scales[(r / br) * sr + (c / bc) * sc].
void dequant_common(at::Tensor& out, const at::Tensor& q, const at::Tensor& scales, int64_t sr,
                    int64_t sc, int64_t br, int64_t bc, const char* op) {
  if (q.numel() == 0) return;
  const Fp8Format fmt = fp8_format(q, op);
  at::Tensor qh;
  const at::Tensor q1 = q.dim() == 0 ? q.reshape({1}) : q;
  at::Tensor o1 = out.dim() == 0 ? out.view({1}) : out;
  const RowLayout ql = input_rows(q1, qh);
  const RowLayout ol = output_rows(o1, op);
  check_rows_fit(ql, op);
  const at::Tensor s = scales;  // strides passed through
  const auto* qp = reinterpret_cast<const uint8_t*>(qh.data_ptr());
  const float* sp = s.data_ptr<float>();
  if (q.is_cpu()) {
    LTX_DISPATCH_FLOAT(out.scalar_type(), op, {
      auto* o = reinterpret_cast<scalar_t*>(o1.data_ptr());
      at::parallel_for(0, ql.rows, kCpuGrain, [&](int64_t b, int64_t e) {
        cpu::dequantize_fp8<scalar_t>(o, ol.stride, qp, ql.stride, sp, sr, sc, b, e, ql.cols, br, bc, fmt);
      });
    });
    return;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(q, op);
  LTX_DISPATCH_FLOAT(out.scalar_type(), op, {
    auto* o = reinterpret_cast<cuda_t*>(o1.data_ptr());
    check_cuda(ltx_kernels::dequantize_fp8<cuda_t>(o, ol.stride, qp, ql.stride, sp, sr, sc, ql.rows,
                                                   ql.cols, br, bc, fmt, scope.stream),
               op);
  });
#endif
}

void check_dequant_common(const at::Tensor& out, const at::Tensor& q, const at::Tensor& scales,
                          const char* op) {
  fp8_format(q, op);
  check_float_type(out, op, "out");
  check_same_device(out, q, op, "out", "q");
  LTX_CHECK(scales.scalar_type() == at::kFloat, op, "scales must be float32 (got ",
            scales.scalar_type(), ")");
  check_same_device(scales, q, op, "scales", "q");
  check_device(q, op);
  LTX_CHECK(out.sizes() == q.sizes(), op, "out must have the shape of q (got ",
            shape_str(out.sizes()), " and ", shape_str(q.sizes()), ")");
}

}  // namespace

void dequantize_fp8_per_token_group(at::Tensor& out, const at::Tensor& q, const at::Tensor& scales,
                                    int64_t group_size) {
  constexpr const char* op = "dequantize_fp8_per_token_group";
  check_dequant_common(out, q, scales, op);
  LTX_CHECK(q.dim() >= 1, op, "q must have at least one dimension (got a scalar)");
  LTX_CHECK(group_size > 0, op, "group_size must be > 0 (got ", group_size, ")");
  const int64_t K = q.size(-1);
  LTX_CHECK(K % group_size == 0, op, "q.shape[-1] must be a multiple of group_size (got ", K,
            " and group_size ", group_size, ")");
  const int64_t M = K == 0 ? 0 : q.numel() / K;
  int64_t Mfull = 1;
  for (int64_t d = 0; d + 1 < q.dim(); ++d) Mfull *= q.size(d);
  LTX_CHECK(scales.dim() == 2 && scales.size(0) == Mfull && scales.size(1) == K / group_size, op,
            "scales must have shape [M, K / group_size] = [", Mfull, ", ", K / group_size,
            "] (got ", shape_str(scales.sizes()), ")");
  (void)M;
  dequant_common(out, q, scales, scales.stride(0), scales.stride(1), 1, group_size, op);
}

void dequantize_fp8_block(at::Tensor& out, const at::Tensor& q, const at::Tensor& scales,
                          int64_t block_n, int64_t block_k) {
  constexpr const char* op = "dequantize_fp8_block";
  check_dequant_common(out, q, scales, op);
  LTX_CHECK(q.dim() == 2, op, "q must be 2-D [N, K] (got shape ", shape_str(q.sizes()), ")");
  LTX_CHECK(block_n > 0 && block_k > 0, op, "block sizes must be > 0 (got (", block_n, ", ",
            block_k, "))");
  const int64_t tn = ceil_div(q.size(0), block_n), tk = ceil_div(q.size(1), block_k);
  LTX_CHECK(scales.dim() == 2 && scales.size(0) == tn && scales.size(1) == tk, op,
            "scales must have shape [ceil(N / block_n), ceil(K / block_k)] = [", tn, ", ", tk,
            "] (got ", shape_str(scales.sizes()), ")");
  dequant_common(out, q, scales, scales.stride(0), scales.stride(1), block_n, block_k, op);
}

void dequantize_fp8_per_tensor(at::Tensor& out, const at::Tensor& q, const at::Tensor& scale) {
  constexpr const char* op = "dequantize_fp8_per_tensor";
  check_dequant_common(out, q, scale, op);
  LTX_CHECK(scale.numel() == 1, op, "scale must have one element (got shape ",
            shape_str(scale.sizes()), ")");
  const at::Tensor s = scale.reshape({1});  // a view (one element), or a copy
  // one "block" covering everything (strides 0): keeps the 16-byte vector path eligible
  constexpr int64_t kAll = int64_t(1) << 62;
  dequant_common(out, q, s, 0, 0, kAll, kAll, op);
}
