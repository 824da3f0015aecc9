// Torch adapter for the GEMM family: blockwise-scaled FP8 GEMM (REFERENCE.md section 2), its
// FP6-weight variant (section 3) and the NVFP4 scaled matmul (section 4). Checks, then one of:
//   "cpu"   the C++ CPU backend (csrc/cpu/gemm), rows in parallel with at::parallel_for;
//   "sm90"  the sm_90a wgmma kernel (built when LTX_KERNELS_HAS_SM90, device cc exactly 9.0);
//   "sm89"  the mma.sync kernel (built when LTX_KERNELS_HAS_SM89, device cc >= 8.9);
//   "skinny" the few-token kernel, M <= 64 (built with sm89: wgmma + cluster split-K on sm_90a
//           builds on cc 9.0, mma.sync + workspace split-K elsewhere: fp8_gemm_skinny.cuh);
//   "torch" dequantize both operands exactly in fp32 (e4m3 value * scale, one fp32 product)
//           and at::matmul in fp32, + bias, one rounding to out's dtype. fp32 rather than bf16
//           operands: rounding both dequantized operands to bf16 adds two more relative errors of
//           up to 2^-8 per product next to the output's own 2^-8, i.e. calc_diff ~4e-6 on random
//           data and up to ~2.3e-5 in the worst case, over the 1e-5 bound the tests hold every
//           backend to (the exact kernels: <= 7.6e-6). The fallback is there to be right, not
//           fast. (With TF32 matmuls enabled by the user the operands keep 11 bits: 2^-11.)
// "auto" on CUDA takes the first of skinny (when fp8_blockwise_gemm_skinny_preferred: M <= 64 and
// not beaten by the sm90 kernel), sm90, sm89, torch that can run the call; a forced backend
// that cannot run it raises "backend 'X' cannot run this call (<why>)". A kernel answering
// cudaErrorNotSupported under "auto" falls through to the next backend, never a wrong answer.
#include <ATen/ATen.h>

#include <string>

#include "common.h"
#include "ltx_kernels/cpu/gemm.h"
#include "ltx_kernels/cpu/lowbit.h"
#include "torch_binding.h"

#ifdef LTX_KERNELS_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "ltx_kernels/gemm/fp8_gemm.h"
#include "ltx_kernels/quant/lowbit.h"
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12080
#include <cublasLt.h>
#define LTX_HAS_CUBLASLT_FP4 1
#endif
#endif

namespace {
using namespace ltx_kernels;
using namespace ltx_kernels::torch_adapter;

constexpr int64_t kGroup = 128;
constexpr int64_t kCpuGrain = 16;  // rows per CPU task (the backend blocks 16 rows)

enum class Backend : int64_t { kCpu = 0, kTorch = 1, kSm89 = 2, kSm90 = 3, kSkinny = 4 };

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The checked call: logical [M, K] x [N, K]^T -> [M, N], everything as raw layouts.
struct Problem {
  int64_t M = 0, N = 0, K = 0;
  at::Tensor a2;      // [M, K] e4m3, rows addressable (a itself or a contiguous copy)
  RowLayout al{};
  at::Tensor a_scales;  // [M, K/128] fp32, either layout
  at::Tensor b2;        // [N, K] e4m3 (or for FP6: packed [N, 3K/4] uint8)
  RowLayout bl{};
  at::Tensor b_scales;  // [ceil(N/128), K/128] fp32
  at::Tensor bias;      // fp32 [N], stride 1, or undefined
  at::Tensor out2;      // [M, N] view of out
  RowLayout ol{};
};

Backend parse_backend(c10::string_view s, const char* op, bool fp6) {
  const std::string b(s.data(), s.size());
  if (b == "auto") return Backend::kCpu;  // placeholder, resolved per device
  if (b == "cpu") return Backend::kCpu;
  if (b == "torch") return Backend::kTorch;
  if (b == "sm89") return Backend::kSm89;
  if (!fp6 && b == "sm90") return Backend::kSm90;
  if (!fp6 && b == "skinny") return Backend::kSkinny;
  LTX_CHECK(false, op, "backend must be ",
            fp6 ? "'auto', 'sm89', 'torch' or 'cpu'" : "'auto', 'skinny', 'sm90', 'sm89', 'torch' or 'cpu'",
            " (got '", b, "')");
  return Backend::kCpu;
}

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::kCpu: return "cpu";
    case Backend::kTorch: return "torch";
    case Backend::kSm89: return "sm89";
    case Backend::kSm90: return "sm90";
    case Backend::kSkinny: return "skinny";
  }
  return "?";
}

