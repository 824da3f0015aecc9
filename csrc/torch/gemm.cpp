// Torch adapter for the GEMM family: fp8_blockwise_gemm (blockwise-scaled FP8, semantics in
// docs/semantics.md, "FP8 block scaling"), bf16_gemm, both with the fused epilogues of
// ltx_kernels/gemm/gemm_params.h; fp6_blockwise_gemm (LTX-2 packed FP6 weights); scaled_mm_nvfp4.
// Each op: checks, one GemmParams, then
//   CPU   "cpu" (the C++ backend, rows in parallel) or "torch";
//   CUDA  the GEMM entry (ltx_kernels/gemm/gemm.h) picks the kernel ("auto") or checks the forced
//         one, and launches it.
// "torch" (any device) is the exact fallback: both operands dequantized exactly in fp32 (e4m3
// value * scale, or bf16 -> fp32), an fp32 matmul, + bias, the epilogue in fp32, one rounding (or
// the FP8 quantizer) at the end; written in Python (ltx_kernels/gemm.py, on reference.py) and
// reached through the dispatcher as the op gemm_exact.
// A forced backend that cannot run a call raises "backend 'X' cannot run this call (<why>)"; under
// "auto" a kernel answering cudaErrorNotSupported falls through to the next backend.
// LTX_KERNELS_GEMM_CONFIG (a developer setting) forces all or part of the sm_90a kernel's tile
// configuration; its grammar: gemm/config.h.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "common.h"
#include "ltx_kernels/cpu/ops.h"
#include "ltx_kernels/cpu/gemm.h"
#include "ltx_kernels/cpu/lowbit.h"
#include "ltx_kernels/gemm/backend.h"
#include "ltx_kernels/gemm/config.h"
#include "ltx_kernels/gemm/gemm_params.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "ltx_kernels/gemm/gemm.h"
#include "ltx_kernels/cuda/ops.h"
#include "ltx_kernels/quant/lowbit.h"
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;
using gemm::Epilogue;
using gemm::GateKind;
using gemm::GemmParams;
using gemm::Operands;
using gemm::OutKind;

constexpr int64_t kGroup = 128;
constexpr int64_t kCpuGrain = 16;  // rows per CPU task (the backend blocks 16 rows)

using Be = gemm::Backend;  // the registry: gemm/backend.h

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

const char* be_name(Be b) { return gemm::backend_name(b); }

Be parse_backend(c10::string_view s, const char* op, Operands ops) {
  Be b = Be::kAuto;
  std::string error;
  LTX_CHECK(gemm::parse_backend(std::string(s.data(), s.size()), ops, &b, &error), op, error);
  return b;
}

Epilogue parse_epilogue(c10::string_view s, const char* op) {
  const std::string e(s.data(), s.size());
  if (e == "none") return Epilogue::kNone;
  if (e == "gelu_tanh") return Epilogue::kGeluTanh;
  if (e == "gated_residual") return Epilogue::kGatedResidual;
  LTX_CHECK(false, op, "epilogue must be 'none', 'gelu_tanh' or 'gated_residual' (got '", e, "')");
  return Epilogue::kNone;
}

// LTX_KERNELS_GEMM_CONFIG (a developer setting) -> the forced part of the sm_90a tile
// configuration (gemm/config.h).
gemm::TileConfig env_config(const char* op) {
  gemm::TileConfig c;
  std::string error;
  LTX_CHECK(gemm::parse_tile_config(dev_setting("LTX_KERNELS_GEMM_CONFIG"), &c, &error), op, error);
  return c;
}

void check_device_kind(const at::Tensor& t, const char* op) {
#ifdef LTX_KERNELS_WITH_CUDA
  LTX_CHECK(t.is_cpu() || t.is_cuda(), op, "tensors must be on the CPU or a CUDA device (got ", t.device(), ")");
#else
  LTX_CHECK(t.is_cpu(), op, "this build has no CUDA backend (got a tensor on ", t.device(), ")");
#endif
}

// An op's arguments as the user gave them: what the exact fallback takes.
struct Args {
  const char* op = "";
  at::Tensor out, a, b;
  std::optional<at::Tensor> out_scales, a_scales, b_scales, bias, residual, gate, alpha;
  std::string epilogue = "none";
  bool hi_first = false;
};

#define LTX_STR2(x) #x
#define LTX_STR(x) LTX_STR2(x)

// The "torch" backend: the exact fallback, written in Python (ltx_kernels/gemm.py, on
// reference.py), reached through the dispatcher as the op gemm_exact.
void run_exact(const Args& x) {
  static const c10::OperatorHandle h =
      c10::Dispatcher::singleton().findSchemaOrThrow(LTX_STR(TORCH_EXTENSION_NAME) "::gemm_exact", "");
  LTX_CHECK(h.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd), x.op,
            "the exact fallback (backend 'torch') is implemented in Python: import ltx_kernels first");
  torch::jit::Stack st{std::string(x.op), x.out, x.out_scales, x.a, x.a_scales, x.b, x.b_scales, x.bias,
                       x.epilogue, x.residual, x.gate, x.alpha, x.hi_first};
  h.callBoxed(&st);
}

