// Torch adapter for the GEMM family: fp8_blockwise_gemm (blockwise-scaled FP8, semantics in
// docs/semantics.md, "FP8 block scaling"), fp8_rowwise_gemm (per-token x per-channel scaled FP8,
// "FP8 rowwise scaling") and bf16_gemm with the fused epilogues of
// ltx_kernels/gemm/gemm_params.h, fp6_blockwise_gemm (LTX-2 packed FP6 weights), scaled_mm_nvfp4;
// gemm_plan (what a call would run) and gemm_backends (the registry's names, gemm/backend.h).
// Each op: checks, one GemmParams, then one call into the core:
//   CPU   "cpu": the C++ backend (cpu/gemm.h), rows in parallel;
//   CUDA  the GEMM entry (gemm/gemm.h): gemm::plan decides once which kernel runs (the "auto"
//         chain, the bias widening, why a forced backend cannot run), gemm::execute launches it;
// and "torch", asked for or where the entry's chain ends (execute ran nothing): the exact
// fallback, written in Python (ltx_kernels/gemm.py, on reference.py) and reached through the
// dispatcher as the op gemm_exact, with the call's arguments as given.
// LTX_KERNELS_GEMM_CONFIG (a developer setting) forces all or part of the sm_90a kernel's tile
// configuration; its grammar: gemm/config.h.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <string>
#include <vector>

#include "common.h"
#include "gemm_args.h"
#include "ltx_kernels/cpu/gemm.h"
#include "ltx_kernels/cpu/ops.h"
#include "ltx_kernels/gemm/config.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include "ltx_kernels/cuda/ops.h"
#include "ltx_kernels/gemm/gemm.h"
#endif

#define LTX_STR2(x) #x
#define LTX_STR(x) LTX_STR2(x)

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;
using namespace ltx_kernels::torch_adapter::gemm_op;

// The "torch" backend: the Python kernel of gemm_exact, through the dispatcher.
void run_exact(const Args& x) {
  static const c10::OperatorHandle h =
      c10::Dispatcher::singleton().findSchemaOrThrow(LTX_STR(TORCH_EXTENSION_NAME) "::gemm_exact", "");
  LTX_CHECK(h.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd), x.op,
            "the exact fallback (backend 'torch') is implemented in Python: import ltx_kernels first");
  torch::jit::Stack st{std::string(x.op), x.out, x.out_scales, x.a, x.a_scales, x.b, x.b_scales, x.bias,
                       x.epilogue, x.residual, x.gate, x.alpha, x.hi_first};
  h.callBoxed(&st);
}

void check_cpu_backend(const Call& c) {
  const Backend r = c.requested;
  LTX_CHECK(r == Backend::kAuto || r == Backend::kCpu || r == Backend::kTorch, c.x.op, "backend '",
            gemm::backend_name(r), "' cannot run this call (the tensors are on the CPU)");
}

#ifdef LTX_KERNELS_WITH_CUDA
gemm::Device gemm_device(const at::Tensor& t) {
  const int idx = t.device().index();
  TORCH_CHECK(idx >= 0 && idx < 64, "ltx_kernels: CUDA device index out of range");
  return gemm::query_device(idx);  // cached per device (common/device.h)
}

// The entry's decision for the call (a forced backend that cannot run it raises).
gemm::Plan checked_plan(const Call& c, const gemm::Device& dev) {
  gemm::Plan pl = gemm::plan(c.requested, c.p, dev);
  LTX_CHECK(pl.error.empty(), c.x.op, "backend '", gemm::backend_name(c.requested), "' cannot run this call (",
            pl.error, ")");
  return pl;
}

// Carries the plan out on the current stream; false: no kernel ran (the exact fallback is due).
bool launch(Call& c, const gemm::Plan& pl, const gemm::Device& dev, cudaStream_t stream) {
  if (pl.backend == Backend::kTorch) return false;
  if (pl.widen_bias) {  // exact: every bf16 / fp16 value is an fp32 value
    c.p.bias = c.keep(c.x.bias->to(at::kFloat).contiguous());
    c.p.bias_is_out_dtype = false;
  }
  void* ws = pl.workspace > 0 ? c.keep(at::empty({int64_t(pl.workspace)}, c.x.a.options().dtype(at::kByte))) : nullptr;
  const gemm::Outcome o = gemm::execute(pl, c.p, dev, ws, stream);
  if (o.ran == Backend::kTorch) return false;
  LTX_CHECK(o.error != cudaErrorNotSupported, c.x.op, "backend '", gemm::backend_name(o.ran),
            "' cannot run this call (the kernel answered 'not supported')");
  check_cuda(o.error, c.x.op);
  return true;
}
#endif

