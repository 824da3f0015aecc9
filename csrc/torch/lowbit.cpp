// Torch adapter for the low-bit family (LTX-2 FP6, OCP FP6, NVFP4): checks that name the op
// and the rule, then one params struct (quant/lowbit_params.h) for the CPU backend
// (cpu/lowbit.h) or the CUDA core (quant/lowbit.h). Inputs of any layout are read through a
// contiguous copy when needed; outputs must be contiguous (the Python wrappers allocate them so).
#include "common.h"
#include "ltx_kernels/cpu/lowbit.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/quant/lowbit.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

void check_dtype(const at::Tensor& t, at::ScalarType want, const char* op, const char* name) {
  LTX_CHECK(t.scalar_type() == want, op, name, " must be ", want, " (got ", t.scalar_type(), ")");
}

void check_out(const at::Tensor& out, const at::Tensor& x, const char* op, const char* name) {
  check_same_device(out, x, op, name, "the input");
  LTX_CHECK(out.is_contiguous(), op, name, " must be contiguous (got strides ",
            shape_str(out.strides()), ")");
}

void check_shape(const at::Tensor& t, c10::IntArrayRef want, const char* op, const char* name) {
  LTX_CHECK(t.sizes() == want, op, name, " must have shape ", shape_str(want), " (got ",
            shape_str(t.sizes()), ")");
}

std::vector<int64_t> with_last(const at::Tensor& t, int64_t last) {
  std::vector<int64_t> s(t.sizes().begin(), t.sizes().end());
  s.back() = last;
  return s;
}

int parse_fp6_fmt(c10::string_view fmt, const char* op) {
  if (fmt == "e2m3") return 0;
  if (fmt == "e3m2") return 1;
  LTX_CHECK(false, op, "fmt must be \"e2m3\" or \"e3m2\" (got \"", std::string(fmt), "\")");
  return -1;
}

void check_block(int64_t br, int64_t bc, const char* op) {
  LTX_CHECK(br > 0 && bc > 0 && bc % 4 == 0 && br * bc <= (int64_t(1) << 24), op,
            "block must be positive with block_cols % 4 == 0 and at most 2^24 elements (got (", br,
            ", ", bc, "))");
}

// packed [rows, 3 cols / 4] and scales [ceil(rows / br), ceil(cols / bc)] of a block-FP6 weight.
void check_fp6_block_shapes(const at::Tensor& packed, const at::Tensor& scales, int64_t rows, int64_t cols,
                            int64_t br, int64_t bc, const char* op) {
  check_shape(packed, {rows, cols / 4 * 3}, op, "packed");
  check_shape(scales, {(rows + br - 1) / br, (cols + bc - 1) / bc}, op, "scales");
}

uint8_t* u8(const at::Tensor& t) { return static_cast<uint8_t*>(t.data_ptr()); }

Prepared<Fp6PackParams> make_fp6_pack_params(at::Tensor& out, const at::Tensor& x) {
  constexpr const char* op = "fp6_pack";
  check_dtype(x, at::kFloat8_e4m3fn, op, "x");
  check_dtype(out, at::kByte, op, "out");
  LTX_CHECK(x.dim() >= 1, op, "x must have at least one dimension (got a scalar)");
  const int64_t n = x.size(-1);
  LTX_CHECK(n % 4 == 0, op, "x.shape[-1] must be a multiple of 4 (got ", n, ")");
  check_out(out, x, op, "out");
  check_shape(out, with_last(x, n / 4 * 3), op, "out");
  Prepared<Fp6PackParams> pr;
  if (x.numel() == 0) return pr;
  pr.emplace() = Fp6PackParams{u8(pr.keep(x.contiguous())), u8(out), x.numel() / 4};
  return pr;
}

Prepared<Fp6PackParams> make_fp6_unpack_params(at::Tensor& out, const at::Tensor& packed) {
  constexpr const char* op = "fp6_unpack";
  check_dtype(packed, at::kByte, op, "packed");
  check_dtype(out, at::kFloat8_e4m3fn, op, "out");
  LTX_CHECK(packed.dim() >= 1, op, "packed must have at least one dimension (got a scalar)");
  LTX_CHECK(out.dim() >= 1 && out.size(-1) % 4 == 0, op,
            "n = out.shape[-1] must be a multiple of 4 (got shape ", shape_str(out.sizes()), ")");
  const int64_t n = out.size(-1);
  LTX_CHECK(packed.size(-1) == n / 4 * 3, op, "packed.shape[-1] must be 3 n / 4 = ", n / 4 * 3,
            " for n = ", n, " (got ", packed.size(-1), ")");
  check_out(out, packed, op, "out");
  check_shape(out, with_last(packed, n), op, "out");
  Prepared<Fp6PackParams> pr;
  if (packed.numel() == 0) return pr;
  pr.emplace() = Fp6PackParams{u8(out), u8(pr.keep(packed.contiguous())), out.numel() / 4};
  return pr;
}