// The checked call and the tensors that keep its pointers alive.
struct Call {
  GemmParams p;
  Args args;
  const char* op = "";
  at::Tensor a2, b2, a_scales, b_scales, bias, out2, out_scales, res2, gate2;
  RowLayout al{}, bl{}, ol{};
  int64_t B = 0;  // samples of a per-sample gate
  bool empty = false;
};

OutKind out_kind(const at::Tensor& out) {
  return out.scalar_type() == at::kFloat8_e4m3fn ? OutKind::kFP8
         : out.scalar_type() == at::kHalf        ? OutKind::kFP16
                                                 : OutKind::kBF16;
}

// A scale table [M, G] is row-major (strides (G, 1)) or M-major (strides (1, M_pad), M_pad >= M);
// a dimension of size 1 may have any stride.
bool row_or_m_major(const at::Tensor& s, int64_t M, int64_t G) {
  const int64_t s0 = s.stride(0), s1 = s.stride(1);
  const bool row_major = (G <= 1 || s1 == 1) && (M <= 1 || s0 >= G);
  const bool m_major = (M <= 1 || s0 == 1) && (G <= 1 || s1 >= M);
  return row_major || m_major;
}

// Checks shared by fp8_blockwise_gemm, bf16_gemm and fp6_blockwise_gemm; fills c.p.
void prepare(Call& c, at::Tensor& out, const std::optional<at::Tensor>& out_scales, const at::Tensor& a,
             const std::optional<at::Tensor>& a_scales, const at::Tensor& b, const std::optional<at::Tensor>& b_scales,
             const std::optional<at::Tensor>& bias, Epilogue epi, const std::optional<at::Tensor>& residual,
             const std::optional<at::Tensor>& gate) {
  GemmParams& p = c.p;
  const char* op = c.op;
  const bool fp8 = p.operands == Operands::kFp8Blockwise, fp6 = p.operands == Operands::kFp6Blockwise;
  const bool scaled = fp8 || fp6;
  p.epilogue = epi;
  if (scaled) {
    LTX_CHECK(a.scalar_type() == at::kFloat8_e4m3fn, op, "a must be float8_e4m3fn (got ", a.scalar_type(), ")");
  } else {
    LTX_CHECK(a.scalar_type() == at::kBFloat16, op, "a must be bfloat16 (got ", a.scalar_type(), ")");
  }
  const char* bname = fp6 ? "b_packed" : "b";
  if (fp6) {
    LTX_CHECK(b.scalar_type() == at::kByte, op, "b_packed must be uint8 (LTX-2 packed FP6) (got ", b.scalar_type(), ")");
  } else {
    LTX_CHECK(b.scalar_type() == a.scalar_type(), op, "b must be ", fp8 ? "float8_e4m3fn" : "bfloat16", " (got ",
              b.scalar_type(), ")");
  }
  LTX_CHECK(a.dim() >= 1, op, "a must have at least one dimension [..., K] (got a scalar)");
  LTX_CHECK(b.dim() == 2, op, bname, " must be 2-D [N, ", fp6 ? "3K/4" : "K", "] (got shape ", shape_str(b.sizes()),
            ")");
  p.K = a.size(-1);
  p.N = b.size(0);
  p.M = 1;
  for (int64_t d = 0; d + 1 < a.dim(); ++d) p.M *= a.size(d);
  if (scaled) {
    LTX_CHECK(p.K % kGroup == 0, op, "K = a.shape[-1] must be a multiple of 128, the scaling block (got ", p.K,
              "; pad K with zeros)");
  }
  const int64_t want_bcols = fp6 ? p.K / 4 * 3 : p.K;
  LTX_CHECK(b.size(1) == want_bcols, op, bname, " must have shape [N, ", fp6 ? "3K/4" : "K", "] with ",
            fp6 ? "3K/4" : "K", " = ", want_bcols, " for K = a.shape[-1] = ", p.K, " (got shape ", shape_str(b.sizes()),
            ")");
  if (scaled) {
    LTX_CHECK(p.N % 8 == 0, op,
              "N = b.shape[0] must be a multiple of 8: the output rows must be 16-byte aligned "
              "(8 bf16/fp16) for the tensor-core kernels' vector stores (got N = ", p.N, ")");
    const at::Tensor& sa = *a_scales;
    const at::Tensor& sb = *b_scales;
    const int64_t G = p.K / kGroup;
    LTX_CHECK(sa.scalar_type() == at::kFloat, op, "a_scales must be float32 (got ", sa.scalar_type(), ")");
    LTX_CHECK(sa.dim() == 2 && sa.size(0) == p.M && sa.size(1) == G, op, "a_scales must have shape [M, K / 128] = [",
              p.M, ", ", G, "] (got ", shape_str(sa.sizes()), ")");
    LTX_CHECK(row_or_m_major(sa, p.M, G), op,
              "a_scales must be row-major (strides (K/128, 1)) or M-major (strides (1, M_pad) with M_pad >= M, "
              "as quantize_fp8_per_token_group(..., scale_layout='mn_major') writes) (got strides ",
              shape_str(sa.strides()), ")");
    const int64_t tn = ceil_div(p.N, kGroup);
    LTX_CHECK(sb.scalar_type() == at::kFloat, op, "b_scales must be float32 (got ", sb.scalar_type(), ")");
    LTX_CHECK(sb.dim() == 2 && sb.size(0) == tn && sb.size(1) == G, op,
              "b_scales must have shape [ceil(N / 128), K / 128] = [", tn, ", ", G, "] (got ", shape_str(sb.sizes()),
              ")");
    check_same_device(sa, a, op, "a_scales", "a");
    check_same_device(sb, a, op, "b_scales", "a");
    c.a_scales = sa;
    c.b_scales = sb;
    p.a_scales = sa.data_ptr<float>();
    p.sa_stride_m = sa.stride(0);
    p.sa_stride_k = sa.stride(1);
    p.b_scales = sb.data_ptr<float>();
    p.sb_stride_n = sb.stride(0);
    p.sb_stride_k = sb.stride(1);
  }
  // output
  const bool fp8_out = out.scalar_type() == at::kFloat8_e4m3fn;
  LTX_CHECK(out.scalar_type() == at::kBFloat16 || out.scalar_type() == at::kHalf || (fp8_out && !fp6), op,
            "out must be bfloat16 or float16", fp6 ? "" : " (or float8_e4m3fn with out_scales: FP8 output)", " (got ",
            out.scalar_type(), ")");
  p.out = out_kind(out);
  std::vector<int64_t> want(a.sizes().begin(), a.sizes().end());
  want.back() = p.N;
  LTX_CHECK(out.sizes() == c10::IntArrayRef(want), op, "out must have shape a.shape[:-1] + [N] = ", shape_str(want),
            " (got ", shape_str(out.sizes()), ")");
  check_same_device(b, a, op, bname, "a");
  check_same_device(out, a, op, "out", "a");
  check_device_kind(a, op);
  if (fp8_out) {
    LTX_CHECK(out_scales.has_value(), op, "an FP8 out needs out_scales (fp32 [M, N / 128])");
    const at::Tensor& os = *out_scales;
    LTX_CHECK(p.N % kGroup == 0, op, "the FP8 output quantizes groups of 128 columns: N must be a multiple of 128 (got N = ",
              p.N, ")");
    LTX_CHECK(epi != Epilogue::kGatedResidual, op, "the gated residual writes bfloat16 or float16, not FP8");
    const int64_t G = p.N / kGroup;
    LTX_CHECK(os.scalar_type() == at::kFloat, op, "out_scales must be float32 (got ", os.scalar_type(), ")");
    LTX_CHECK(os.dim() == 2 && os.size(0) == p.M && os.size(1) == G, op, "out_scales must have shape [M, N / 128] = [",
              p.M, ", ", G, "] (got ", shape_str(os.sizes()), ")");
    LTX_CHECK(row_or_m_major(os, p.M, G), op, "out_scales must be row-major (strides (N/128, 1)) or M-major (strides (1, M_pad)) (got strides ",
              shape_str(os.strides()), ")");
    check_same_device(os, a, op, "out_scales", "a");
    LTX_CHECK(!bytes_overlap(os, out), op, "out_scales and out must not overlap");
    c.out_scales = os;
    p.d_scales = os.data_ptr<float>();
    p.ds_stride_m = os.stride(0);
    p.ds_stride_g = os.stride(1);
  } else {
    LTX_CHECK(!out_scales.has_value(), op, "out_scales is only written for an FP8 (float8_e4m3fn) out");
  }
  if (bias.has_value()) {
    // fp32, or the 16-bit output dtype (bfloat16 with an FP8 output)
    const at::ScalarType b16 = fp8_out ? at::kBFloat16 : out.scalar_type();
    const bool ok_dtype = bias->scalar_type() == at::kFloat || (!fp6 && bias->scalar_type() == b16);
    LTX_CHECK(ok_dtype, op, "bias must be float32", fp6 ? "" : (fp8_out ? " or bfloat16" : " or out's dtype"), " (got ",
              bias->scalar_type(), ")");
    LTX_CHECK(bias->dim() == 1 && bias->size(0) == p.N, op, "bias must have shape [N] = [", p.N, "] (got ",
              shape_str(bias->sizes()), ")");
    check_same_device(*bias, a, op, "bias", "a");
    c.bias = bias->stride(0) == 1 ? *bias : bias->contiguous();
    p.bias = c.bias.data_ptr();
    p.bias_is_out_dtype = bias->scalar_type() != at::kFloat;
  }
  // gated residual: h of out's shape and dtype, gate per sample [B, N] or per token (out's shape)
  if (epi == Epilogue::kGatedResidual) {
    LTX_CHECK(residual.has_value() && gate.has_value(), op, "epilogue 'gated_residual' needs residual and gate");
    const at::Tensor& h = *residual;
    const at::Tensor& g = *gate;
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
    c.B = per_token ? p.M : out.size(0);
    p.gate_rows = c.B;
    p.tokens_per_sample = per_token ? 1 : (c.B > 0 ? p.M / c.B : 1);
  } else {
    LTX_CHECK(!residual.has_value() && !gate.has_value(), op,
              "residual and gate are only read by epilogue='gated_residual' (got epilogue without them)");
  }
  c.empty = out.numel() == 0;
  if (c.empty) return;
  c.ol = output_rows(out, op);
  c.out2 = at::as_strided(out, {p.M, p.N}, {c.ol.stride, 1});
  p.d = c.out2.data_ptr();
  p.ldd = c.ol.stride;
  check_no_partial_overlap(out, a, op, "a");
  check_no_partial_overlap(out, b, op, bname);
  if (c.bias.defined()) check_no_partial_overlap(out, c.bias, op, "bias");
  if (c.a_scales.defined()) check_no_partial_overlap(out, c.a_scales, op, "a_scales");
  if (c.b_scales.defined()) check_no_partial_overlap(out, c.b_scales, op, "b_scales");
  if (c.out_scales.defined()) {
    for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&a, &b, &c.a_scales, &c.b_scales, &c.bias})
      if (t->defined()) LTX_CHECK(!bytes_overlap(c.out_scales, *t), op, "out_scales must not overlap the inputs");
  }
  if (epi == Epilogue::kGatedResidual) {
    // out may be residual itself (in place); the gate must be apart from out
    check_no_partial_overlap(out, *residual, op, "residual");
    LTX_CHECK(!bytes_overlap(out, *gate), op, "out must not overlap gate");
    const RowLayout hl = input_rows(*residual, c.res2);
    p.residual = c.res2.data_ptr();
    p.ld_residual = hl.stride;
    const at::Tensor g2d = p.gate_kind == GateKind::kPerToken ? *gate : gate->reshape({c.B, p.N});
    const RowLayout gl = input_rows(g2d, c.gate2);
    p.gate = c.gate2.data_ptr();
    p.ld_gate = gl.stride;
  }
  if (p.K == 0) return;
  const at::Tensor a_flat = a.dim() == 2 ? a : a.reshape({p.M, p.K});
  c.al = input_rows(a_flat, c.a2);
  c.bl = input_rows(b, c.b2);
  check_rows_fit(c.al, op);
  p.a = c.a2.data_ptr();
  p.lda = c.al.stride;
  p.b = c.b2.data_ptr();
  p.ldb = c.bl.stride;
}