void check_device_kind(const at::Tensor& t, const char* op) {
#ifdef LTX_KERNELS_WITH_CUDA
  LTX_CHECK(t.is_cpu() || t.is_cuda(), op, "tensors must be on the CPU or a CUDA device (got ", t.device(), ")");
#else
  LTX_CHECK(t.is_cpu(), op, "this build has no CUDA backend (got a tensor on ", t.device(), ")");
#endif
}

// Shared checks of the FP8 and FP6 GEMMs. `b_cols` is b's last dimension for FP8 (K) or the
// packed width 3K/4 for FP6.
Problem prepare(at::Tensor& out, const at::Tensor& a, const at::Tensor& a_scales, const at::Tensor& b,
                const at::Tensor& b_scales, const std::optional<at::Tensor>& bias, const char* op, bool fp6) {
  LTX_CHECK(a.scalar_type() == at::kFloat8_e4m3fn, op, "a must be float8_e4m3fn (got ", a.scalar_type(), ")");
  if (fp6) {
    LTX_CHECK(b.scalar_type() == at::kByte, op, "b_packed must be uint8 (LTX-2 packed FP6) (got ", b.scalar_type(), ")");
  } else {
    LTX_CHECK(b.scalar_type() == at::kFloat8_e4m3fn, op, "b must be float8_e4m3fn (got ", b.scalar_type(), ")");
  }
  LTX_CHECK(a.dim() >= 1, op, "a must have at least one dimension [..., K] (got a scalar)");
  const char* bname = fp6 ? "b_packed" : "b";
  LTX_CHECK(b.dim() == 2, op, bname, " must be 2-D [N, ", fp6 ? "3K/4" : "K", "] (got shape ", shape_str(b.sizes()), ")");
  Problem p;
  p.K = a.size(-1);
  p.N = b.size(0);
  p.M = 1;
  for (int64_t d = 0; d + 1 < a.dim(); ++d) p.M *= a.size(d);
  LTX_CHECK(p.K % kGroup == 0, op, "K = a.shape[-1] must be a multiple of 128, the scaling block (got ", p.K,
            "; pad K with zeros)");
  const int64_t want_bcols = fp6 ? p.K / 4 * 3 : p.K;
  LTX_CHECK(b.size(1) == want_bcols, op, bname, " must have shape [N, ", fp6 ? "3K/4" : "K", "] with ", fp6 ? "3K/4" : "K",
            " = ", want_bcols, " for K = a.shape[-1] = ", p.K, " (got shape ", shape_str(b.sizes()), ")");
  LTX_CHECK(p.N % 8 == 0, op,
            "N = b.shape[0] must be a multiple of 8: the output rows must be 16-byte aligned "
            "(8 bf16/fp16) for the tensor-core kernels' vector stores (got N = ", p.N, ")");
  const int64_t G = p.K / kGroup;
  LTX_CHECK(a_scales.scalar_type() == at::kFloat, op, "a_scales must be float32 (got ", a_scales.scalar_type(), ")");
  LTX_CHECK(a_scales.dim() == 2 && a_scales.size(0) == p.M && a_scales.size(1) == G, op,
            "a_scales must have shape [M, K / 128] = [", p.M, ", ", G, "] (got ", shape_str(a_scales.sizes()), ")");
  {
    const int64_t s0 = a_scales.stride(0), s1 = a_scales.stride(1);
    const bool row_major = (G <= 1 || s1 == 1) && (p.M <= 1 || s0 >= G);
    const bool m_major = (p.M <= 1 || s0 == 1) && (G <= 1 || s1 >= p.M);
    LTX_CHECK(row_major || m_major, op,
              "a_scales must be row-major (strides (K/128, 1)) or M-major (strides (1, M_pad) with M_pad >= M, "
              "as quantize_fp8_per_token_group(..., scale_layout='mn_major') writes) (got strides ",
              shape_str(a_scales.strides()), ")");
  }
  const int64_t tn = ceil_div(p.N, kGroup);
  LTX_CHECK(b_scales.scalar_type() == at::kFloat, op, "b_scales must be float32 (got ", b_scales.scalar_type(), ")");
  LTX_CHECK(b_scales.dim() == 2 && b_scales.size(0) == tn && b_scales.size(1) == G, op,
            "b_scales must have shape [ceil(N / 128), K / 128] = [", tn, ", ", G, "] (got ",
            shape_str(b_scales.sizes()), ")");
  if (bias.has_value()) {
    LTX_CHECK(bias->scalar_type() == at::kFloat, op, "bias must be float32 (got ", bias->scalar_type(), ")");
    LTX_CHECK(bias->dim() == 1 && bias->size(0) == p.N, op, "bias must have shape [N] = [", p.N, "] (got ",
              shape_str(bias->sizes()), ")");
  }
  LTX_CHECK(out.scalar_type() == at::kBFloat16 || out.scalar_type() == at::kHalf, op,
            "out must be bfloat16 or float16 (got ", out.scalar_type(), ")");
  std::vector<int64_t> want(a.sizes().begin(), a.sizes().end());
  want.back() = p.N;
  LTX_CHECK(out.sizes() == c10::IntArrayRef(want), op, "out must have shape a.shape[:-1] + [N] = ", shape_str(want),
            " (got ", shape_str(out.sizes()), ")");
  check_same_device(a_scales, a, op, "a_scales", "a");
  check_same_device(b, a, op, bname, "a");
  check_same_device(b_scales, a, op, "b_scales", "a");
  check_same_device(out, a, op, "out", "a");
  if (bias.has_value()) check_same_device(*bias, a, op, "bias", "a");
  check_device_kind(a, op);
  p.a_scales = a_scales;
  p.b_scales = b_scales;
  if (bias.has_value()) p.bias = bias->stride(0) == 1 ? *bias : bias->contiguous();
  if (out.numel() == 0) return p;
  p.ol = output_rows(out, op);
  p.out2 = at::as_strided(out, {p.M, p.N}, {p.ol.stride, 1});
  check_no_partial_overlap(out, a, op, "a");
  check_no_partial_overlap(out, b, op, bname);
  if (bias.has_value()) check_no_partial_overlap(out, *bias, op, "bias");
  if (p.K == 0) return p;
  const at::Tensor a_flat = a.dim() == 2 ? a : a.reshape({p.M, p.K});
  p.al = input_rows(a_flat, p.a2);
  p.bl = input_rows(b, p.b2);
  check_rows_fit(p.al, op);
  return p;
}