Prepared<Fp6BlockParams> make_quantize_fp6_block_params(at::Tensor& packed, at::Tensor& scales,
                                                        const at::Tensor& w, int64_t block_rows, int64_t block_cols) {
  constexpr const char* op = "quantize_fp6_block";
  check_float_type(w, op, "w");
  LTX_CHECK(w.dim() == 2, op, "w must be 2-D [N, K] (got shape ", shape_str(w.sizes()), ")");
  check_block(block_rows, block_cols, op);
  const int64_t rows = w.size(0), cols = w.size(1);
  LTX_CHECK(cols % 4 == 0, op, "w.shape[1] must be a multiple of 4 (got ", cols, ")");
  check_dtype(packed, at::kByte, op, "packed");
  check_dtype(scales, at::kFloat, op, "scales");
  check_out(packed, w, op, "packed");
  check_out(scales, w, op, "scales");
  check_fp6_block_shapes(packed, scales, rows, cols, block_rows, block_cols, op);
  Prepared<Fp6BlockParams> pr;
  if (w.numel() == 0) return pr;
  pr.emplace() = Fp6BlockParams{dtype_of(w), pr.keep(w.contiguous()).data_ptr(), u8(packed), scales.data_ptr<float>(),
                                rows, cols, int(block_rows), int(block_cols)};
  return pr;
}

Prepared<Fp6BlockParams> make_dequantize_fp6_block_params(at::Tensor& out, const at::Tensor& packed,
                                                          const at::Tensor& scales, int64_t block_rows,
                                                          int64_t block_cols) {
  constexpr const char* op = "dequantize_fp6_block";
  check_float_type(out, op, "out");
  check_dtype(packed, at::kByte, op, "packed");
  check_dtype(scales, at::kFloat, op, "scales");
  LTX_CHECK(out.dim() == 2, op, "out must be 2-D [N, K] (got shape ", shape_str(out.sizes()), ")");
  check_block(block_rows, block_cols, op);
  const int64_t rows = out.size(0), cols = out.size(1);
  LTX_CHECK(cols % 4 == 0, op, "n = out.shape[1] must be a multiple of 4 (got ", cols, ")");
  check_same_device(scales, packed, op, "scales", "packed");
  check_out(out, packed, op, "out");
  check_fp6_block_shapes(packed, scales, rows, cols, block_rows, block_cols, op);
  Prepared<Fp6BlockParams> pr;
  if (out.numel() == 0) return pr;
  pr.emplace() = Fp6BlockParams{dtype_of(out), out.data_ptr(), u8(pr.keep(packed.contiguous())),
                                pr.keep(scales.contiguous()).data_ptr<float>(), rows, cols, int(block_rows),
                                int(block_cols)};
  return pr;
}

Prepared<Fp6Params> make_quantize_fp6_params(at::Tensor& out, const at::Tensor& x, c10::string_view fmt) {
  constexpr const char* op = "quantize_fp6";
  const int f = parse_fp6_fmt(fmt, op);
  check_float_type(x, op, "x");
  check_dtype(out, at::kByte, op, "out");
  check_out(out, x, op, "out");
  check_shape(out, x.sizes(), op, "out");
  Prepared<Fp6Params> pr;
  if (x.numel() == 0) return pr;
  pr.emplace() = Fp6Params{dtype_of(x), pr.keep(x.contiguous()).data_ptr(), u8(out), x.numel(), f};
  return pr;
}

Prepared<Fp6Params> make_dequantize_fp6_params(at::Tensor& out, const at::Tensor& codes, c10::string_view fmt) {
  constexpr const char* op = "dequantize_fp6";
  const int f = parse_fp6_fmt(fmt, op);
  check_dtype(codes, at::kByte, op, "codes");
  check_float_type(out, op, "out");
  check_out(out, codes, op, "out");
  check_shape(out, codes.sizes(), op, "out");
  Prepared<Fp6Params> pr;
  if (codes.numel() == 0) return pr;
  pr.emplace() = Fp6Params{dtype_of(out), out.data_ptr(), u8(pr.keep(codes.contiguous())), codes.numel(), f};
  return pr;
}