// ---- the "cpu" backend
void run_cpu(const Call& c) {
  const GemmParams& p = c.p;
  at::parallel_for(0, p.M, kCpuGrain, [&](int64_t b, int64_t e) { cpu::gemm_rows(p, b, e); });
}

void run_torch(Call& c, const at::Tensor&) { run_exact(c.args); }

#ifdef LTX_KERNELS_WITH_CUDA
// The device's attributes (cached per device by common/device.h, read through gemm::query_device).
gemm::Device gemm_device(const at::Tensor& t) {
  const int idx = t.device().index();
  TORCH_CHECK(idx >= 0 && idx < 64, "ltx_kernels: CUDA device index out of range");
  return gemm::query_device(idx);
}

// A 16-bit bias widened to fp32 (exact) for the kernels that read an fp32 bias only (skinny,
// sm89, the CUTLASS kernel); cuBLASLt reads a bf16 one only, the sm_90a kernel either.
void widen_bias(Call& c) {
  if (c.p.bias == nullptr || !c.p.bias_is_out_dtype) return;
  c.bias = c.bias.to(at::kFloat);
  c.p.bias = c.bias.data_ptr();
  c.p.bias_is_out_dtype = false;
}

// Which backend runs the call on its CUDA device (a forced one that cannot raises).
Be select_cuda(Call& c, Be requested, const at::Tensor& like) {
  LTX_CHECK(requested != Be::kCpu, c.op, "backend 'cpu' cannot run this call (the tensors are on ", like.device(),
            "; move them to the CPU)");
  if (requested == Be::kTorch) return Be::kTorch;
  const gemm::Device& dev = gemm_device(like);
  if (c.empty || c.p.K == 0 || c.p.M == 0) return Be::kTorch;  // nothing for a kernel to do
  if (requested == Be::kAuto) {
    Be be = gemm::choose_auto(c.p, dev);
    if (be != Be::kCublasLt && c.p.bias != nullptr && c.p.bias_is_out_dtype) {
      // not cuBLASLt: what "auto" runs for the same bias in fp32 (widened only if that differs)
      GemmParams p32 = c.p;
      p32.bias_is_out_dtype = false;
      const Be be32 = gemm::choose_auto(p32, dev);
      if (be32 != be) {
        widen_bias(c);
        be = be32;
      }
    }
    return be;
  }
  if (requested == Be::kSkinny || requested == Be::kSm89 || requested == Be::kSm90Cutlass) widen_bias(c);
  const std::string why = gemm::why_not(requested, c.p, dev);
  LTX_CHECK(why.empty(), c.op, "backend '", be_name(requested), "' cannot run this call (", why, ")");
  return requested;
}

