// The arguments of the GEMM ops (csrc/torch/gemm.cpp) checked, in the order their messages are
// tested, and turned into one GemmParams: fp8_blockwise_gemm, fp8_rowwise_gemm, bf16_gemm and
// fp6_blockwise_gemm (prepare), scaled_mm_nvfp4 (prepare_nvfp4). A Call holds the arguments as given (what the exact
// fallback takes), the params, and the tensors that keep the params' pointers alive.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "common.h"
#include "gemm_scales.h"
#include "ltx_kernels/gemm/backend.h"
#include "ltx_kernels/gemm/gemm_params.h"

namespace ltx_kernels {
namespace torch_adapter {
namespace gemm_op {

using gemm::Backend, gemm::Epilogue, gemm::GateKind, gemm::Operands, gemm::OutKind;
using Opt = std::optional<at::Tensor>;

constexpr int64_t kGroup = 128;

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// A call's arguments as the user gave them (what the exact fallback takes).
struct Args {
  const char* op = "";
  at::Tensor out, a, b;
  Opt out_scales, a_scales, b_scales, bias, residual, gate, alpha;
  std::string epilogue = "none";
  bool hi_first = false;
};

// A checked call: its GemmParams and the tensors that keep the params' pointers alive.
struct Call {
  Args x;
  gemm::GemmParams p;
  Backend requested = Backend::kAuto;
  std::vector<at::Tensor> held;
  bool empty = false;
  void* keep(const at::Tensor& t) { return held.emplace_back(t).data_ptr(); }
  // t as rows (itself when row-addressable, else a contiguous copy), kept; *ptr its data
  RowLayout rows(const at::Tensor& t, const void** ptr) {
    at::Tensor h;
    const RowLayout l = input_rows(t, h);
    *ptr = keep(h);
    return l;
  }
};

inline Backend parse_backend(c10::string_view s, const char* op, Operands ops) {
  Backend b = Backend::kAuto;
  std::string error;
  LTX_CHECK(gemm::parse_backend(std::string(s.data(), s.size()), ops, &b, &error), op, error);
  return b;
}

inline void check_device_kind(const at::Tensor& t, const char* op) {
#ifdef LTX_KERNELS_WITH_CUDA
  LTX_CHECK(t.is_cpu() || t.is_cuda(), op, "tensors must be on the CPU or a CUDA device (got ", t.device(), ")");
#else
  LTX_CHECK(t.is_cpu(), op, "this build has no CUDA backend (got a tensor on ", t.device(), ")");
#endif
}

// Every check of fp8_blockwise_gemm, fp8_rowwise_gemm, bf16_gemm and fp6_blockwise_gemm, in the
// order the messages are tested; fills c.p.
inline void prepare(Call& c, Operands ops) {
  const Args& x = c.x;
  const at::Tensor &a = x.a, &b = x.b, &out = x.out;
  const char* op = x.op;
  gemm::GemmParams& p = c.p;
  const bool fp8 = ops == Operands::kFp8Blockwise, fp6 = ops == Operands::kFp6Blockwise, scaled = fp8 || fp6;
  const bool rowwise = ops == Operands::kFp8Rowwise, e4m3 = scaled || rowwise;  // a in e4m3
  p.operands = ops;
  const std::string& e = x.epilogue;
  LTX_CHECK(e == "none" || e == "gelu_tanh" || e == "gated_residual", op,
            "epilogue must be 'none', 'gelu_tanh' or 'gated_residual' (got '", e, "')");
  p.epilogue = e == "none" ? Epilogue::kNone : e == "gelu_tanh" ? Epilogue::kGeluTanh : Epilogue::kGatedResidual;
  LTX_CHECK(a.scalar_type() == (e4m3 ? at::kFloat8_e4m3fn : at::kBFloat16), op, "a must be ",
            e4m3 ? "float8_e4m3fn" : "bfloat16", " (got ", a.scalar_type(), ")");
  const char* bname = fp6 ? "b_packed" : "b";
  LTX_CHECK(b.scalar_type() == (fp6 ? at::kByte : a.scalar_type()), op, bname, " must be ",
            fp6 ? "uint8 (LTX-2 packed FP6)" : e4m3 ? "float8_e4m3fn" : "bfloat16", " (got ", b.scalar_type(), ")");
  const char* bk = fp6 ? "3K/4" : "K";
  LTX_CHECK(a.dim() >= 1, op, "a must have at least one dimension [..., K] (got a scalar)");
  LTX_CHECK(b.dim() == 2, op, bname, " must be 2-D [N, ", bk, "] (got shape ", shape_str(b.sizes()), ")");
  p.K = a.size(-1);
  p.N = b.size(0);
  p.M = 1;
  for (int64_t d = 0; d + 1 < a.dim(); ++d) p.M *= a.size(d);
  LTX_CHECK(!scaled || p.K % kGroup == 0, op, "K = a.shape[-1] must be a multiple of 128, the scaling block (got ", p.K,
            "; pad K with zeros)");
  LTX_CHECK(!rowwise || p.K % 16 == 0, op, "K = a.shape[-1] must be a multiple of 16: rows of a and b 16-byte "
            "aligned for the tensor-memory copies (got ", p.K, "; pad K with zeros)");
  const int64_t want_bcols = fp6 ? p.K / 4 * 3 : p.K;
  LTX_CHECK(b.size(1) == want_bcols, op, bname, " must have shape [N, ", bk, "] with ", bk, " = ", want_bcols,
            " for K = a.shape[-1] = ", p.K, " (got shape ", shape_str(b.sizes()), ")");
  if (e4m3) {
    LTX_CHECK(p.N % 8 == 0, op,
              "N = b.shape[0] must be a multiple of 8: the output rows must be 16-byte aligned "
              "(8 bf16/fp16) for the tensor-core kernels' vector stores (got N = ", p.N, ")");
  }
  if (rowwise) {
    const at::Tensor &sa = *x.a_scales, &sb = *x.b_scales;
    check_row_scales(sa, "a_scales", p.M, "row of a (token)", op);
    check_row_scales(sb, "b_scales", p.N, "row of b (output channel)", op);
    check_same_device(sa, a, op, "a_scales", "a");
    check_same_device(sb, a, op, "b_scales", "a");
    at::Tensor sb_kept;
    set_row_scales(p, sa, sb, &sb_kept);
    c.keep(sb_kept);
  }
  if (scaled) {
    const at::Tensor &sa = *x.a_scales, &sb = *x.b_scales;
    const int64_t G = p.K / kGroup, tn = (p.N + kGroup - 1) / kGroup;
    check_scales(sa, "a_scales", p.M, G, "[M, K / 128]", op);
    LTX_CHECK(row_or_m_major(sa, p.M, G), op,
              "a_scales must be row-major (strides (K/128, 1)) or M-major (strides (1, M_pad) with M_pad >= M, "
              "as quantize_fp8_per_token_group(..., scale_layout='mn_major') writes) (got strides ",
              shape_str(sa.strides()), ")");
    check_scales(sb, "b_scales", tn, G, "[ceil(N / 128), K / 128]", op);
    check_same_device(sa, a, op, "a_scales", "a");
    check_same_device(sb, a, op, "b_scales", "a");
    p.a_scales = static_cast<const float*>(c.keep(sa));
    p.sa_stride_m = sa.stride(0);
    p.sa_stride_k = sa.stride(1);
    p.b_scales = static_cast<const float*>(c.keep(sb));
    p.sb_stride_n = sb.stride(0);
    p.sb_stride_k = sb.stride(1);
  }
  const bool fp8_out = out.scalar_type() == at::kFloat8_e4m3fn;
  LTX_CHECK(out.scalar_type() == at::kBFloat16 || out.scalar_type() == at::kHalf || (fp8_out && !fp6), op,
            "out must be bfloat16 or float16", fp6 ? "" : " (or float8_e4m3fn with out_scales: FP8 output)", " (got ",
            out.scalar_type(), ")");
  p.out = fp8_out ? OutKind::kFP8 : out.scalar_type() == at::kHalf ? OutKind::kFP16 : OutKind::kBF16;
  std::vector<int64_t> want(a.sizes().begin(), a.sizes().end());
  want.back() = p.N;
  LTX_CHECK(out.sizes() == c10::IntArrayRef(want), op, "out must have shape a.shape[:-1] + [N] = ", shape_str(want),
            " (got ", shape_str(out.sizes()), ")");
  check_same_device(b, a, op, bname, "a");
  check_same_device(out, a, op, "out", "a");
  check_device_kind(a, op);
  if (fp8_out) {
    LTX_CHECK(x.out_scales.has_value(), op, "an FP8 out needs out_scales (fp32 [M, N / 128])");
    const at::Tensor& os = *x.out_scales;
    LTX_CHECK(p.N % kGroup == 0, op,
              "the FP8 output quantizes groups of 128 columns: N must be a multiple of 128 (got N = ", p.N, ")");
    LTX_CHECK(p.epilogue != Epilogue::kGatedResidual, op, "the gated residual writes bfloat16 or float16, not FP8");
    check_scales(os, "out_scales", p.M, p.N / kGroup, "[M, N / 128]", op);
    LTX_CHECK(row_or_m_major(os, p.M, p.N / kGroup), op, "out_scales must be row-major (strides (N/128, 1)) or "
              "M-major (strides (1, M_pad)) (got strides ", shape_str(os.strides()), ")");
    check_same_device(os, a, op, "out_scales", "a");
    LTX_CHECK(!bytes_overlap(os, out), op, "out_scales and out must not overlap");
    p.d_scales = static_cast<float*>(c.keep(os));
    p.ds_stride_m = os.stride(0);
    p.ds_stride_g = os.stride(1);
  } else {
    LTX_CHECK(!x.out_scales.has_value(), op, "out_scales is only written for an FP8 (float8_e4m3fn) out");
  }
  at::Tensor bias_c;  // the bias the kernels read (stride 1)
  if (x.bias.has_value()) {  // fp32, or the 16-bit output dtype (bfloat16 with an FP8 output)
    const at::Tensor& bias = *x.bias;
    const at::ScalarType b16 = fp8_out ? at::kBFloat16 : out.scalar_type();
    LTX_CHECK(bias.scalar_type() == at::kFloat || (!fp6 && bias.scalar_type() == b16), op, "bias must be float32",
              fp6 ? "" : (fp8_out ? " or bfloat16" : " or out's dtype"), " (got ", bias.scalar_type(), ")");
    LTX_CHECK(bias.dim() == 1 && bias.size(0) == p.N, op, "bias must have shape [N] = [", p.N, "] (got ",
              shape_str(bias.sizes()), ")");
    check_same_device(bias, a, op, "bias", "a");
    bias_c = bias.stride(0) == 1 ? bias : bias.contiguous();
    p.bias = c.keep(bias_c);
    p.bias_is_out_dtype = bias.scalar_type() != at::kFloat;
  }
  if (p.epilogue == Epilogue::kGatedResidual) {  // h of out's shape and dtype, gate [B, N] or out's shape
    LTX_CHECK(x.residual.has_value() && x.gate.has_value(), op, "epilogue 'gated_residual' needs residual and gate");
    const at::Tensor &h = *x.residual, &g = *x.gate;
    LTX_CHECK(h.scalar_type() == out.scalar_type() && h.sizes() == out.sizes(), op,
              "residual must have out's shape and dtype ", shape_str(out.sizes()), " ", out.scalar_type(), " (got ",
              shape_str(h.sizes()), " ", h.scalar_type(), ")");
    LTX_CHECK(g.scalar_type() == out.scalar_type(), op, "gate must have out's dtype ", out.scalar_type(), " (got ",
              g.scalar_type(), ")");
    check_same_device(h, a, op, "residual", "a");
    check_same_device(g, a, op, "gate", "a");
    const bool per_token = g.sizes() == out.sizes();
    bool per_sample = out.dim() >= 2 && g.dim() >= 2 && g.size(0) == out.size(0) && g.size(-1) == p.N &&
                      (g.dim() == 2 || g.dim() == out.dim());
    for (int64_t d = 1; per_sample && d + 1 < g.dim(); ++d) per_sample = g.size(d) == 1;
    LTX_CHECK(per_token || per_sample, op,
              "gate must be [B, N] (per sample, B = a.shape[0], a with at least 2 dimensions) or out.shape (per token) "
              "(got gate ", shape_str(g.sizes()), " for out ", shape_str(out.sizes()), ")");
    p.gate_kind = per_token ? GateKind::kPerToken : GateKind::kPerSample;
    p.gate_rows = per_token ? p.M : out.size(0);
    p.tokens_per_sample = per_token ? 1 : (p.gate_rows > 0 ? p.M / p.gate_rows : 1);
  } else {
    LTX_CHECK(!x.residual.has_value() && !x.gate.has_value(), op,
              "residual and gate are only read by epilogue='gated_residual' (got epilogue without them)");
  }
  c.empty = out.numel() == 0;
  if (c.empty) return;
  const RowLayout ol = output_rows(out, op);
  p.d = out.data_ptr();
  p.ldd = ol.stride;
  check_no_partial_overlap(out, a, op, "a");
  check_no_partial_overlap(out, b, op, bname);
  const at::Tensor none;
  const at::Tensor *sa = e4m3 ? &*x.a_scales : &none, *sb = e4m3 ? &*x.b_scales : &none;
  const std::pair<const at::Tensor*, const char*> ins[] = {{&bias_c, "bias"}, {sa, "a_scales"}, {sb, "b_scales"}};
  for (const auto& [t, name] : ins)
    if (t->defined()) check_no_partial_overlap(out, *t, op, name);
  if (x.out_scales.has_value() && p.out == OutKind::kFP8) {
    for (const at::Tensor* t : {&a, &b, sa, sb, static_cast<const at::Tensor*>(&bias_c)})
      LTX_CHECK(!(t->defined() && bytes_overlap(*x.out_scales, *t)), op, "out_scales must not overlap the inputs");
  }
  if (p.epilogue == Epilogue::kGatedResidual) {  // out may be residual itself (in place), never the gate
    check_no_partial_overlap(out, *x.residual, op, "residual");
    LTX_CHECK(!bytes_overlap(out, *x.gate), op, "out must not overlap gate");
    p.ld_residual = c.rows(*x.residual, &p.residual).stride;
    const at::Tensor g2d = p.gate_kind == GateKind::kPerToken ? *x.gate : x.gate->reshape({p.gate_rows, p.N});
    p.ld_gate = c.rows(g2d, &p.gate).stride;
  }
  if (p.K == 0) return;
  const RowLayout al = c.rows(a.dim() == 2 ? a : a.reshape({p.M, p.K}), &p.a);
  check_rows_fit(al, op);
  p.lda = al.stride;
  p.ldb = c.rows(b, &p.b).stride;
}

// Every check of scaled_mm_nvfp4 (c.x: out, a = a_packed, b = b_packed, a_scales = block_a,
// b_scales = block_b, bias, alpha, hi_first); fills c.p (Operands::kNvfp4).
inline void prepare_nvfp4(Call& c) {
  const char* op = c.x.op;
  const at::Tensor &out = c.x.out, &a_packed = c.x.a, &b_packed = c.x.b, &alpha = *c.x.alpha;
  const at::Tensor &block_a = *c.x.a_scales, &block_b = *c.x.b_scales;
  const Opt& bias = c.x.bias;
  gemm::GemmParams& p = c.p;
  p.operands = Operands::kNvfp4;
  LTX_CHECK(a_packed.scalar_type() == at::kByte && b_packed.scalar_type() == at::kByte, op,
            "a_packed and b_packed must be uint8 (two E2M1 values per byte) (got ", a_packed.scalar_type(), " and ",
            b_packed.scalar_type(), ")");
  LTX_CHECK(a_packed.dim() >= 1, op, "a_packed must be [..., K/2] (got a scalar)");
  LTX_CHECK(b_packed.dim() == 2, op, "b_packed must be 2-D [N, K/2] (got shape ", shape_str(b_packed.sizes()), ")");
  p.K = a_packed.size(-1) * 2;
  p.N = b_packed.size(0);
  p.M = 1;
  for (int64_t d = 0; d + 1 < a_packed.dim(); ++d) p.M *= a_packed.size(d);
  LTX_CHECK(p.K % 16 == 0, op, "K = 2 * a_packed.shape[-1] must be a multiple of 16, the NVFP4 block (got ", p.K, ")");
  LTX_CHECK(b_packed.size(1) * 2 == p.K, op, "b_packed must have shape [N, K/2] = [N, ", p.K / 2, "] (got shape ",
            shape_str(b_packed.sizes()), ")");
  LTX_CHECK(p.N % 8 == 0, op, "N = b_packed.shape[0] must be a multiple of 8 (16-byte output rows) (got ", p.N, ")");
  const int64_t sc = round_up(p.K / 16, 4);
  auto check_block = [&](const at::Tensor& s, const char* name, const char* dim, int64_t rows) {
    LTX_CHECK(s.scalar_type() == at::kByte && s.dim() == 2 && s.size(0) == round_up(rows, 128) && s.size(1) == sc, op,
              name, " must be uint8 [roundup(", dim, ", 128), roundup(K/16, 4)] = [", round_up(rows, 128), ", ", sc,
              "] as quantize_nvfp4 writes it (got ", s.scalar_type(), " ", shape_str(s.sizes()), ")");
  };
  check_block(block_a, "block_a", "M", p.M);
  check_block(block_b, "block_b", "N", p.N);
  LTX_CHECK(alpha.scalar_type() == at::kFloat && alpha.numel() == 1, op,
            "alpha must be a one-element float32 tensor (s_a * s_w) (got ", alpha.scalar_type(), " ",
            shape_str(alpha.sizes()), ")");
  if (bias) {
    LTX_CHECK(bias->scalar_type() == at::kFloat && bias->dim() == 1 && bias->size(0) == p.N, op,
              "bias must be float32 [N] = [", p.N, "] (got ", bias->scalar_type(), " ", shape_str(bias->sizes()), ")");
  }
  LTX_CHECK(out.scalar_type() == at::kBFloat16 || out.scalar_type() == at::kHalf, op,
            "out must be bfloat16 or float16 (got ", out.scalar_type(), ")");
  std::vector<int64_t> want(a_packed.sizes().begin(), a_packed.sizes().end());
  want.back() = p.N;
  LTX_CHECK(out.sizes() == c10::IntArrayRef(want), op, "out must have shape a_packed.shape[:-1] + [N] = ",
            shape_str(want), " (got ", shape_str(out.sizes()), ")");
  const std::pair<const at::Tensor*, const char*> same[] = {
      {&b_packed, "b_packed"}, {&block_a, "block_a"}, {&block_b, "block_b"}, {&alpha, "alpha"}, {&out, "out"}};
  for (const auto& [t, name] : same) check_same_device(*t, a_packed, op, name, "a_packed");
  if (bias) check_same_device(*bias, a_packed, op, "bias", "a_packed");
  check_device_kind(a_packed, op);
  c.empty = out.numel() == 0;
  if (!c.empty) {
    p.out = out.scalar_type() == at::kHalf ? OutKind::kFP16 : OutKind::kBF16;
    p.d = out.data_ptr();
    p.ldd = output_rows(out, op).stride;
    if (bias) p.bias = c.keep(bias->contiguous());
  }
  if (!c.empty && p.K > 0) {
    p.a = c.keep(a_packed.reshape({p.M, p.K / 2}).contiguous());
    p.lda = p.ldb = p.K / 2;
    p.b = c.keep(b_packed.contiguous());
    p.a_block_scales = c.keep(block_a.contiguous());
    p.b_block_scales = c.keep(block_b.contiguous());
    p.alpha = static_cast<const float*>(c.keep(alpha.reshape({1}).contiguous()));
    p.fp4_hi_first = c.x.hi_first;
  }
}

}  // namespace gemm_op
}  // namespace torch_adapter
}  // namespace ltx_kernels