// K == 0: the sum is empty, out = bias (or 0).
void fill_bias_only(Problem& p) {
  if (p.bias.defined()) {
    p.out2.copy_(p.bias.unsqueeze(0).expand({p.M, p.N}));
  } else {
    p.out2.zero_();
  }
}

// ---- the "cpu" backend (e4m3 B, rows addressable)
void run_cpu(Problem& p, const at::Tensor& b_e4m3, int64_t ldb) {
  const auto* ap = reinterpret_cast<const uint8_t*>(p.a2.data_ptr());
  const auto* bp = reinterpret_cast<const uint8_t*>(b_e4m3.data_ptr());
  const float* sa = p.a_scales.data_ptr<float>();
  const float* sb = p.b_scales.data_ptr<float>();
  const float* bias = p.bias.defined() ? p.bias.data_ptr<float>() : nullptr;
  const int64_t sam = p.a_scales.stride(0), sak = p.a_scales.stride(1);
  const int64_t sbn = p.b_scales.stride(0), sbk = p.b_scales.stride(1);
  auto body = [&](auto* d) {
    using T = std::remove_pointer_t<decltype(d)>;
    at::parallel_for(0, p.M, kCpuGrain, [&](int64_t b, int64_t e) {
      cpu::fp8_blockwise_gemm<T>(d, p.ol.stride, ap, p.al.stride, sa, sam, sak, bp, ldb, sb, sbn, sbk, bias, b, e,
                                 p.N, p.K);
    });
  };
  if (p.out2.scalar_type() == at::kBFloat16) {
    body(reinterpret_cast<bfloat16_t*>(p.out2.data_ptr()));
  } else {
    body(reinterpret_cast<half_t*>(p.out2.data_ptr()));
  }
}

// ---- the "torch" backend: exact fp32 dequantization, fp32 matmul (any device)
void run_torch(Problem& p, const at::Tensor& b_e4m3) {
  const int64_t G = p.K / kGroup;
  const at::Tensor a2 = at::as_strided(p.a2, {p.M, p.K}, {p.al.stride, 1});
  const at::Tensor af = (a2.to(at::kFloat).view({p.M, G, kGroup}) * p.a_scales.unsqueeze(-1)).view({p.M, p.K});
  const at::Tensor sbn = p.b_scales.repeat_interleave(kGroup, 0).narrow(0, 0, p.N);  // [N, G]
  const at::Tensor bf = (b_e4m3.to(at::kFloat).reshape({p.N, G, kGroup}) * sbn.unsqueeze(-1)).view({p.N, p.K});
  at::Tensor y = at::matmul(af, bf.t());
  if (p.bias.defined()) y.add_(p.bias);
  p.out2.copy_(y);
}

#ifdef LTX_KERNELS_WITH_CUDA
namespace gemm = ::ltx::gemm;

int device_sms(const at::Tensor& t) {
  int n = 0;
  cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, t.device().index());
  return n;
}