void check_tensor_scale(const at::Tensor& s, const at::Tensor& x, const char* op) {
  check_dtype(s, at::kFloat, op, "per_tensor_scale");
  LTX_CHECK(s.numel() == 1, op, "per_tensor_scale must hold one element (got shape ",
            shape_str(s.sizes()), ")");
  check_same_device(s, x, op, "per_tensor_scale", "x");
}

std::vector<int64_t> nvfp4_scale_shape(int64_t rows, int64_t cols) {
  return {(rows + 127) / 128 * 128, (cols / 16 + 3) / 4 * 4};
}

Prepared<Nvfp4Params> make_quantize_nvfp4_params(at::Tensor& packed, at::Tensor& block_scales, const at::Tensor& x,
                                                const at::Tensor& per_tensor_scale, bool hi_first) {
  constexpr const char* op = "quantize_nvfp4";
  check_float_type(x, op, "x");
  LTX_CHECK(x.dim() >= 1, op, "x must have at least one dimension (got a scalar)");
  const int64_t cols = x.size(-1);
  LTX_CHECK(cols % 16 == 0, op, "x.shape[-1] must be a multiple of 16 (got ", cols, ")");
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  check_tensor_scale(per_tensor_scale, x, op);
  check_dtype(packed, at::kByte, op, "packed");
  check_dtype(block_scales, at::kByte, op, "block_scales");
  check_out(packed, x, op, "packed");
  check_out(block_scales, x, op, "block_scales");
  check_shape(packed, with_last(x, cols / 2), op, "packed");
  check_shape(block_scales, nvfp4_scale_shape(rows, cols), op, "block_scales");
  Prepared<Nvfp4Params> pr;
  if (x.numel() == 0) return pr;
  pr.emplace() = Nvfp4Params{dtype_of(x), pr.keep(x.contiguous()).data_ptr(), u8(packed), u8(block_scales),
                             pr.keep(per_tensor_scale.contiguous()).data_ptr<float>(), rows, cols, hi_first};
  return pr;
}

Prepared<Nvfp4Params> make_dequantize_nvfp4_params(at::Tensor& out, const at::Tensor& packed,
                                                  const at::Tensor& block_scales, const at::Tensor& per_tensor_scale,
                                                  bool hi_first) {
  constexpr const char* op = "dequantize_nvfp4";
  check_float_type(out, op, "out");
  check_dtype(packed, at::kByte, op, "packed");
  check_dtype(block_scales, at::kByte, op, "block_scales");
  LTX_CHECK(out.dim() >= 1 && out.size(-1) % 16 == 0, op,
            "k = out.shape[-1] must be a multiple of 16 (got shape ", shape_str(out.sizes()), ")");
  const int64_t cols = out.size(-1);
  const int64_t rows = cols == 0 ? 0 : out.numel() / cols;
  check_tensor_scale(per_tensor_scale, packed, op);
  check_same_device(block_scales, packed, op, "block_scales", "packed");
  check_out(out, packed, op, "out");
  LTX_CHECK(packed.dim() == out.dim(), op, "packed must have out's rank (got shape ",
            shape_str(packed.sizes()), ")");
  check_shape(packed, with_last(out, cols / 2), op, "packed");
  check_shape(block_scales, nvfp4_scale_shape(rows, cols), op, "block_scales");
  Prepared<Nvfp4Params> pr;
  if (out.numel() == 0) return pr;
  pr.emplace() = Nvfp4Params{dtype_of(out), out.data_ptr(), u8(pr.keep(packed.contiguous())),
                             u8(pr.keep(block_scales.contiguous())),
                             pr.keep(per_tensor_scale.contiguous()).data_ptr<float>(), rows, cols, hi_first};
  return pr;
}

}  // namespace

void fp6_pack_cpu(at::Tensor& out, const at::Tensor& x) {
  run_cpu(make_fp6_pack_params(out, x), cpu::fp6_pack);
}

void fp6_unpack_cpu(at::Tensor& out, const at::Tensor& packed) {
  run_cpu(make_fp6_unpack_params(out, packed), cpu::fp6_unpack);
}