// Runs a prepared call on its device: the CPU backend, the entry's plan, or the exact fallback.
void run(Call& c) {
  const at::Tensor& a = c.x.a;
  if (a.is_cpu()) {
    check_cpu_backend(c);
    if (c.empty) return;
    if (c.requested == Backend::kTorch || c.p.operands == Operands::kNvfp4) return run_exact(c.x);
    const gemm::GemmParams& p = c.p;  // blocks of 16 rows, as the backend works
    return at::parallel_for(0, p.M, 16, [&](int64_t b, int64_t e) { cpu::gemm_rows(p, b, e); });
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(a, c.x.op);
  const gemm::Device dev = gemm_device(a);
  const gemm::Plan pl = checked_plan(c, dev);
  if (c.empty) return;
  if (!launch(c, pl, dev, scope.stream)) run_exact(c.x);
#else
  no_cuda_backend(a, c.x.op);
#endif
}

// The checked call of fp8_blockwise_gemm / fp8_rowwise_gemm / bf16_gemm (gemm_plan asks the same).
Call gemm_call(const char* op, Operands ops, const at::Tensor& out, const Opt& out_scales, const at::Tensor& a,
               const Opt& a_scales, const at::Tensor& b, const Opt& b_scales, const Opt& bias, c10::string_view epilogue,
               const Opt& residual, const Opt& gate, c10::string_view backend) {
  Call c;
  c.x = Args{op, out, a, b, out_scales, a_scales, b_scales, bias, residual, gate, std::nullopt,
             std::string(epilogue.data(), epilogue.size())};
  c.requested = parse_backend(backend, op, ops);
  prepare(c, ops);
  std::string error;
  LTX_CHECK(gemm::parse_tile_config(dev_setting("LTX_KERNELS_GEMM_CONFIG"), &c.p.config, &error), op, error);
  return c;
}

}  // namespace

void fp8_blockwise_gemm(at::Tensor& out, const Opt& out_scales, const at::Tensor& a, const at::Tensor& a_scales,
                        const at::Tensor& b, const at::Tensor& b_scales, const Opt& bias, c10::string_view epilogue,
                        const Opt& residual, const Opt& gate, c10::string_view backend) {
  Call c = gemm_call("fp8_blockwise_gemm", Operands::kFp8Blockwise, out, out_scales, a, a_scales, b, b_scales, bias,
                     epilogue, residual, gate, backend);
  run(c);
}

void fp8_rowwise_gemm(at::Tensor& out, const Opt& out_scales, const at::Tensor& a, const at::Tensor& a_scales,
                      const at::Tensor& b, const at::Tensor& b_scales, const Opt& bias, c10::string_view epilogue,
                      const Opt& residual, const Opt& gate, c10::string_view backend) {
  Call c = gemm_call("fp8_rowwise_gemm", Operands::kFp8Rowwise, out, out_scales, a, a_scales, b, b_scales, bias,
                     epilogue, residual, gate, backend);
  run(c);
}

void bf16_gemm(at::Tensor& out, const Opt& out_scales, const at::Tensor& a, const at::Tensor& b, const Opt& bias,
               c10::string_view epilogue, const Opt& residual, const Opt& gate, c10::string_view backend) {
  Call c = gemm_call("bf16_gemm", Operands::kBf16, out, out_scales, a, std::nullopt, b, std::nullopt, bias, epilogue,
                     residual, gate, backend);
  run(c);
}