gemm::Fp8BlockwiseGemmArgs make_args(const Problem& p, const at::Tensor& b, int64_t ldb) {
  gemm::Fp8BlockwiseGemmArgs g;
  g.M = p.M;
  g.N = p.N;
  g.K = p.K;
  g.a = reinterpret_cast<const uint8_t*>(p.a2.data_ptr());
  g.lda = p.al.stride;
  g.a_scales = p.a_scales.data_ptr<float>();
  g.sa_stride_m = p.a_scales.stride(0);
  g.sa_stride_k = p.a_scales.stride(1);
  g.b = reinterpret_cast<const uint8_t*>(b.data_ptr());
  g.ldb = ldb;
  g.b_scales = p.b_scales.data_ptr<float>();
  g.sb_stride_n = p.b_scales.stride(0);
  g.sb_stride_k = p.b_scales.stride(1);
  g.bias = p.bias.defined() ? p.bias.data_ptr<float>() : nullptr;
  g.d = p.out2.data_ptr();
  g.ldd = p.ol.stride;
  g.out = p.out2.scalar_type() == at::kBFloat16 ? gemm::GemmOut::kBF16 : gemm::GemmOut::kFP16;
  return g;
}

std::string args_str(const gemm::Fp8BlockwiseGemmArgs& g) {
  auto mis = [](const void* ptr) { return std::to_string(reinterpret_cast<uintptr_t>(ptr) % 16); };
  return "M=" + std::to_string(g.M) + ", N=" + std::to_string(g.N) + ", K=" + std::to_string(g.K) +
         ", lda=" + std::to_string(g.lda) + ", ldb=" + std::to_string(g.ldb) + ", ldd=" + std::to_string(g.ldd) +
         ", a_scales strides (" + std::to_string(g.sa_stride_m) + ", " + std::to_string(g.sa_stride_k) +
         "), b_scales strides (" + std::to_string(g.sb_stride_n) + ", " + std::to_string(g.sb_stride_k) +
         "), pointer offsets mod 16: a " + mis(g.a) + ", b " + mis(g.b) + ", out " + mis(g.d);
}

// "" when kernel `be` can run these arguments on this device, else why not.
std::string why_not(Backend be, const gemm::Fp8BlockwiseGemmArgs& g, int cc, bool fp6) {
  const std::string ccs = std::to_string(cc / 10) + "." + std::to_string(cc % 10);
  if (be == Backend::kSm90) {
#ifdef LTX_KERNELS_HAS_SM90
    if (cc != 90) return "the sm_90a kernel needs compute capability 9.0; this device is " + ccs;
    if (!gemm::fp8_blockwise_gemm_sm90_supported(g, cc))
      return "the sm_90a kernel does not take these arguments: " + args_str(g);
    return "";
#else
    (void)g;
    return "this build has no sm_90a kernel (needs TORCH_CUDA_ARCH_LIST with 9.0a)";
#endif
  }
  if (be == Backend::kSkinny) {
#ifdef LTX_KERNELS_HAS_SM89
    if (cc < 89) return "the mma.sync FP8 kernel needs compute capability >= 8.9; this device is " + ccs;
    if (g.M > 64) return "the skinny kernel takes M <= 64 (got M=" + std::to_string(g.M) + ")";
    if (!gemm::fp8_blockwise_gemm_skinny_supported(g, cc))
      return "the skinny kernel does not take these arguments: " + args_str(g);
    return "";
#else
    return "this build has no sm89 kernels (needs a CUDA target >= 8.9)";
#endif
  }
  if (be == Backend::kSm89) {
#ifdef LTX_KERNELS_HAS_SM89
    if (cc < 89) return "the mma.sync FP8 kernel needs compute capability >= 8.9; this device is " + ccs;
    const bool ok = fp6 ? gemm::fp6_blockwise_gemm_sm89_supported(g, cc) : gemm::fp8_blockwise_gemm_sm89_supported(g, cc);
    if (!ok) return std::string("the sm89 ") + (fp6 ? "FP6" : "FP8") + " kernel does not take these arguments: " + args_str(g);
    return "";
#else
    (void)g;
    (void)fp6;
    return "this build has no sm89 kernel (needs a CUDA target >= 8.9)";
#endif
  }
  return "";
}

// Run a core entry point that takes (args, workspace, bytes, num_sms, stream) with the scratch its
// *_workspace function asks for, from the caching allocator on like's stream.
template <class WorkspaceFn, class RunFn>
cudaError_t with_workspace(const gemm::Fp8BlockwiseGemmArgs& g, const at::Tensor& like, cudaStream_t stream,
                           WorkspaceFn workspace_fn, RunFn run_fn) {
  const int sms = device_sms(like);
  const size_t ws = workspace_fn(g, sms);
  at::Tensor w;
  if (ws > 0) w = at::empty({int64_t(ws)}, like.options().dtype(at::kByte));
  return run_fn(g, ws > 0 ? w.data_ptr() : nullptr, ws, sms, stream);
}