void quantize_fp6_block_cpu(at::Tensor& packed, at::Tensor& scales, const at::Tensor& w, int64_t block_rows,
                            int64_t block_cols) {
  run_cpu(make_quantize_fp6_block_params(packed, scales, w, block_rows, block_cols), cpu::quantize_fp6_block);
}

void dequantize_fp6_block_cpu(at::Tensor& out, const at::Tensor& packed, const at::Tensor& scales,
                              int64_t block_rows, int64_t block_cols) {
  run_cpu(make_dequantize_fp6_block_params(out, packed, scales, block_rows, block_cols), cpu::dequantize_fp6_block);
}

void quantize_fp6_cpu(at::Tensor& out, const at::Tensor& x, c10::string_view fmt) {
  run_cpu(make_quantize_fp6_params(out, x, fmt), cpu::quantize_fp6);
}

void dequantize_fp6_cpu(at::Tensor& out, const at::Tensor& codes, c10::string_view fmt) {
  run_cpu(make_dequantize_fp6_params(out, codes, fmt), cpu::dequantize_fp6);
}

void quantize_nvfp4_cpu(at::Tensor& packed, at::Tensor& block_scales, const at::Tensor& x,
                        const at::Tensor& per_tensor_scale, bool hi_first) {
  run_cpu(make_quantize_nvfp4_params(packed, block_scales, x, per_tensor_scale, hi_first), cpu::quantize_nvfp4);
}

void dequantize_nvfp4_cpu(at::Tensor& out, const at::Tensor& packed, const at::Tensor& block_scales,
                          const at::Tensor& per_tensor_scale, bool hi_first) {
  run_cpu(make_dequantize_nvfp4_params(out, packed, block_scales, per_tensor_scale, hi_first), cpu::dequantize_nvfp4);
}

#ifdef LTX_KERNELS_WITH_CUDA
void fp6_pack_cuda(at::Tensor& out, const at::Tensor& x) {
  run_cuda(make_fp6_pack_params(out, x), x, "fp6_pack", ltx_kernels::fp6_pack);
}

void fp6_unpack_cuda(at::Tensor& out, const at::Tensor& packed) {
  run_cuda(make_fp6_unpack_params(out, packed), packed, "fp6_unpack", ltx_kernels::fp6_unpack);
}

void quantize_fp6_block_cuda(at::Tensor& packed, at::Tensor& scales, const at::Tensor& w, int64_t block_rows,
                             int64_t block_cols) {
  run_cuda(make_quantize_fp6_block_params(packed, scales, w, block_rows, block_cols), w,
           "quantize_fp6_block", ltx_kernels::quantize_fp6_block);
}

void dequantize_fp6_block_cuda(at::Tensor& out, const at::Tensor& packed, const at::Tensor& scales,
                               int64_t block_rows, int64_t block_cols) {
  run_cuda(make_dequantize_fp6_block_params(out, packed, scales, block_rows, block_cols), packed,
           "dequantize_fp6_block", ltx_kernels::dequantize_fp6_block);
}

void quantize_fp6_cuda(at::Tensor& out, const at::Tensor& x, c10::string_view fmt) {
  run_cuda(make_quantize_fp6_params(out, x, fmt), x, "quantize_fp6", ltx_kernels::quantize_fp6);
}

void dequantize_fp6_cuda(at::Tensor& out, const at::Tensor& codes, c10::string_view fmt) {
  run_cuda(make_dequantize_fp6_params(out, codes, fmt), codes, "dequantize_fp6", ltx_kernels::dequantize_fp6);
}

void quantize_nvfp4_cuda(at::Tensor& packed, at::Tensor& block_scales, const at::Tensor& x,
                         const at::Tensor& per_tensor_scale, bool hi_first) {
  run_cuda(make_quantize_nvfp4_params(packed, block_scales, x, per_tensor_scale, hi_first), x,
           "quantize_nvfp4", ltx_kernels::quantize_nvfp4);
}

void dequantize_nvfp4_cuda(at::Tensor& out, const at::Tensor& packed, const at::Tensor& block_scales,
                           const at::Tensor& per_tensor_scale, bool hi_first) {
  run_cuda(make_dequantize_nvfp4_params(out, packed, block_scales, per_tensor_scale, hi_first), packed,
           "dequantize_nvfp4", ltx_kernels::dequantize_nvfp4);
}
#endif