void run_cuda(Call& c, Be be, bool is_auto, const at::Tensor& b_values) {
  if (be == Be::kTorch) return run_torch(c, b_values);
  const CudaScope scope(c.a2, c.op);
  const gemm::Device& dev = gemm_device(c.a2);
  const gemm::Backend gb = be;
  const size_t ws = gemm::workspace_bytes(gb, c.p, dev);
  at::Tensor w;
  if (ws > 0) w = at::empty({int64_t(ws)}, c.a2.options().dtype(at::kByte));
  cudaError_t err = gemm::run(gb, c.p, dev, ws > 0 ? w.data_ptr() : nullptr, ws, scope.stream);
  if (err == cudaErrorNotSupported && is_auto) {
    if (be != Be::kSm89 && gemm::why_not(gemm::Backend::kSm89, c.p, dev).empty()) {
      err = gemm::run(gemm::Backend::kSm89, c.p, dev, nullptr, 0, scope.stream);
      if (err != cudaErrorNotSupported) return check_cuda(err, c.op);
    }
    return run_torch(c, b_values);
  }
  LTX_CHECK(err != cudaErrorNotSupported, c.op, "backend '", be_name(be),
            "' cannot run this call (the kernel answered 'not supported')");
  check_cuda(err, c.op);
}
#endif