cudaError_t launch(Backend be, const gemm::Fp8BlockwiseGemmArgs& g, const at::Tensor& like, cudaStream_t stream,
                   bool fp6) {
#ifdef LTX_KERNELS_HAS_SM90
  if (be == Backend::kSm90) {
    return with_workspace(g, like, stream, gemm::fp8_blockwise_gemm_sm90_workspace, gemm::fp8_blockwise_gemm_sm90);
  }
#endif
#ifdef LTX_KERNELS_HAS_SM89
  if (be == Backend::kSkinny) {
    return with_workspace(g, like, stream, gemm::fp8_blockwise_gemm_skinny_workspace, gemm::fp8_blockwise_gemm_skinny);
  }
  if (be == Backend::kSm89) return fp6 ? gemm::fp6_blockwise_gemm_sm89(g, stream) : gemm::fp8_blockwise_gemm_sm89(g, stream);
#endif
  (void)g;
  (void)like;
  (void)stream;
  (void)fp6;
  return cudaErrorNotSupported;
}
#endif  // LTX_KERNELS_WITH_CUDA

// Which backend runs the FP8 GEMM `p` (B e4m3 `b`, row stride ldb), or an error for a forced
// backend that cannot. `requested` is the parsed name; `is_auto` marks "auto".
Backend select_fp8(const Problem& p, const at::Tensor& b, int64_t ldb, Backend requested, bool is_auto,
                   const at::Tensor& like, const char* op) {
  if (like.is_cpu()) {
    if (is_auto || requested == Backend::kCpu || requested == Backend::kTorch) return is_auto ? Backend::kCpu : requested;
    LTX_CHECK(false, op, "backend '", backend_name(requested), "' cannot run this call (the tensors are on the CPU)");
  }
  LTX_CHECK(requested != Backend::kCpu || is_auto, op, "backend 'cpu' cannot run this call (the tensors are on ",
            like.device(), "; move them to the CPU)");
  if (requested == Backend::kTorch && !is_auto) return Backend::kTorch;
#ifdef LTX_KERNELS_WITH_CUDA
  const int cc = device_cc(like);
  if (p.M == 0 || p.K == 0) return Backend::kTorch;  // nothing for a kernel to do
  const gemm::Fp8BlockwiseGemmArgs g = make_args(p, b, ldb);
  if (!is_auto) {
    const std::string why = why_not(requested, g, cc, false);
    LTX_CHECK(why.empty(), op, "backend '", backend_name(requested), "' cannot run this call (", why, ")");
    return requested;
  }
  const bool sm90_ok = why_not(Backend::kSm90, g, cc, false).empty();
#ifdef LTX_KERNELS_HAS_SM89
  if (gemm::fp8_blockwise_gemm_skinny_preferred(g, device_sms(like), sm90_ok) &&
      why_not(Backend::kSkinny, g, cc, false).empty())
    return Backend::kSkinny;
#endif
  if (sm90_ok) return Backend::kSm90;
  if (why_not(Backend::kSm89, g, cc, false).empty()) return Backend::kSm89;
#else
  (void)p;
  (void)b;
  (void)ldb;
#endif
  return Backend::kTorch;
}

// Run the FP8 GEMM with B e4m3 `b` (rows at stride ldb) on the chosen backend; under "auto" a
// kernel that answers "not supported" falls through to the next one.
void run_fp8(Problem& p, const at::Tensor& b, int64_t ldb, Backend be, bool is_auto, const char* op) {
  if (be == Backend::kCpu) return run_cpu(p, b, ldb);
  if (be == Backend::kTorch) return run_torch(p, at::as_strided(b, {p.N, p.K}, {ldb, 1}));
#ifdef LTX_KERNELS_WITH_CUDA
  const CudaScope scope(p.a2, op);
  const gemm::Fp8BlockwiseGemmArgs g = make_args(p, b, ldb);
  cudaError_t err = launch(be, g, p.a2, scope.stream, false);
  if (err == cudaErrorNotSupported && is_auto) {
    if ((be == Backend::kSm90 || be == Backend::kSkinny) && why_not(Backend::kSm89, g, device_cc(p.a2), false).empty()) {
      err = launch(Backend::kSm89, g, p.a2, scope.stream, false);
      if (err != cudaErrorNotSupported) return check_cuda(err, op);
    }
    return run_torch(p, at::as_strided(b, {p.N, p.K}, {ldb, 1}));
  }
  LTX_CHECK(err != cudaErrorNotSupported, op, "backend '", backend_name(be),
            "' cannot run this call (the kernel answered 'not supported' for ", args_str(g), ")");
  check_cuda(err, op);
#else
  (void)is_auto;
  LTX_CHECK(false, op, "this build has no CUDA backend");
#endif
}

}  // namespace

