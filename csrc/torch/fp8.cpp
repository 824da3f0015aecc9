// Torch adapter for the FP8 family: checks and layouts, then one Fp8QuantizeParams or
// Fp8DequantizeParams (quant/fp8_params.h) for the CPU backend (cpu/ops.h) or the CUDA core
// (cuda/ops.h). FP8 tensors (float8_e4m3fn / float8_e5m2) are handled as raw bytes; the format
// comes from q's dtype.
#include "common.h"
#include "ltx_kernels/cpu/ops.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

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

// The rows of x and q of a row-wise quantizer (x read through a contiguous copy when needed).
void quantize_rows(Prepared<Fp8QuantizeParams>& pr, const at::Tensor& q, const at::Tensor& x, const at::Tensor& scales,
                   Fp8Format fmt, const char* op) {
  Fp8QuantizeParams& p = pr.emplace();
  p.x = in_rows(pr.rows_source(x));
  p.q = out_rows(q, op);
  check_rows_fit(p.x.layout, op);
  p.dtype = dtype_of(x);
  p.format = fmt;
  p.scales = scales.data_ptr<float>();
  p.s_row = scales.stride(0);
  p.s_col = scales.stride(1);
}

Prepared<Fp8QuantizeParams> make_quantize_fp8_per_token_group_params(at::Tensor& q, at::Tensor& scales,
                                                                    const at::Tensor& x, int64_t group_size,
                                                                    c10::string_view scale_layout) {
  constexpr const char* op = "quantize_fp8_per_token_group";
  const std::string layout(scale_layout.data(), scale_layout.size());
  LTX_CHECK(layout == "row" || layout == "mn_major", op,
            "scale_layout must be 'row' or 'mn_major' (got '", layout, "')");
  check_float_type(x, op, "x");
  LTX_CHECK(x.dim() >= 1, op, "x must have at least one dimension (got a scalar)");
  const Fp8Format fmt = fp8_format(q, op);
  check_same_device(q, x, op, "q", "x");
  check_scale_tensor(scales, x, op, "scales");
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
  Prepared<Fp8QuantizeParams> pr;
  if (x.numel() == 0) return pr;
  quantize_rows(pr, q, x, scales, fmt, op);
  pr.params->block_rows = 1;
  pr.params->block_cols = group_size;
  return pr;
}

Prepared<Fp8QuantizeParams> make_quantize_fp8_block_params(at::Tensor& q, at::Tensor& scales, const at::Tensor& w,
                                                          int64_t block_n, int64_t block_k) {
  constexpr const char* op = "quantize_fp8_block";
  check_float_type(w, op, "w");
  LTX_CHECK(w.dim() == 2, op, "w must be 2-D [N, K] (got shape ", shape_str(w.sizes()), ")");
  const Fp8Format fmt = fp8_format(q, op);
  check_same_device(q, w, op, "q", "w");
  check_scale_tensor(scales, w, op, "scales");
  LTX_CHECK(block_n > 0 && block_k > 0, op, "block sizes must be > 0 (got (", block_n, ", ",
            block_k, "))");
  LTX_CHECK(q.sizes() == w.sizes(), op, "q must have the shape of w (got ", shape_str(q.sizes()),
            " and ", shape_str(w.sizes()), ")");
  const int64_t N = w.size(0), K = w.size(1);
  const int64_t tn = ceil_div(N, block_n), tk = ceil_div(K, block_k);
  LTX_CHECK(scales.dim() == 2 && scales.size(0) == tn && scales.size(1) == tk, op,
            "scales must have shape [ceil(N / block_n), ceil(K / block_k)] = [", tn, ", ", tk,
            "] (got ", shape_str(scales.sizes()), ")");
  Prepared<Fp8QuantizeParams> pr;
  if (w.numel() == 0) return pr;
  quantize_rows(pr, q, w, scales, fmt, op);
  pr.params->block_rows = block_n;
  pr.params->block_cols = block_k;
  return pr;
}

// Never empty: the scale is written even for an empty x.
Prepared<Fp8QuantizeParams> make_quantize_fp8_per_tensor_params(at::Tensor& q, at::Tensor& scale, const at::Tensor& x,
                                                                const std::optional<at::Tensor>& given_scale) {
  constexpr const char* op = "quantize_fp8_per_tensor";
  check_float_type(x, op, "x");
  const Fp8Format fmt = fp8_format(q, op);
  check_same_device(q, x, op, "q", "x");
  check_scale_tensor(scale, x, op, "scale");
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
  Prepared<Fp8QuantizeParams> pr;
  Fp8QuantizeParams& p = pr.emplace();
  const int64_t n = x.numel();
  p.dtype = dtype_of(x);
  p.format = fmt;
  p.x = InRows{pr.keep(x.contiguous()).data_ptr(), RowLayout{1, n, n}};
  p.q = OutRows{q.data_ptr(), RowLayout{1, n, n}};
  p.scales = scale.data_ptr<float>();
  p.given_scale = given_scale.has_value() ? pr.keep(given_scale->contiguous()).data_ptr<float>() : nullptr;
  return pr;
}

