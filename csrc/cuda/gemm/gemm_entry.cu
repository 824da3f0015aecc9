// The GEMM family's CUDA entry: per-backend capability checks, the "auto" fallback chain across
// architectures, and the launch (see ltx_kernels/gemm/gemm.h). Host code, compiled for every
// target; the architecture-specific kernels are linked in when the build has them
// (LTX_KERNELS_HAS_SM90: csrc/cuda/gemm/sm90_*.cu; LTX_KERNELS_HAS_SM89: sm89_*.cu).
#include <cstdint>
#include <limits>
#include <string>

#include "ltx_kernels/common/device.h"
#include "ltx_kernels/gemm/fp8_gemm.h"
#include "ltx_kernels/gemm/gemm.h"
#include "ltx_kernels/gemm/heuristics.h"
#include "cublaslt_gemm.h"
#ifdef LTX_KERNELS_HAS_SM90
#include "sm90_gemm.h"
#endif

namespace ltx_kernels {
namespace gemm {
namespace {

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

std::string cc_str(int cc) { return std::to_string(cc / 10) + "." + std::to_string(cc % 10); }

heuristics::Problem problem_of(const GemmParams& p) {
  heuristics::Problem pr;
  pr.ops = p.operands;
  pr.M = p.M;
  pr.N = p.N;
  pr.K = p.K;
  pr.epilogue = p.epilogue;
  pr.out = p.out;
  pr.gate = p.gate_kind;
  pr.tokens_per_sample = p.tokens_per_sample;
  pr.bias = p.bias != nullptr;
  return pr;
}

// The arguments of the kernels that predate GemmParams (plain epilogue, 16-bit output).
Fp8BlockwiseGemmArgs legacy_args(const GemmParams& p) {
  Fp8BlockwiseGemmArgs g;
  g.M = p.M;
  g.N = p.N;
  g.K = p.K;
  g.a = static_cast<const uint8_t*>(p.a);
  g.lda = p.lda;
  g.a_scales = p.a_scales;
  g.sa_stride_m = p.sa_stride_m;
  g.sa_stride_k = p.sa_stride_k;
  g.b = static_cast<const uint8_t*>(p.b);
  g.ldb = p.ldb;
  g.b_scales = p.b_scales;
  g.sb_stride_n = p.sb_stride_n;
  g.sb_stride_k = p.sb_stride_k;
  g.bias = static_cast<const float*>(p.bias);
  g.d = p.d;
  g.ldd = p.ldd;
  g.out = p.out == OutKind::kFP16 ? GemmOut::kFP16 : GemmOut::kBF16;
  return g;
}

std::string args_str(const GemmParams& p) {
  auto mis = [](const void* ptr) { return std::to_string(reinterpret_cast<uintptr_t>(ptr) % 16); };
  return "M=" + std::to_string(p.M) + ", N=" + std::to_string(p.N) + ", K=" + std::to_string(p.K) +
         ", lda=" + std::to_string(p.lda) + ", ldb=" + std::to_string(p.ldb) + ", ldd=" + std::to_string(p.ldd) +
         ", a_scales strides (" + std::to_string(p.sa_stride_m) + ", " + std::to_string(p.sa_stride_k) +
         "), b_scales strides (" + std::to_string(p.sb_stride_n) + ", " + std::to_string(p.sb_stride_k) +
         "), pointer offsets mod 16: a " + mis(p.a) + ", b " + mis(p.b) + ", out " + mis(p.d);
}

// What the kernels older than the sm_90a one fuse: the bias (fp32) only, into bf16 / fp16.
std::string plain_only(const GemmParams& p, const char* name) {
  if (p.epilogue != Epilogue::kNone) return std::string("the ") + name + " kernel fuses no epilogue besides the bias";
  if (p.out == OutKind::kFP8) return std::string("the ") + name + " kernel writes bf16 / fp16 only (no FP8 output)";
  if (p.bias && p.bias_is_out_dtype) return std::string("the ") + name + " kernel takes an fp32 bias only";
  if (p.operands == Operands::kBf16) return std::string("the ") + name + " kernel is FP8 only";
  if (p.operands == Operands::kFp8Rowwise)
    return std::string("the ") + name + " kernel reads blockwise (1x128 / 128x128) scales, not rowwise ones";
  return "";
}

// cuBLASLt's block-scaled FP4 GEMM (cublaslt_gemm.cu): compute capability >= 10.0, K % 32 == 0,
// 16-byte aligned out rows, 32-bit extents.
std::string cublaslt_fp4_why_not(const GemmParams& p, const Device& dev) {
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12080
  if (dev.cc < 100) return "cuBLASLt NVFP4 needs compute capability >= 10.0; this device is " + cc_str(dev.cc);
  if (p.K % 32 != 0) return "cuBLASLt NVFP4 needs K % 32 == 0 (got K = " + std::to_string(p.K) + ")";
  if (p.epilogue != Epilogue::kNone || p.out == OutKind::kFP8 || (p.bias && p.bias_is_out_dtype))
    return "cuBLASLt NVFP4 takes the plain epilogue, an fp32 bias and a 16-bit out";
  if (p.ldd % 8 != 0 || !aligned16(p.d)) return "out rows must be 16-byte aligned";
  if (p.M > kIntMax || p.N > kIntMax || p.K > kIntMax) return "cuBLASLt NVFP4 takes M, N, K < 2^31";
  return "";
#else
  (void)p;
  (void)dev;
  return "this build's CUDA is older than 12.8 (no cuBLASLt NVFP4)";
#endif
}

// What cuBLASLt's FP8 GEMMs (cublaslt_gemm.cu) read, as PyTorch's _scaled_mm hands them over:
// A row-major and B [N, K] row-major (its transpose column-major), rows 16-byte aligned, N % 16 ==
// 0; bf16 out with rows of exactly N; a bias in bf16 at most (cuBLASLt's epilogue adds it in fp32
// before the one rounding); the plain epilogue. Blockwise (1x128 scales for A, 128x128 for B):
// K % 512 == 0, sa(m, kb) at kb * M + m exactly, sb row-major [ceil(N / 128), K / 128]. Rowwise
// (outer-vector scales, fast accumulation): K % 16 == 0, one contiguous, 16-byte aligned fp32
// scale per row of each (sa[m] at m, sb[n] at n).
std::string cublaslt_why_not(const GemmParams& p, const Device& dev) {
  if (p.operands == Operands::kNvfp4) return cublaslt_fp4_why_not(p, dev);
  const bool rowwise = p.operands == Operands::kFp8Rowwise;
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12090
  const std::string name = rowwise ? "cuBLASLt's rowwise FP8 GEMM" : "cuBLASLt's blockwise FP8 GEMM";
  if (dev.cc != 90) return name + " is used on compute capability 9.0 only; this device is " + cc_str(dev.cc);
  if (!rowwise && p.operands != Operands::kFp8Blockwise)
    return name + " reads e4m3 operands with 1x128 / 128x128 block scales or rowwise scales only";
  if (p.epilogue != Epilogue::kNone) return name + " fuses no epilogue besides the bias";
  if (p.out != OutKind::kBF16) return name + " writes bf16 here (no fp16 or FP8 output)";
  if (p.bias != nullptr && !p.bias_is_out_dtype) return name + " takes a bf16 bias only (got an fp32 one)";
  const int64_t G = p.K / 128, Nb = (p.N + 127) / 128;
  // blockwise: K / 128 scale blocks a multiple of 4: through torch 2.11's _scaled_mm (cuBLASLt of
  // CUDA 13.0) a K of 128, 256, 384 or 640 returns wrong results without an error at some M and N,
  // a K of 512, 1024 or 2048 right ones (N 128 to 2064, ragged included); docs/design/gemm.md
  // names the probe to rerun after a torch or CUDA upgrade.
  if (!rowwise && G % 4 != 0) return name + " needs K % 512 == 0 (got K=" + std::to_string(p.K) + ")";
  if (rowwise && p.K % 16 != 0) return name + " needs K % 16 == 0 (got K=" + std::to_string(p.K) + ")";
  if (p.N % 16 != 0) return name + " needs N % 16 == 0 (got N=" + std::to_string(p.N) + ")";
  if (p.lda % 16 != 0 || p.ldb % 16 != 0 || !aligned16(p.a) || !aligned16(p.b) || !aligned16(p.d))
    return name + " needs 16-byte aligned a, b and out and row strides of a and b that are multiples of 16";
  if (p.ldd != p.N) return name + " writes contiguous rows (out row stride " + std::to_string(p.ldd) + " != N)";
  if (rowwise) {
    if (!(p.M == 1 || p.sa_stride_m == 1) || !(p.N == 1 || p.sb_stride_n == 1))
      return name + " reads contiguous scales (got strides " + std::to_string(p.sa_stride_m) + " and " +
             std::to_string(p.sb_stride_n) + ")";
    if (!aligned16(p.a_scales) || !aligned16(p.b_scales)) return name + " reads 16-byte aligned scale vectors";
  } else {
    if (!((p.M == 1 || p.sa_stride_m == 1) && (G == 1 || p.sa_stride_k == p.M)))
      return name + " reads a_scales M-major with strides (1, M) exactly (got (" + std::to_string(p.sa_stride_m) +
             ", " + std::to_string(p.sa_stride_k) + "))";
    if (!((G == 1 || p.sb_stride_k == 1) && (Nb == 1 || p.sb_stride_n == G)))
      return name + " reads b_scales row-major [ceil(N/128), K/128]";
  }
  if (p.M > kIntMax || p.N > kIntMax || p.K > kIntMax) return name + " takes M, N, K < 2^31";
  return "";
#else
  (void)dev;
  return rowwise ? "this build's CUDA is older than 12.9 (cuBLASLt's outer-vector FP8 scaling)"
                 : "this build's CUDA is older than 12.9 (cuBLASLt's blockwise FP8 scaling)";
#endif
}

#ifdef LTX_KERNELS_HAS_SM90
// The sm_90a kernel's argument rules (TMA: 16-byte aligned bases and row strides; 32-bit extents).
std::string sm90_args_why_not(const GemmParams& p) {
  const bool fp8 = e4m3_operands(p.operands), rowwise = p.operands == Operands::kFp8Rowwise;
  if (p.operands == Operands::kFp6Blockwise) return "the sm_90a kernel reads e4m3 weights, not packed FP6";
  if (p.M < 1 || p.N < 1 || p.K < 1) return "empty problem";
  if (p.M > kIntMax || p.N > kIntMax || p.K > kIntMax) return "M, N, K must each be < 2^31";
  if (fp8 && !rowwise && p.K % 128 != 0) return "K must be a multiple of 128";
  const int64_t in_bytes = fp8 ? 1 : 2;
  if (!aligned16(p.a) || !aligned16(p.b) || (p.lda * in_bytes) % 16 != 0 || (p.ldb * in_bytes) % 16 != 0)
    return "a and b need 16-byte aligned data pointers and row strides (TMA): " + args_str(p);
  if (p.N % 8 != 0) return "N must be a multiple of 8";
  const int64_t out_bytes = p.out == OutKind::kFP8 ? 1 : 2;
  if (!aligned16(p.d) || (p.ldd * out_bytes) % 16 != 0)
    return "out needs a 16-byte aligned data pointer and row stride (TMA): " + args_str(p);
  if (p.bias && !aligned16(p.bias)) return "bias must be 16-byte aligned";
  if (fp8 && (!p.a_scales || !p.b_scales)) return "missing scales";
  // rowwise: the tile's weight scales are staged by one bulk copy (contiguous, 16-byte aligned)
  if (rowwise && (p.sb_stride_n != 1 || !aligned16(p.b_scales)))
    return "the rowwise weight scales need stride 1 and a 16-byte aligned data pointer";
  if (p.out == OutKind::kFP8 && (p.N % 128 != 0 || !p.d_scales)) return "the FP8 output needs N % 128 == 0";
  if (p.epilogue == Epilogue::kGatedResidual) {
    if (p.out == OutKind::kFP8) return "the gated residual writes bf16 / fp16";
    if (!aligned16(p.residual) || (p.ld_residual * 2) % 16 != 0 || !aligned16(p.gate) || (p.ld_gate * 2) % 16 != 0)
      return "residual and gate need 16-byte aligned data pointers and row strides (TMA)";
    if (p.gate_kind == GateKind::kNone) return "missing gate";
    if (p.gate_kind == GateKind::kPerSample && (p.tokens_per_sample < 1 || p.tokens_per_sample > kIntMax))
      return "bad tokens per sample";
  }
  return "";
}
#endif

}  // namespace

Device query_device(int index) {
  const DeviceProps& props = device_props(index);  // queried once per device, then cached
  Device d;
  d.index = index;
  d.cc = props.cc;
  d.sms = props.sm_count;
  d.smem_optin = props.smem_optin;
  return d;
}

TileConfig sm90_config(const GemmParams& p, const Device& dev) {
  const heuristics::Problem pr = problem_of(p);
  TileConfig c = heuristics::choose_tile(pr, dev.sms, dev.smem_optin);
  const TileConfig& f = p.config;
  if (f.bm != 0) {
    if (!heuristics::tile_ok(pr, f.bm, f.bn, dev.smem_optin)) return TileConfig{};
    c.bm = f.bm;
    c.bn = f.bn;
    c.group_m = c.bm == 256 ? 8 : 16;
    const int64_t num_m = heuristics::cdiv(p.M, c.bm);
    c.cluster = (num_m * heuristics::cdiv(p.N, c.bn) > dev.sms && num_m >= 2 && dev.sms % 2 == 0) ? 2 : 1;
  }
  if (c.bm == 0) return c;
  if (f.cluster != 0) c.cluster = f.cluster;
  if (f.group_m != 0) c.group_m = f.group_m;
  if (f.sms != 0) c.sms = f.sms;
  if (f.stages != 0) c.stages = f.stages;
  return c;
}

std::string why_not(Backend be, const GemmParams& p, const Device& dev) {
  const std::string ccs = cc_str(dev.cc);
  if (p.operands == Operands::kNvfp4 && be != Backend::kCublasLt && be != Backend::kTorch && be != Backend::kCpu)
    return std::string("the ") + backend_name(be) + " kernel reads no NVFP4 operands";
  switch (be) {
    case Backend::kCpu:
      return "the tensors are on a CUDA device";
    case Backend::kTorch:
      return "";
    case Backend::kSm90: {
#ifdef LTX_KERNELS_HAS_SM90
      if (dev.cc != 90) return "the sm_90a kernel needs compute capability 9.0; this device is " + ccs;
      const std::string why = sm90_args_why_not(p);
      if (!why.empty()) return "the sm_90a kernel does not take these arguments: " + why;
      const TileConfig c = sm90_config(p, dev);
      if (c.bm == 0) {
        if (p.config.bm != 0) {
          const char* w = heuristics::tile_why_not(problem_of(p), p.config.bm, p.config.bn, dev.smem_optin);
          return "LTX_KERNELS_GEMM_CONFIG tile " + std::to_string(p.config.bm) + "x" + std::to_string(p.config.bn) +
                 " cannot run this call (" + w + ")";
        }
        return "no compiled sm_90a tile configuration fits this call";
      }
      return "";
#else
      return "no kernel compiled for sm_90a in this build (TORCH_CUDA_ARCH_LIST needs 9.0a)";
#endif
    }
    case Backend::kSm90Cutlass: {
#ifdef LTX_KERNELS_HAS_SM90
      if (dev.cc != 90) return "the CUTLASS sm_90a kernel needs compute capability 9.0; this device is " + ccs;
      const std::string why = plain_only(p, "CUTLASS sm_90a");
      if (!why.empty()) return why;
      if (p.operands != Operands::kFp8Blockwise) return "the CUTLASS sm_90a kernel reads e4m3 weights";
      if (!fp8_blockwise_gemm_sm90_supported(legacy_args(p), dev.cc))
        return "the CUTLASS sm_90a kernel does not take these arguments: " + args_str(p);
      return "";
#else
      return "no kernel compiled for sm_90a in this build (TORCH_CUDA_ARCH_LIST needs 9.0a)";
#endif
    }
    case Backend::kCublasLt:
      return cublaslt_why_not(p, dev);
    case Backend::kSkinny: {
#ifdef LTX_KERNELS_HAS_SM89
      if (dev.cc < 89) return "the few-token FP8 kernel needs compute capability >= 8.9; this device is " + ccs;
      if (p.M > 64) return "the skinny kernel takes M <= 64 (got M=" + std::to_string(p.M) + ")";
      const std::string why = plain_only(p, "skinny");
      if (!why.empty()) return why;
      if (p.operands != Operands::kFp8Blockwise) return "the skinny kernel reads e4m3 weights";
      if (!fp8_blockwise_gemm_skinny_supported(legacy_args(p), dev.cc))
        return "the skinny kernel does not take these arguments: " + args_str(p);
      return "";
#else
      return "no kernel compiled for sm_89 or newer in this build (needs a CUDA target >= 8.9)";
#endif
    }
    case Backend::kSm89: {
#ifdef LTX_KERNELS_HAS_SM89
      if (dev.cc < 89) return "the mma.sync FP8 kernel needs compute capability >= 8.9; this device is " + ccs;
      const std::string why = plain_only(p, "sm89");
      if (!why.empty()) return why;
      const bool fp6 = p.operands == Operands::kFp6Blockwise;
      const bool ok = fp6 ? fp6_blockwise_gemm_sm89_supported(legacy_args(p), dev.cc)
                          : fp8_blockwise_gemm_sm89_supported(legacy_args(p), dev.cc);
      if (!ok) return std::string("the sm89 ") + (fp6 ? "FP6" : "FP8") + " kernel does not take these arguments: " + args_str(p);
      return "";
#else
      return "no kernel compiled for sm_89 or newer in this build (needs a CUDA target >= 8.9)";
#endif
    }
  }
  return "unknown backend";
}

Backend choose_auto(const GemmParams& p, const Device& dev) {
  if (p.M == 0 || p.N == 0 || p.K == 0) return Backend::kTorch;  // nothing for a kernel to do
  if (p.operands == Operands::kFp6Blockwise) return why_not(Backend::kSm89, p, dev).empty() ? Backend::kSm89 : Backend::kTorch;
  if (p.operands == Operands::kNvfp4) return why_not(Backend::kCublasLt, p, dev).empty() ? Backend::kCublasLt : Backend::kTorch;
  const bool sm90_ok = why_not(Backend::kSm90, p, dev).empty();
  if (heuristics::prefer_skinny(problem_of(p), dev.sms, sm90_ok) && why_not(Backend::kSkinny, p, dev).empty())
    return Backend::kSkinny;
  if (heuristics::prefer_cublaslt(problem_of(p)) && why_not(Backend::kCublasLt, p, dev).empty())
    return Backend::kCublasLt;
  if (heuristics::prefer_cutlass(problem_of(p)) && why_not(Backend::kSm90Cutlass, p, dev).empty())
    return Backend::kSm90Cutlass;
  if (sm90_ok) return Backend::kSm90;
  if (why_not(Backend::kSm89, p, dev).empty()) return Backend::kSm89;
  return Backend::kTorch;
}

size_t workspace_bytes(Backend be, const GemmParams& p, const Device& dev) {
  if (be == Backend::kCublasLt) return cublaslt::workspace_bytes(p, dev);
#ifdef LTX_KERNELS_HAS_SM89
  if (be == Backend::kSkinny) return fp8_blockwise_gemm_skinny_workspace(legacy_args(p), dev.sms);
#endif
#ifdef LTX_KERNELS_HAS_SM90
  if (be == Backend::kSm90Cutlass) return fp8_blockwise_gemm_sm90_workspace(legacy_args(p), dev.sms);
#endif
  (void)be;
  (void)p;
  (void)dev;
  return 0;
}

cudaError_t run(Backend be, const GemmParams& p, const Device& dev, void* workspace, size_t ws_bytes,
                cudaStream_t stream) {
  switch (be) {
    case Backend::kCublasLt:
      return cublaslt::run(p, dev, workspace, ws_bytes, stream);
#ifdef LTX_KERNELS_HAS_SM90
    case Backend::kSm90: {
      const TileConfig c = sm90_config(p, dev);
      if (c.bm == 0) return cudaErrorNotSupported;
      if (p.operands == Operands::kFp8Rowwise) return sm90::run_fp8_rowwise(p, c, dev.sms, stream);
      return p.operands == Operands::kFp8Blockwise ? sm90::run_fp8_1d2d(p, c, dev.sms, stream)
                                                   : sm90::run_bf16(p, c, dev.sms, stream);
    }
    case Backend::kSm90Cutlass:
      return fp8_blockwise_gemm_sm90(legacy_args(p), workspace, ws_bytes, dev.sms, stream);
#endif
#ifdef LTX_KERNELS_HAS_SM89
    case Backend::kSkinny:
      return fp8_blockwise_gemm_skinny(legacy_args(p), workspace, ws_bytes, dev.sms, stream);
    case Backend::kSm89:
      return p.operands == Operands::kFp6Blockwise ? fp6_blockwise_gemm_sm89(legacy_args(p), stream)
                                                   : fp8_blockwise_gemm_sm89(legacy_args(p), stream);
#endif
    default:
      break;
  }
  (void)p;
  (void)dev;
  (void)workspace;
  (void)ws_bytes;
  (void)stream;
  return cudaErrorNotSupported;
}

Plan plan(Backend requested, const GemmParams& p, const Device& dev) {
  Plan pl;
  pl.fallback = requested == Backend::kAuto;
  if (requested == Backend::kTorch) return pl;
  if (requested == Backend::kCpu) {
    pl.error = why_not(Backend::kCpu, p, dev);
    return pl;
  }
  if (p.M == 0 || p.N == 0 || p.K == 0) return pl;  // nothing for a kernel to do
  GemmParams p32 = p;  // the same call with the 16-bit bias widened to fp32
  p32.bias_is_out_dtype = false;
  const bool bias16 = p.bias != nullptr && p.bias_is_out_dtype;
  if (requested == Backend::kAuto) {
    pl.backend = choose_auto(p, dev);
    if (bias16 && pl.backend != Backend::kCublasLt) {
      const Backend be32 = choose_auto(p32, dev);
      if (be32 != pl.backend) {
        pl.backend = be32;
        pl.widen_bias = true;
      }
    }
  } else {
    pl.widen_bias = bias16 && (requested == Backend::kSkinny || requested == Backend::kSm89 ||
                               requested == Backend::kSm90Cutlass);
    pl.error = why_not(requested, pl.widen_bias ? p32 : p, dev);
    if (!pl.error.empty()) return pl;
    pl.backend = requested;
  }
  if (pl.backend != Backend::kTorch) pl.workspace = workspace_bytes(pl.backend, pl.widen_bias ? p32 : p, dev);
  return pl;
}

Outcome execute(const Plan& pl, const GemmParams& p, const Device& dev, void* workspace, cudaStream_t stream) {
  Outcome o;
  if (pl.backend == Backend::kTorch) return o;
  o.ran = pl.backend;
  if (pl.widen_bias && p.bias_is_out_dtype) {
    o.error = cudaErrorInvalidValue;
    return o;
  }
  o.error = run(pl.backend, p, dev, workspace, pl.workspace, stream);
  if (o.error != cudaErrorNotSupported || !pl.fallback) return o;
  // a kernel that declined: the sm_90a kernel (every recipe, no workspace), then the mma.sync one
  for (const Backend next : {Backend::kSm90, Backend::kSm89}) {
    if (pl.backend == next || !why_not(next, p, dev).empty()) continue;
    o.ran = next;
    o.error = run(next, p, dev, nullptr, 0, stream);
    if (o.error != cudaErrorNotSupported) return o;
  }
  return Outcome{};  // the exact fallback
}

}  // namespace gemm
}  // namespace ltx_kernels