void fp8_blockwise_gemm(at::Tensor& out, const at::Tensor& a, const at::Tensor& a_scales, const at::Tensor& b,
                        const at::Tensor& b_scales, const std::optional<at::Tensor>& bias,
                        c10::string_view backend) {
  constexpr const char* op = "fp8_blockwise_gemm";
  const Backend requested = parse_backend(backend, op, false);
  const bool is_auto = backend == "auto";
  Problem p = prepare(out, a, a_scales, b, b_scales, bias, op, false);
  const Backend be = select_fp8(p, p.b2, p.bl.stride, requested, is_auto, a, op);
  if (out.numel() == 0) return;
  if (p.K == 0) return fill_bias_only(p);
  run_fp8(p, p.b2, p.bl.stride, be, is_auto, op);
}

int64_t fp8_blockwise_gemm_backend(const at::Tensor& out, const at::Tensor& a, const at::Tensor& a_scales,
                                   const at::Tensor& b, const at::Tensor& b_scales,
                                   const std::optional<at::Tensor>& bias, c10::string_view backend) {
  constexpr const char* op = "fp8_blockwise_gemm";
  const Backend requested = parse_backend(backend, op, false);
  at::Tensor o = out;  // only inspected, never written
  Problem p = prepare(o, a, a_scales, b, b_scales, bias, op, false);
  if (out.numel() == 0 || p.K == 0) return int64_t(a.is_cpu() ? Backend::kCpu : Backend::kTorch);
  return int64_t(select_fp8(p, p.b2, p.bl.stride, requested, backend == "auto", a, op));
}

void fp6_blockwise_gemm(at::Tensor& out, const at::Tensor& a, const at::Tensor& a_scales, const at::Tensor& b_packed,
                        const at::Tensor& b_scales, const std::optional<at::Tensor>& bias,
                        c10::string_view backend) {
  constexpr const char* op = "fp6_blockwise_gemm";
  const Backend requested = parse_backend(backend, op, true);
  const bool is_auto = backend == "auto";
  Problem p = prepare(out, a, a_scales, b_packed, b_scales, bias, op, true);
  if (a.is_cpu()) {
    LTX_CHECK(is_auto || requested == Backend::kCpu || requested == Backend::kTorch, op, "backend '",
              backend_name(requested), "' cannot run this call (the tensors are on the CPU)");
  } else {
    LTX_CHECK(is_auto || requested != Backend::kCpu, op, "backend 'cpu' cannot run this call (the tensors are on ",
              a.device(), "; move them to the CPU)");
  }
  if (out.numel() == 0) return;
  if (p.K == 0) return fill_bias_only(p);
  const int64_t groups = p.N * p.K / 4;
#ifdef LTX_KERNELS_WITH_CUDA
  if (a.is_cuda()) {
    const CudaScope scope(a, op);
    const int cc = device_cc(a);
    // the FP6 kernel reads the packed bytes directly (ldb in bytes)
    const gemm::Fp8BlockwiseGemmArgs g = make_args(p, p.b2, p.bl.stride);
    const std::string why = why_not(Backend::kSm89, g, cc, true);
    if (requested == Backend::kSm89 && !is_auto) {
      LTX_CHECK(why.empty(), op, "backend 'sm89' cannot run this call (", why, ")");
    }
    if ((is_auto || requested == Backend::kSm89) && why.empty()) {
      const cudaError_t err = launch(Backend::kSm89, g, a, scope.stream, true);
      if (err != cudaErrorNotSupported) return check_cuda(err, op);
      LTX_CHECK(is_auto, op, "backend 'sm89' cannot run this call (the kernel answered 'not supported' for ",
                args_str(g), ")");
    }
    // fallback: unpack to e4m3 once (our fp6_unpack kernel), then the FP8 path
    const at::Tensor packed = p.b2.is_contiguous() ? p.b2 : p.b2.contiguous();
    at::Tensor b8 = at::empty({p.N, p.K}, a.options().dtype(at::kFloat8_e4m3fn));
    check_cuda(ltx_kernels::fp6_unpack(reinterpret_cast<uint8_t*>(b8.data_ptr()),
                                       reinterpret_cast<const uint8_t*>(packed.data_ptr()), groups, scope.stream),
               op);
    const Backend be = is_auto ? select_fp8(p, b8, p.K, Backend::kCpu, true, a, op) : Backend::kTorch;
    return run_fp8(p, b8, p.K, be, is_auto, op);
  }
#endif
  // CPU: unpack with the CPU backend's fp6_unpack, then the FP8 CPU backend (or the fallback)
  const at::Tensor packed = p.b2.is_contiguous() ? p.b2 : p.b2.contiguous();
  at::Tensor b8 = at::empty({p.N, p.K}, a.options().dtype(at::kFloat8_e4m3fn));
  auto* dst = reinterpret_cast<uint8_t*>(b8.data_ptr());
  const auto* src = reinterpret_cast<const uint8_t*>(packed.data_ptr());
  at::parallel_for(0, groups, 4096, [&](int64_t b, int64_t e) { cpu::fp6_unpack(dst, src, b, e); });
  run_fp8(p, b8, p.K, requested == Backend::kTorch && !is_auto ? Backend::kTorch : Backend::kCpu, is_auto, op);
}