// Shared by the three dequantizers: out[r, c] = decode(q[r, c]) * scales[(r / br) * sr + (c / bc) * sc].
Prepared<Fp8DequantizeParams> make_dequantize_params(at::Tensor& out, const at::Tensor& q, const at::Tensor& scales,
                                                     int64_t sr, int64_t sc, int64_t br, int64_t bc, const char* op) {
  Prepared<Fp8DequantizeParams> pr;
  if (q.numel() == 0) return pr;
  const Fp8Format fmt = fp8_format(q, op);
  const at::Tensor& q1 = pr.rows_source(q.dim() == 0 ? q.reshape({1}) : q);
  const at::Tensor o1 = out.dim() == 0 ? out.view({1}) : out;
  Fp8DequantizeParams& p = pr.emplace();
  p.q = in_rows(q1);
  p.out = out_rows(o1, op);
  check_rows_fit(p.q.layout, op);
  p.dtype = dtype_of(out);
  p.format = fmt;
  p.scales = pr.keep(scales).data_ptr<float>();  // strides passed through
  p.s_row = sr;
  p.s_col = sc;
  p.block_rows = br;
  p.block_cols = bc;
  return pr;
}

void check_dequant_common(const at::Tensor& out, const at::Tensor& q, const at::Tensor& scales,
                          const char* op) {
  fp8_format(q, op);
  check_float_type(out, op, "out");
  check_same_device(out, q, op, "out", "q");
  LTX_CHECK(scales.scalar_type() == at::kFloat, op, "scales must be float32 (got ",
            scales.scalar_type(), ")");
  check_same_device(scales, q, op, "scales", "q");
  LTX_CHECK(out.sizes() == q.sizes(), op, "out must have the shape of q (got ",
            shape_str(out.sizes()), " and ", shape_str(q.sizes()), ")");
}

Prepared<Fp8DequantizeParams> make_dequantize_fp8_per_token_group_params(at::Tensor& out, const at::Tensor& q,
                                                                        const at::Tensor& scales,
                                                                        int64_t group_size) {
  constexpr const char* op = "dequantize_fp8_per_token_group";
  check_dequant_common(out, q, scales, op);
  LTX_CHECK(q.dim() >= 1, op, "q must have at least one dimension (got a scalar)");
  LTX_CHECK(group_size > 0, op, "group_size must be > 0 (got ", group_size, ")");
  const int64_t K = q.size(-1);
  LTX_CHECK(K % group_size == 0, op, "q.shape[-1] must be a multiple of group_size (got ", K,
            " and group_size ", group_size, ")");
  int64_t M = 1;
  for (int64_t d = 0; d + 1 < q.dim(); ++d) M *= q.size(d);
  LTX_CHECK(scales.dim() == 2 && scales.size(0) == M && scales.size(1) == K / group_size, op,
            "scales must have shape [M, K / group_size] = [", M, ", ", K / group_size,
            "] (got ", shape_str(scales.sizes()), ")");
  return make_dequantize_params(out, q, scales, scales.stride(0), scales.stride(1), 1, group_size, op);
}

Prepared<Fp8DequantizeParams> make_dequantize_fp8_block_params(at::Tensor& out, const at::Tensor& q,
                                                              const at::Tensor& scales, int64_t block_n,
                                                              int64_t block_k) {
  constexpr const char* op = "dequantize_fp8_block";
  check_dequant_common(out, q, scales, op);
  LTX_CHECK(q.dim() == 2, op, "q must be 2-D [N, K] (got shape ", shape_str(q.sizes()), ")");
  LTX_CHECK(block_n > 0 && block_k > 0, op, "block sizes must be > 0 (got (", block_n, ", ",
            block_k, "))");
  const int64_t tn = ceil_div(q.size(0), block_n), tk = ceil_div(q.size(1), block_k);
  LTX_CHECK(scales.dim() == 2 && scales.size(0) == tn && scales.size(1) == tk, op,
            "scales must have shape [ceil(N / block_n), ceil(K / block_k)] = [", tn, ", ", tk,
            "] (got ", shape_str(scales.sizes()), ")");
  return make_dequantize_params(out, q, scales, scales.stride(0), scales.stride(1), block_n, block_k, op);
}