Be select(Call& c, Be requested, const at::Tensor& like) {
  if (like.is_cpu()) {
    LTX_CHECK(requested == Be::kAuto || requested == Be::kCpu || requested == Be::kTorch, c.op, "backend '",
              be_name(requested), "' cannot run this call (the tensors are on the CPU)");
    return requested == Be::kTorch ? Be::kTorch : Be::kCpu;
  }
#ifdef LTX_KERNELS_WITH_CUDA
  return select_cuda(c, requested, like);
#else
  no_cuda_backend(like, c.op);
#endif
}

void execute(Call& c, Be be, bool is_auto, const at::Tensor& b_values) {
  if (c.empty) return;
  if (be == Be::kCpu) return run_cpu(c);
  if (be == Be::kTorch) return run_torch(c, b_values);
#ifdef LTX_KERNELS_WITH_CUDA
  run_cuda(c, be, is_auto, b_values);
#else
  (void)is_auto;
#endif
}

// Sets up `c` as a call of `op` on `operands`: parses the backend asked for (into `requested`) and
// the epilogue, checks and prepares the arguments, reads the tile override; returns the backend
// that will run it.
Be plan_call(Call& c, const char* op, Operands operands, Be& requested, at::Tensor& out,
             const std::optional<at::Tensor>& out_scales, const at::Tensor& a, const std::optional<at::Tensor>& a_scales,
             const at::Tensor& b, const std::optional<at::Tensor>& b_scales, const std::optional<at::Tensor>& bias,
             c10::string_view epilogue, const std::optional<at::Tensor>& residual,
             const std::optional<at::Tensor>& gate, c10::string_view backend) {
  c.op = op;
  c.p.operands = operands;
  c.args = Args{op, out, a, b, out_scales, a_scales, b_scales, bias, residual, gate, std::nullopt,
                std::string(epilogue.data(), epilogue.size())};
  requested = parse_backend(backend, op, operands);
  const Epilogue epi = parse_epilogue(epilogue, op);
  prepare(c, out, out_scales, a, a_scales, b, b_scales, bias, epi, residual, gate);
  c.p.config = env_config(op);
  return select(c, requested, a);
}

at::Tensor b_matrix(const Call& c) {
  return c.b2.defined() ? at::as_strided(c.b2, {c.p.N, c.p.K}, {c.bl.stride, 1}) : at::Tensor();
}

}  // namespace

void fp8_blockwise_gemm(at::Tensor& out, const std::optional<at::Tensor>& out_scales, const at::Tensor& a,
                        const at::Tensor& a_scales, const at::Tensor& b, const at::Tensor& b_scales,
                        const std::optional<at::Tensor>& bias, c10::string_view epilogue,
                        const std::optional<at::Tensor>& residual, const std::optional<at::Tensor>& gate,
                        c10::string_view backend) {
  Call c;
  Be requested;
  const Be be = plan_call(c, "fp8_blockwise_gemm", Operands::kFp8Blockwise, requested, out, out_scales, a, a_scales, b,
                          b_scales, bias, epilogue, residual, gate, backend);
  execute(c, be, requested == Be::kAuto, b_matrix(c));
}