// ---- NVFP4 scaled matmul (REFERENCE.md section 4)
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

void nvfp4_fallback(Nvfp4Problem& p, bool hi_first, const char* op) {
  const auto f32 = p.a.options().dtype(at::kFloat);
  at::Tensor af = at::empty({p.M, p.K}, f32), bf = at::empty({p.N, p.K}, f32);
  if (p.a.is_cpu()) {
    auto deq = [&](at::Tensor& o, const at::Tensor& q, const at::Tensor& s, int64_t rows) {
      float* op_ = o.data_ptr<float>();
      const auto* qp = q.data_ptr<uint8_t>();
      const auto* sp = s.data_ptr<uint8_t>();
      at::parallel_for(0, rows, 16, [&](int64_t b, int64_t e) {
        cpu::dequantize_nvfp4<float>(op_, qp, sp, 1.f, p.K, hi_first, b, e);
      });
    };
    deq(af, p.a, p.ba, p.M);
    deq(bf, p.b, p.bb, p.N);
  } else {
#ifdef LTX_KERNELS_WITH_CUDA
    const CudaScope scope(p.a, op);
    const at::Tensor one = at::ones({1}, f32);
    check_cuda(ltx_kernels::dequantize_nvfp4<float>(af.data_ptr<float>(), p.a.data_ptr<uint8_t>(),
                                                    p.ba.data_ptr<uint8_t>(), one.data_ptr<float>(), p.M,
                                                    p.K, hi_first, scope.stream),
               op);
    check_cuda(ltx_kernels::dequantize_nvfp4<float>(bf.data_ptr<float>(), p.b.data_ptr<uint8_t>(),
                                                    p.bb.data_ptr<uint8_t>(), one.data_ptr<float>(), p.N,
                                                    p.K, hi_first, scope.stream),
               op);
#endif
  }
  at::Tensor y = at::matmul(af, bf.t());
  y.mul_(p.alpha.reshape({}));
  if (p.bias.defined()) y.add_(p.bias);
  p.out2.copy_(y);
}

#ifdef LTX_HAS_CUBLASLT_FP4
// "" when cuBLASLt's FP4 GEMM can take the call on this device, else why not.
std::string nvfp4_cublaslt_why_not(const Nvfp4Problem& p, int cc) {
  if (cc < 100) return "cuBLASLt NVFP4 needs compute capability >= 10.0; this device is " +
                       std::to_string(cc / 10) + "." + std::to_string(cc % 10);
  if (p.K % 32 != 0) return "cuBLASLt NVFP4 needs K % 32 == 0 (got K = " + std::to_string(p.K) + ")";
  if (p.ol.stride % 8 != 0 || reinterpret_cast<uintptr_t>(p.out2.data_ptr()) % 16 != 0)
    return "out rows must be 16-byte aligned";
  return "";
}