Prepared<Fp8DequantizeParams> make_dequantize_fp8_per_tensor_params(at::Tensor& out, const at::Tensor& q,
                                                                   const at::Tensor& scale) {
  constexpr const char* op = "dequantize_fp8_per_tensor";
  check_dequant_common(out, q, scale, op);
  LTX_CHECK(scale.numel() == 1, op, "scale must have one element (got shape ",
            shape_str(scale.sizes()), ")");
  // one "block" covering everything (strides 0): keeps the 16-byte vector path eligible
  constexpr int64_t kAll = int64_t(1) << 62;
  return make_dequantize_params(out, q, scale.reshape({1}), 0, 0, kAll, kAll, op);
}

}  // namespace

void quantize_fp8_per_token_group_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, int64_t group_size,
                                      c10::string_view scale_layout) {
  run_cpu(make_quantize_fp8_per_token_group_params(q, scales, x, group_size, scale_layout),
          cpu::quantize_fp8_per_token_group);
}

void quantize_fp8_block_cpu(at::Tensor& q, at::Tensor& scales, const at::Tensor& w, int64_t block_n,
                            int64_t block_k) {
  run_cpu(make_quantize_fp8_block_params(q, scales, w, block_n, block_k), cpu::quantize_fp8_block);
}

void quantize_fp8_per_tensor_cpu(at::Tensor& q, at::Tensor& scale, const at::Tensor& x,
                                 const std::optional<at::Tensor>& given_scale) {
  run_cpu(make_quantize_fp8_per_tensor_params(q, scale, x, given_scale), cpu::quantize_fp8_per_tensor);
}

void dequantize_fp8_per_token_group_cpu(at::Tensor& out, const at::Tensor& q, const at::Tensor& scales,
                                        int64_t group_size) {
  run_cpu(make_dequantize_fp8_per_token_group_params(out, q, scales, group_size), cpu::dequantize_fp8_per_token_group);
}

void dequantize_fp8_block_cpu(at::Tensor& out, const at::Tensor& q, const at::Tensor& scales, int64_t block_n,
                              int64_t block_k) {
  run_cpu(make_dequantize_fp8_block_params(out, q, scales, block_n, block_k), cpu::dequantize_fp8_block);
}

void dequantize_fp8_per_tensor_cpu(at::Tensor& out, const at::Tensor& q, const at::Tensor& scale) {
  run_cpu(make_dequantize_fp8_per_tensor_params(out, q, scale), cpu::dequantize_fp8_per_tensor);
}

#ifdef LTX_KERNELS_WITH_CUDA
void quantize_fp8_per_token_group_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& x, int64_t group_size,
                                       c10::string_view scale_layout) {
  run_cuda(make_quantize_fp8_per_token_group_params(q, scales, x, group_size, scale_layout), x,
           "quantize_fp8_per_token_group", ltx_kernels::quantize_fp8_per_token_group);
}

void quantize_fp8_block_cuda(at::Tensor& q, at::Tensor& scales, const at::Tensor& w, int64_t block_n,
                             int64_t block_k) {
  run_cuda(make_quantize_fp8_block_params(q, scales, w, block_n, block_k), w, "quantize_fp8_block",
           ltx_kernels::quantize_fp8_block);
}

void quantize_fp8_per_tensor_cuda(at::Tensor& q, at::Tensor& scale, const at::Tensor& x,
                                  const std::optional<at::Tensor>& given_scale) {
  run_cuda(make_quantize_fp8_per_tensor_params(q, scale, x, given_scale), x, "quantize_fp8_per_tensor",
           ltx_kernels::quantize_fp8_per_tensor);
}

void dequantize_fp8_per_token_group_cuda(at::Tensor& out, const at::Tensor& q, const at::Tensor& scales,
                                         int64_t group_size) {
  run_cuda(make_dequantize_fp8_per_token_group_params(out, q, scales, group_size), q,
           "dequantize_fp8_per_token_group", ltx_kernels::dequantize_fp8_per_token_group);
}

void dequantize_fp8_block_cuda(at::Tensor& out, const at::Tensor& q, const at::Tensor& scales, int64_t block_n,
                               int64_t block_k) {
  run_cuda(make_dequantize_fp8_block_params(out, q, scales, block_n, block_k), q, "dequantize_fp8_block",
           ltx_kernels::dequantize_fp8_block);
}

void dequantize_fp8_per_tensor_cuda(at::Tensor& out, const at::Tensor& q, const at::Tensor& scale) {
  run_cuda(make_dequantize_fp8_per_tensor_params(out, q, scale), q, "dequantize_fp8_per_tensor",
           ltx_kernels::dequantize_fp8_per_tensor);
}
#endif