void bf16_gemm(at::Tensor& out, const std::optional<at::Tensor>& out_scales, const at::Tensor& a, const at::Tensor& b,
               const std::optional<at::Tensor>& bias, c10::string_view epilogue,
               const std::optional<at::Tensor>& residual, const std::optional<at::Tensor>& gate,
               c10::string_view backend) {
  Call c;
  Be requested;
  const Be be = plan_call(c, "bf16_gemm", Operands::kBf16, requested, out, out_scales, a, std::nullopt, b, std::nullopt,
                          bias, epilogue, residual, gate, backend);
  execute(c, be, requested == Be::kAuto, b_matrix(c));
}

// [backend, bm, bn, cluster, group_m, sms] of the call (tile fields 0 unless the backend is "sm90");
// raises what the op would raise.
std::vector<int64_t> gemm_plan(c10::string_view op_name, const at::Tensor& out,
                               const std::optional<at::Tensor>& out_scales, const at::Tensor& a,
                               const std::optional<at::Tensor>& a_scales, const at::Tensor& b,
                               const std::optional<at::Tensor>& b_scales, const std::optional<at::Tensor>& bias,
                               c10::string_view epilogue, const std::optional<at::Tensor>& residual,
                               const std::optional<at::Tensor>& gate, c10::string_view backend) {
  const std::string name(op_name.data(), op_name.size());
  const bool fp8 = name == "fp8_blockwise_gemm";
  LTX_CHECK(fp8 || name == "bf16_gemm", "gemm_plan", "op must be 'fp8_blockwise_gemm' or 'bf16_gemm' (got '", name,
            "')");
  const char* op = fp8 ? "fp8_blockwise_gemm" : "bf16_gemm";
  if (fp8) {
    LTX_CHECK(a_scales.has_value() && b_scales.has_value(), op, "a_scales and b_scales are required");
  }
  Call c;
  Be requested;
  at::Tensor o = out;  // only inspected, never written
  const Be be = plan_call(c, op, fp8 ? Operands::kFp8Blockwise : Operands::kBf16, requested, o, out_scales, a, a_scales,
                          b, b_scales, bias, epilogue, residual, gate, backend);
  std::vector<int64_t> r = {int64_t(be), 0, 0, 0, 0, 0};
#ifdef LTX_KERNELS_WITH_CUDA
  if (be == Be::kSm90) {
    const gemm::TileConfig t = gemm::sm90_config(c.p, gemm_device(a));
    r = {int64_t(be), t.bm, t.bn, t.cluster, t.group_m, t.sms};
  }
#endif
  return r;
}

void fp6_blockwise_gemm(at::Tensor& out, const at::Tensor& a, const at::Tensor& a_scales, const at::Tensor& b_packed,
                        const at::Tensor& b_scales, const std::optional<at::Tensor>& bias,
                        c10::string_view backend) {
  Call c;
  c.op = "fp6_blockwise_gemm";
  c.p.operands = Operands::kFp6Blockwise;
  c.args = Args{c.op, out, a, b_packed, std::nullopt, a_scales, b_scales, bias};
  const Be requested = parse_backend(backend, c.op, Operands::kFp6Blockwise);
  prepare(c, out, std::nullopt, a, a_scales, b_packed, b_scales, bias, Epilogue::kNone, std::nullopt, std::nullopt);
  if (a.is_cpu()) {
    LTX_CHECK(requested == Be::kAuto || requested == Be::kCpu || requested == Be::kTorch, c.op, "backend '",
              be_name(requested), "' cannot run this call (the tensors are on the CPU)");
  } else {
    LTX_CHECK(requested != Be::kCpu, c.op, "backend 'cpu' cannot run this call (the tensors are on ", a.device(),
              "; move them to the CPU)");
  }
  if (c.empty) return;
  const bool is_auto = requested == Be::kAuto;
  if (c.p.K == 0 || requested == Be::kTorch) return run_exact(c.args);
#ifdef LTX_KERNELS_WITH_CUDA
  if (a.is_cuda()) {
    const CudaScope scope(a, c.op);
    const gemm::Device& dev = gemm_device(a);
    // the sm89 FP6 kernel reads the packed bytes directly (ldb in bytes)
    const std::string why = gemm::why_not(gemm::Backend::kSm89, c.p, dev);
    if (requested == Be::kSm89) LTX_CHECK(why.empty(), c.op, "backend 'sm89' cannot run this call (", why, ")");
    if ((is_auto || requested == Be::kSm89) && why.empty()) {
      const cudaError_t err = gemm::run(gemm::Backend::kSm89, c.p, dev, nullptr, 0, scope.stream);
      if (err != cudaErrorNotSupported) return check_cuda(err, c.op);
      LTX_CHECK(is_auto, c.op, "backend 'sm89' cannot run this call (the kernel answered 'not supported')");
    }
  }
#endif
  // otherwise: unpack to e4m3 once (our fp6_unpack), then the FP8 path
  const int64_t groups = c.p.N * c.p.K / 4;
  const at::Tensor packed = c.b2.is_contiguous() ? c.b2 : c.b2.contiguous();
  at::Tensor b8 = at::empty({c.p.N, c.p.K}, a.options().dtype(at::kFloat8_e4m3fn));
  auto* dst = reinterpret_cast<uint8_t*>(b8.data_ptr());
  const auto* src = reinterpret_cast<const uint8_t*>(packed.data_ptr());
  if (a.is_cpu()) {
    at::parallel_for(0, groups, 4096, [&](int64_t b, int64_t e) { cpu::fp6_unpack(dst, src, b, e); });
  } else {
#ifdef LTX_KERNELS_WITH_CUDA
    const CudaScope scope(a, c.op);
    check_cuda(ltx_kernels::fp6_unpack(dst, src, groups, scope.stream), c.op);
#endif
  }
  c.p.operands = Operands::kFp8Blockwise;
  c.b2 = b8;
  c.bl = RowLayout{c.p.N, c.p.K, c.p.K};
  c.p.b = b8.data_ptr();
  c.p.ldb = c.p.K;
  execute(c, select(c, Be::kAuto, a), true, b_matrix(c));
}