cublasStatus_t nvfp4_cublaslt(Nvfp4Problem& p, bool hi_first, cudaStream_t stream) {
  // cuBLASLt packs element 2j in the LOW nibble; LTX-2's hi_first puts it in the high one.
  auto lo_first = [&](const at::Tensor& q) {
    return hi_first ? at::bitwise_or(at::bitwise_left_shift(q, 4), at::bitwise_right_shift(q, 4)) : q;
  };
  const at::Tensor a = lo_first(p.a), b = lo_first(p.b);
  const bool bf16 = p.out2.scalar_type() == at::kBFloat16;
  const cudaDataType_t dt = bf16 ? CUDA_R_16BF : CUDA_R_16F;
  // column-major view: D^T [N, M] = B [N, K] * A^T, i.e. cuBLAS "A" = our b (transposed), "B" = our a
  cublasLtHandle_t handle = at::cuda::getCurrentCUDABlasLtHandle();
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
  auto ok = [&](cublasStatus_t s) {
    if (st == CUBLAS_STATUS_SUCCESS) st = s;
    return st == CUBLAS_STATUS_SUCCESS;
  };
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  const cublasLtMatmulMatrixScale_t smode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
  const cublasLtPointerMode_t pmode = CUBLASLT_POINTER_MODE_DEVICE;
  const void* scale_a = p.bb.data_ptr();  // scales of cuBLAS's A (our b)
  const void* scale_b = p.ba.data_ptr();
  at::Tensor bias_d;
  const at::Tensor beta = at::zeros({1}, p.alpha.options());
  const at::Tensor alpha = p.alpha.reshape({1}).contiguous();
  if (ok(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) &&
      ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta))) &&
      ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb))) &&
      ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &smode, sizeof(smode))) &&
      ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &smode, sizeof(smode))) &&
      ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a, sizeof(scale_a))) &&
      ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b, sizeof(scale_b))) &&
      ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pmode, sizeof(pmode)))) {
    if (p.bias.defined()) {
      // bias in the output type (cuBLASLt's default bias type for 16-bit D)
      bias_d = p.bias.to(p.out2.scalar_type());
      const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      const void* bptr = bias_d.data_ptr();
      ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
      ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bptr, sizeof(bptr)));
    }
  }
  if (st == CUBLAS_STATUS_SUCCESS && ok(cublasLtMatrixLayoutCreate(&la, CUDA_R_4F_E2M1, p.K, p.N, p.K)) &&
      ok(cublasLtMatrixLayoutCreate(&lb, CUDA_R_4F_E2M1, p.K, p.M, p.K)) &&
      ok(cublasLtMatrixLayoutCreate(&lc, dt, p.N, p.M, p.ol.stride)) && ok(cublasLtMatmulPreferenceCreate(&pref))) {
    const size_t max_ws = size_t(32) << 20;
    ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws)));
    cublasLtMatmulHeuristicResult_t res{};
    int found = 0;
    if (ok(cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, lc, lc, pref, 1, &res, &found))) {
      if (found == 0) {
        st = CUBLAS_STATUS_NOT_SUPPORTED;
      } else {
        at::Tensor ws;
        if (res.workspaceSize > 0) ws = at::empty({int64_t(res.workspaceSize)}, p.a.options().dtype(at::kByte));
        ok(cublasLtMatmul(handle, desc, alpha.data_ptr<float>(), b.data_ptr(), la, a.data_ptr(), lb,
                          beta.data_ptr<float>(), p.out2.data_ptr(), lc, p.out2.data_ptr(), lc, &res.algo,
                          res.workspaceSize > 0 ? ws.data_ptr() : nullptr, res.workspaceSize, stream));
      }
    }
  }
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (lc) cublasLtMatrixLayoutDestroy(lc);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (desc) cublasLtMatmulDescDestroy(desc);
  return st;
}
#endif  // LTX_HAS_CUBLASLT_FP4

}  // namespace

void scaled_mm_nvfp4(at::Tensor& out, const at::Tensor& a_packed, const at::Tensor& b_packed, const at::Tensor& block_a,
                     const at::Tensor& block_b, const at::Tensor& alpha, const std::optional<at::Tensor>& bias,
                     bool hi_first, c10::string_view backend) {
  constexpr const char* op = "scaled_mm_nvfp4";
  const std::string be(backend.data(), backend.size());
  LTX_CHECK(be == "auto" || be == "cublaslt" || be == "torch" || be == "cpu", op,
            "backend must be 'auto', 'cublaslt', 'torch' or 'cpu' (got '", be, "')");
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
  if (p.K == 0) {
    if (bias.has_value()) p.out2.copy_(bias->unsqueeze(0).expand({p.M, p.N}));
    else p.out2.zero_();
    return;
  }
  p.a = a_packed.reshape({p.M, p.K / 2}).contiguous();
  p.b = b_packed.contiguous();
  p.ba = block_a.contiguous();
  p.bb = block_b.contiguous();
  p.alpha = alpha;
  if (bias.has_value()) p.bias = bias->contiguous();
#ifdef LTX_KERNELS_WITH_CUDA
  if (a_packed.is_cuda() && be != "torch") {
    const int cc = device_cc(a_packed);
#ifdef LTX_HAS_CUBLASLT_FP4
    const std::string why = nvfp4_cublaslt_why_not(p, cc);
#else
    const std::string why = "this build's CUDA is older than 12.8 (no cuBLASLt NVFP4)";
#endif
    LTX_CHECK(be != "cublaslt" || why.empty(), op, "backend 'cublaslt' cannot run this call (", why, ")");
#ifdef LTX_HAS_CUBLASLT_FP4
    if (why.empty()) {
      const CudaScope scope(a_packed, op);
      const cublasStatus_t st = nvfp4_cublaslt(p, hi_first, scope.stream);
      if (st == CUBLAS_STATUS_SUCCESS) return;
      LTX_CHECK(st == CUBLAS_STATUS_NOT_SUPPORTED && be == "auto", op, "cuBLASLt NVFP4 matmul failed (cublasStatus ",
                int(st), ")");
    }
#endif
    (void)cc;
  }
#endif
  nvfp4_fallback(p, hi_first, op);
}