// [backend, bm, bn, cluster, group_m, sms] of the call (tile fields 0 unless the backend is "sm90");
// raises what the op would raise.
std::vector<int64_t> gemm_plan(c10::string_view op_name, const at::Tensor& out, const Opt& out_scales,
                               const at::Tensor& a, const Opt& a_scales, const at::Tensor& b, const Opt& b_scales,
                               const Opt& bias, c10::string_view epilogue, const Opt& residual, const Opt& gate,
                               c10::string_view backend) {
  const std::string name(op_name.data(), op_name.size());
  const bool fp8 = name == "fp8_blockwise_gemm", rowwise = name == "fp8_rowwise_gemm";
  LTX_CHECK(fp8 || rowwise || name == "bf16_gemm", "gemm_plan",
            "op must be 'fp8_blockwise_gemm', 'fp8_rowwise_gemm' or 'bf16_gemm' (got '", name, "')");
  const char* op = fp8 ? "fp8_blockwise_gemm" : rowwise ? "fp8_rowwise_gemm" : "bf16_gemm";
  LTX_CHECK(!(fp8 || rowwise) || (a_scales.has_value() && b_scales.has_value()), op,
            "a_scales and b_scales are required");
  const Operands ops = fp8 ? Operands::kFp8Blockwise : rowwise ? Operands::kFp8Rowwise : Operands::kBf16;
  const Call c = gemm_call(op, ops, out, out_scales, a, a_scales, b, b_scales, bias, epilogue, residual, gate, backend);
  if (a.is_cpu()) {
    check_cpu_backend(c);
    return {int64_t(c.requested == Backend::kTorch ? Backend::kTorch : Backend::kCpu), 0, 0, 0, 0, 0};
  }
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(a, op);
  const gemm::Device dev = gemm_device(a);
  const Backend be = checked_plan(c, dev).backend;
  if (be != Backend::kSm90) return {int64_t(be), 0, 0, 0, 0, 0};
  const gemm::TileConfig t = gemm::sm90_config(c.p, dev);
  return {int64_t(be), t.bm, t.bn, t.cluster, t.group_m, t.sms};
#else
  no_cuda_backend(a, op);
#endif
}

void fp6_blockwise_gemm(at::Tensor& out, const at::Tensor& a, const at::Tensor& a_scales, const at::Tensor& b_packed,
                        const at::Tensor& b_scales, const Opt& bias, c10::string_view backend) {
  Call c;
  c.x = Args{"fp6_blockwise_gemm", out, a, b_packed, std::nullopt, a_scales, b_scales, bias};
  c.requested = parse_backend(backend, c.x.op, Operands::kFp6Blockwise);
  prepare(c, Operands::kFp6Blockwise);
  if (a.is_cpu()) check_cpu_backend(c);
  LTX_CHECK(a.is_cpu() || c.requested != Backend::kCpu, c.x.op, "backend 'cpu' cannot run this call (the tensors are on ",
            a.device(), "; move them to the CPU)");
  if (c.empty) return;
  if (c.p.K == 0 || c.requested == Backend::kTorch) return run_exact(c.x);
  // the sm89 FP6 kernel reads the packed bytes directly (ldb in bytes); otherwise B is unpacked
  // to e4m3 once (fp6_unpack) and the FP8 chain runs ("auto")
#ifdef LTX_KERNELS_WITH_CUDA
  if (a.is_cuda()) {
    const CudaScope scope(a, c.x.op);
    const gemm::Device dev = gemm_device(a);
    if (launch(c, checked_plan(c, dev), dev, scope.stream)) return;
  }
#endif
  Fp6PackParams u{static_cast<uint8_t*>(c.keep(at::empty({c.p.N, c.p.K}, a.options().dtype(at::kFloat8_e4m3fn)))),
                  static_cast<uint8_t*>(c.keep(b_packed.contiguous())), c.p.N * c.p.K / 4};
  if (a.is_cpu()) {
    cpu::fp6_unpack(u, torch_parallel_for);
  } else {
#ifdef LTX_KERNELS_WITH_CUDA
    const CudaScope scope(a, c.x.op);
    check_cuda(ltx_kernels::fp6_unpack(u, scope.stream), c.x.op);
#endif
  }
  c.p.operands = Operands::kFp8Blockwise;
  c.p.b = u.codes;
  c.p.ldb = c.p.K;
  c.requested = Backend::kAuto;
  run(c);
}

void scaled_mm_nvfp4(at::Tensor& out, const at::Tensor& a_packed, const at::Tensor& b_packed, const at::Tensor& block_a,
                     const at::Tensor& block_b, const at::Tensor& alpha, const Opt& bias, bool hi_first,
                     c10::string_view backend) {
  Call c;
  c.x = Args{"scaled_mm_nvfp4", out, a_packed, b_packed, std::nullopt, block_a, block_b, bias, std::nullopt,
             std::nullopt, alpha, "none", hi_first};
  c.requested = parse_backend(backend, c.x.op, Operands::kNvfp4);
  prepare_nvfp4(c);
  run(c);
}

std::vector<std::string> gemm_backends() {
  return std::vector<std::string>(std::begin(gemm::kBackendNames), std::end(gemm::kBackendNames));
}