// ---- NVFP4 scaled matmul
//   out[m, n] = alpha * sum_k (q_a[m, k] s_a[m, k/16]) (q_b[n, k] s_b[n, k/16]) + bias[n]
// (the per-tensor scales are folded into alpha = s_a * s_w). backend "cublaslt": cuBLASLt's
// block-scaled FP4 GEMM (compute capability >= 10.0, CUDA >= 12.8): CUDA_R_4F_E2M1 operands,
// VEC16_UE4M3 scales in the 128x4 swizzled layout quantize_nvfp4 writes, TN, alpha read from
// the device, bias epilogue. "torch": dequantize both operands exactly in fp32 (our dequantize_nvfp4
// with s_t = 1), fp32 matmul, * alpha, + bias. "auto": cublaslt when it can run, else torch.
namespace {

struct Nvfp4Problem {
  int64_t M = 0, N = 0, K = 0;
  at::Tensor a, b;    // packed uint8 [M, K/2], [N, K/2], contiguous
  at::Tensor ba, bb;  // swizzled E4M3 block scales, contiguous
  at::Tensor alpha;   // fp32, one element
  at::Tensor bias;    // fp32 [N] or undefined
  at::Tensor out2;    // [M, N] view of out
  RowLayout ol{};
};

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace

void scaled_mm_nvfp4(at::Tensor& out, const at::Tensor& a_packed, const at::Tensor& b_packed, const at::Tensor& block_a,
                     const at::Tensor& block_b, const at::Tensor& alpha, const std::optional<at::Tensor>& bias,
                     bool hi_first, c10::string_view backend) {
  constexpr const char* op = "scaled_mm_nvfp4";
  const std::string be(backend.data(), backend.size());
  parse_backend(backend, op, Operands::kNvfp4);
  LTX_CHECK(a_packed.scalar_type() == at::kByte && b_packed.scalar_type() == at::kByte, op,
            "a_packed and b_packed must be uint8 (two E2M1 values per byte) (got ", a_packed.scalar_type(), " and ",
            b_packed.scalar_type(), ")");
  LTX_CHECK(a_packed.dim() >= 1, op, "a_packed must be [..., K/2] (got a scalar)");
  LTX_CHECK(b_packed.dim() == 2, op, "b_packed must be 2-D [N, K/2] (got shape ", shape_str(b_packed.sizes()), ")");
  Nvfp4Problem p;
  p.K = a_packed.size(-1) * 2;
  p.N = b_packed.size(0);
  p.M = 1;
  for (int64_t d = 0; d + 1 < a_packed.dim(); ++d) p.M *= a_packed.size(d);
  LTX_CHECK(p.K % 16 == 0, op, "K = 2 * a_packed.shape[-1] must be a multiple of 16, the NVFP4 block (got ", p.K, ")");
  LTX_CHECK(b_packed.size(1) * 2 == p.K, op, "b_packed must have shape [N, K/2] = [N, ", p.K / 2, "] (got shape ",
            shape_str(b_packed.sizes()), ")");
  LTX_CHECK(p.N % 8 == 0, op, "N = b_packed.shape[0] must be a multiple of 8 (16-byte output rows) (got ", p.N, ")");
  const int64_t sc = round_up(p.K / 16, 4);
  LTX_CHECK(block_a.scalar_type() == at::kByte && block_a.dim() == 2 && block_a.size(0) == round_up(p.M, 128) &&
                block_a.size(1) == sc,
            op, "block_a must be uint8 [roundup(M, 128), roundup(K/16, 4)] = [", round_up(p.M, 128), ", ", sc,
            "] as quantize_nvfp4 writes it (got ", block_a.scalar_type(), " ", shape_str(block_a.sizes()), ")");
  LTX_CHECK(block_b.scalar_type() == at::kByte && block_b.dim() == 2 && block_b.size(0) == round_up(p.N, 128) &&
                block_b.size(1) == sc,
            op, "block_b must be uint8 [roundup(N, 128), roundup(K/16, 4)] = [", round_up(p.N, 128), ", ", sc,
            "] as quantize_nvfp4 writes it (got ", block_b.scalar_type(), " ", shape_str(block_b.sizes()), ")");
  LTX_CHECK(alpha.scalar_type() == at::kFloat && alpha.numel() == 1, op,
            "alpha must be a one-element float32 tensor (s_a * s_w) (got ", alpha.scalar_type(), " ",
            shape_str(alpha.sizes()), ")");
  if (bias.has_value()) {
    LTX_CHECK(bias->scalar_type() == at::kFloat && bias->dim() == 1 && bias->size(0) == p.N, op,
              "bias must be float32 [N] = [", p.N, "] (got ", bias->scalar_type(), " ", shape_str(bias->sizes()), ")");
  }
  LTX_CHECK(out.scalar_type() == at::kBFloat16 || out.scalar_type() == at::kHalf, op,
            "out must be bfloat16 or float16 (got ", out.scalar_type(), ")");
  std::vector<int64_t> want(a_packed.sizes().begin(), a_packed.sizes().end());
  want.back() = p.N;
  LTX_CHECK(out.sizes() == c10::IntArrayRef(want), op, "out must have shape a_packed.shape[:-1] + [N] = ",
            shape_str(want), " (got ", shape_str(out.sizes()), ")");
  check_same_device(b_packed, a_packed, op, "b_packed", "a_packed");
  check_same_device(block_a, a_packed, op, "block_a", "a_packed");
  check_same_device(block_b, a_packed, op, "block_b", "a_packed");
  check_same_device(alpha, a_packed, op, "alpha", "a_packed");
  check_same_device(out, a_packed, op, "out", "a_packed");
  if (bias.has_value()) check_same_device(*bias, a_packed, op, "bias", "a_packed");
  check_device_kind(a_packed, op);
  if (a_packed.is_cpu()) {
    LTX_CHECK(be != "cublaslt", op, "backend 'cublaslt' cannot run this call (the tensors are on the CPU)");
  } else {
    LTX_CHECK(be != "cpu", op, "backend 'cpu' cannot run this call (the tensors are on ", a_packed.device(), ")");
  }
  if (out.numel() == 0) return;
  p.ol = output_rows(out, op);
  p.out2 = at::as_strided(out, {p.M, p.N}, {p.ol.stride, 1});
  const Args exact{op, out, a_packed, b_packed, std::nullopt, block_a, block_b, bias, std::nullopt, std::nullopt,
                   alpha, "none", hi_first};
  if (p.K == 0) return run_exact(exact);
  p.a = a_packed.reshape({p.M, p.K / 2}).contiguous();
  p.b = b_packed.contiguous();
  p.ba = block_a.contiguous();
  p.bb = block_b.contiguous();
  p.alpha = alpha;
  if (bias.has_value()) p.bias = bias->contiguous();
#ifdef LTX_KERNELS_WITH_CUDA
  if (a_packed.is_cuda() && be != "torch") {
    // cuBLASLt's block-scaled FP4 GEMM (csrc/cuda/gemm/cublaslt_gemm.cu)
    const CudaScope scope(a_packed, op);
    const at::Tensor alpha1 = alpha.reshape({1}).contiguous();
    GemmParams g;
    g.operands = Operands::kNvfp4;
    g.M = p.M;
    g.N = p.N;
    g.K = p.K;
    g.a = p.a.data_ptr();
    g.lda = p.K / 2;
    g.b = p.b.data_ptr();
    g.ldb = p.K / 2;
    g.a_block_scales = p.ba.data_ptr();
    g.b_block_scales = p.bb.data_ptr();
    g.alpha = alpha1.data_ptr<float>();
    g.fp4_hi_first = hi_first;
    g.bias = p.bias.defined() ? p.bias.data_ptr() : nullptr;
    g.out = out_kind(out);
    g.d = p.out2.data_ptr();
    g.ldd = p.ol.stride;
    const gemm::Device dev = gemm_device(a_packed);
    const std::string why = gemm::why_not(gemm::Backend::kCublasLt, g, dev);
    LTX_CHECK(be != "cublaslt" || why.empty(), op, "backend 'cublaslt' cannot run this call (", why, ")");
    if (why.empty()) {
      const size_t ws = gemm::workspace_bytes(gemm::Backend::kCublasLt, g, dev);
      at::Tensor w;
      if (ws > 0) w = at::empty({int64_t(ws)}, a_packed.options().dtype(at::kByte));
      const cudaError_t err = gemm::run(gemm::Backend::kCublasLt, g, dev, ws > 0 ? w.data_ptr() : nullptr, ws,
                                        scope.stream);
      if (err == cudaSuccess) return;
      LTX_CHECK(err == cudaErrorNotSupported && be == "auto", op, "cuBLASLt NVFP4 matmul failed (",
                cudaGetErrorString(err), ")");
    }
  }
#endif
  run_exact(exact);
}

std::vector<std::string> gemm_backends() {
  return std::vector<std::string>(std::begin(gemm::kBackendNames), std::end(gemm::kBackendNames));
}
