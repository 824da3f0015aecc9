// The cuBLASLt backend of the GEMM entry: see cublaslt_gemm.h.
//
// The FP8 recipe is the call PyTorch's _scaled_mm(a, b.t(), scale_a=sa, scale_b=sb.t(),
// out_dtype=bf16, bias) makes with 1x128 / 128x128 scales on a row-major out: cuBLAS "A" = our b
// (e4m3 [N, K] rows of ldb, read transposed, K x N column-major), "B" = our a (K x M column-major,
// ld lda), D = out^T (N x M column-major, ld ldd); A scaled per 128x128 block by b_scales
// (row-major [ceil(N/128), K/128]: the K blocks of one N block adjacent), B per 1x128 block by
// a_scales (M-major [M, K/128] with strides (1, M)); fp32 compute and scale type, fast accumulation
// off (cuBLASLt refuses it for block scaling), alpha 1 and beta 0 on the host, C = D with C of
// the bias type (bf16), the bias epilogue with a bf16 bias, and at most 32 MiB of workspace (the
// cuBLASLt workspace PyTorch gives Hopper by default), so the heuristic sees the same problem.
// The pointer alignments go to the heuristic as its minimum-alignment preferences (PyTorch leaves
// them at 256 bytes): an algorithm is only picked for pointers it can read.
//
// The FP8 rowwise recipe is the same call with outer-vector scales (OUTER_VEC_32F: b_scales one per
// row of our b = per column of D^T's rows, a_scales one per row of our a, both contiguous fp32) and
// fast accumulation on: the e4m3 products summed by the tensor cores across the whole K with no
// promotion, then scaled once, which is fp8_rowwise_gemm's definition (gemm_params.h) and what
// _scaled_mm(..., use_fast_accum=True) runs with rowwise scales.
#include "cublaslt_gemm.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <type_traits>

namespace ltx_kernels {
namespace gemm {
namespace cublaslt {
namespace {

#if defined(CUDART_VERSION) && CUDART_VERSION >= 12080
#define LTX_CUBLASLT_FP4 1  // CUDA_R_4F_E2M1 and VEC16_UE4M3 scales
#endif
#if defined(CUDART_VERSION) && CUDART_VERSION >= 12090
#define LTX_CUBLASLT_FP8_BLOCK 1  // VEC128_32F / BLK128x128_32F and OUTER_VEC_32F scales
#endif

#ifdef LTX_CUBLASLT_FP4

constexpr size_t kMaxAlgoWorkspace = size_t(32) << 20;
constexpr int kMaxDevices = 64;
constexpr size_t kAlign = 256;  // of every part of the workspace

size_t round_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

cudaError_t to_cuda(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return cudaSuccess;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH: return cudaErrorNotSupported;
    case CUBLAS_STATUS_ALLOC_FAILED: return cudaErrorMemoryAllocation;
    case CUBLAS_STATUS_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUBLAS_STATUS_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUBLAS_STATUS_EXECUTION_FAILED: return cudaErrorLaunchFailure;
    default: return cudaErrorUnknown;
  }
}

// RAII owners of cuBLASLt objects.
struct LtDeleter {
  void operator()(cublasLtContext* h) const { cublasLtDestroy(h); }
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using Handle = std::unique_ptr<cublasLtContext, LtDeleter>;
using Desc = std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDeleter>;
using Pref = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtDeleter>;

// Largest power of two <= 256 dividing the address.
uint32_t alignment(const void* p) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 1;
  while (a < kAlign && v % (2 * a) == 0) a *= 2;
  return a;
}

// What the descriptors and the algorithm depend on.
struct Key {
  int device = 0;
  Operands ops = Operands::kFp8Blockwise;
  int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldd = 0;
  OutKind out = OutKind::kBF16;
  bool bias = false;
  uint32_t align_a = 0, align_b = 0, align_d = 0;
  bool operator==(const Key& o) const {
    return device == o.device && ops == o.ops && M == o.M && N == o.N && K == o.K && lda == o.lda &&
           ldb == o.ldb && ldd == o.ldd && out == o.out && bias == o.bias && align_a == o.align_a &&
           align_b == o.align_b && align_d == o.align_d;
  }
};

// One cached problem: descriptors, the algorithm and its workspace (status != SUCCESS: cuBLASLt
// refused the problem, remembered as such).
struct Entry {
  Key key;
  Desc desc;
  Layout la, lb, lc;  // cuBLAS's A (our b), B (our a), C = D
  cublasLtMatmulAlgo_t algo{};
  size_t algo_workspace = 0;
  cublasStatus_t status = CUBLAS_STATUS_NOT_SUPPORTED;
};

// The process-wide state. Never destroyed: at exit the CUDA context may be gone before static
// destructors run, so the handles and descriptors are left to the driver's teardown then.
struct State {
  std::mutex mu;
  Handle handles[kMaxDevices];
  std::list<Entry> cache;  // most recently used first
};
State& state() {
  static State* s = new State();
  return *s;
}

// The operand pointers as cuBLAS sees them: A = our b, B = our a (for kNvfp4 with hi_first, the
// swapped copies in the workspace).
struct Operand {
  const void* a;
  const void* b;
};

// Workspace layout of a kNvfp4 call: [algorithm | swapped a | swapped b | bias | beta].
struct Fp4Parts {
  size_t swapped_a = 0, swapped_b = 0, bias = 0, beta = 0, total = 0;
};
Fp4Parts fp4_parts(const GemmParams& p, size_t algo_workspace) {
  Fp4Parts w;
  size_t at = round_up(algo_workspace);
  if (p.fp4_hi_first) {
    w.swapped_a = at;
    at += round_up(size_t(p.M) * size_t(p.K / 2));
    w.swapped_b = at;
    at += round_up(size_t(p.N) * size_t(p.K / 2));
  }
  if (p.bias) {
    w.bias = at;
    at += round_up(size_t(p.N) * 2);
  }
  w.beta = at;
  w.total = at + kAlign;
  return w;
}

Key key_of(const GemmParams& p, const Device& dev, const Operand& in) {
  Key k;
  k.device = dev.index;
  k.ops = p.operands;
  k.M = p.M;
  k.N = p.N;
  k.K = p.K;
  k.lda = p.lda;
  k.ldb = p.ldb;
  k.ldd = p.ldd;
  k.out = p.out;
  k.bias = p.bias != nullptr;
  k.align_a = alignment(in.b);  // cuBLAS's A is our b
  k.align_b = alignment(in.a);
  k.align_d = alignment(p.d);
  return k;
}

template <class T>
cublasStatus_t set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v) {
  return cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v));
}

// The per-call pointers of the descriptor: the scales of cuBLAS's A and B, and the bias.
cublasStatus_t set_pointers(cublasLtMatmulDesc_t d, const GemmParams& p, const void* bias) {
  const bool fp4 = p.operands == Operands::kNvfp4;
  const void* scale_a = fp4 ? p.b_block_scales : static_cast<const void*>(p.b_scales);
  const void* scale_b = fp4 ? p.a_block_scales : static_cast<const void*>(p.a_scales);
  cublasStatus_t st = set(d, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scale_a);
  if (st == CUBLAS_STATUS_SUCCESS) st = set(d, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scale_b);
  if (st == CUBLAS_STATUS_SUCCESS && bias) st = set(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  return st;
}

// Builds the descriptors of a problem and asks the heuristic for one algorithm. `bias`: the
// pointer the first call passes (the heuristic sees the descriptor as the launch will).
void build(Entry& e, cublasLtHandle_t handle, const GemmParams& p, const void* bias) {
  const bool fp4 = p.operands == Operands::kNvfp4;
  cudaDataType_t in_type = CUDA_R_8F_E4M3;
  int32_t mode_a = 0, mode_b = 0;
  if (fp4) {
    in_type = CUDA_R_4F_E2M1;
    mode_a = mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
  }
  const bool rowwise = p.operands == Operands::kFp8Rowwise;
#ifdef LTX_CUBLASLT_FP8_BLOCK
  if (rowwise) {
    mode_a = mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
  } else if (!fp4) {
    mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  }
#endif
  const cudaDataType_t out_type = p.out == OutKind::kFP16 ? CUDA_R_16F : CUDA_R_16BF;
  cublasStatus_t& st = e.status;
  auto ok = [&](cublasStatus_t s) {
    if (st == CUBLAS_STATUS_SUCCESS) st = s;
    return st == CUBLAS_STATUS_SUCCESS;
  };
  st = CUBLAS_STATUS_SUCCESS;
  cublasLtMatmulDesc_t d = nullptr;
  if (!ok(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F))) return;
  e.desc.reset(d);
  ok(set(d, CUBLASLT_MATMUL_DESC_TRANSA, int32_t(CUBLAS_OP_T)));
  ok(set(d, CUBLASLT_MATMUL_DESC_TRANSB, int32_t(CUBLAS_OP_N)));
  ok(set(d, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode_a));
  ok(set(d, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode_b));
  if (fp4) {
    ok(set(d, CUBLASLT_MATMUL_DESC_POINTER_MODE, int32_t(CUBLASLT_POINTER_MODE_DEVICE)));
  } else {
    ok(set(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t(rowwise ? 1 : 0)));
  }
  if (p.bias) {
    ok(set(d, CUBLASLT_MATMUL_DESC_EPILOGUE, uint32_t(CUBLASLT_EPILOGUE_BIAS)));
    // FP8: the bf16 bias's type, as PyTorch names it; FP4: cuBLASLt's default, the out type
    if (!fp4) ok(set(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t(out_type)));
  }
  ok(set_pointers(d, p, bias));
  // Layouts in elements; the FP4 operands hold K / 2 bytes per row, K codes (ld = K).
  const uint64_t ld_a = fp4 ? uint64_t(p.K) : uint64_t(p.ldb), ld_b = fp4 ? uint64_t(p.K) : uint64_t(p.lda);
  cublasLtMatrixLayout_t l = nullptr;
  if (ok(cublasLtMatrixLayoutCreate(&l, in_type, p.K, p.N, ld_a))) e.la.reset(l);
  if (ok(cublasLtMatrixLayoutCreate(&l, in_type, p.K, p.M, ld_b))) e.lb.reset(l);
  if (ok(cublasLtMatrixLayoutCreate(&l, out_type, p.N, p.M, p.ldd))) e.lc.reset(l);
  cublasLtMatmulPreference_t pr = nullptr;
  if (!ok(cublasLtMatmulPreferenceCreate(&pr))) return;
  const Pref pref(pr);
  cublasLtMatmulPreferenceAttributes_t attr = CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES;
  ok(cublasLtMatmulPreferenceSetAttribute(pr, attr, &kMaxAlgoWorkspace, sizeof(kMaxAlgoWorkspace)));
  const uint32_t al[4] = {e.key.align_a, e.key.align_b, e.key.align_d, e.key.align_d};
  const cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) ok(cublasLtMatmulPreferenceSetAttribute(pr, al_attr[i], &al[i], sizeof(al[i])));
  if (st != CUBLAS_STATUS_SUCCESS) return;
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  if (!ok(cublasLtMatmulAlgoGetHeuristic(handle, d, e.la.get(), e.lb.get(), e.lc.get(), e.lc.get(), pr, 1, &res,
                                         &found)))
    return;
  if (found == 0) {
    st = CUBLAS_STATUS_NOT_SUPPORTED;
    return;
  }
  e.algo = res.algo;
  e.algo_workspace = res.workspaceSize;
}

// Makes `device` current for the scope (the handle and the heuristic belong to it).
struct DeviceScope {
  int before = -1;
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&before) == cudaSuccess && before != device) cudaSetDevice(device);
  }
  ~DeviceScope() {
    int now = -1;
    if (before >= 0 && cudaGetDevice(&now) == cudaSuccess && now != before) cudaSetDevice(before);
  }
};

// The handle of `device` (created on first use) and the cached entry of the problem (built on a
// miss; the least recently used entry beyond kCacheEntries is destroyed). Called with state().mu
// held.
Entry* lookup(const GemmParams& p, const Device& dev, const Operand& in, const void* bias, cublasLtHandle_t* handle) {
  State& s = state();
  if (dev.index < 0 || dev.index >= kMaxDevices) return nullptr;
  const DeviceScope on(dev.index);
  Handle& h = s.handles[dev.index];
  if (!h) {
    cublasLtHandle_t raw = nullptr;
    if (cublasLtCreate(&raw) != CUBLAS_STATUS_SUCCESS) return nullptr;
    h.reset(raw);
  }
  *handle = h.get();
  const Key key = key_of(p, dev, in);
  for (auto it = s.cache.begin(); it != s.cache.end(); ++it) {
    if (it->key == key) {
      s.cache.splice(s.cache.begin(), s.cache, it);
      return &s.cache.front();
    }
  }
  s.cache.emplace_front();
  Entry& e = s.cache.front();
  e.key = key;
  build(e, h.get(), p, bias);
  while (s.cache.size() > size_t(kCacheEntries)) s.cache.pop_back();
  return &e;
}

bool compiled(const GemmParams& p) {
#ifdef LTX_CUBLASLT_FP8_BLOCK
  (void)p;
  return true;
#else
  return p.operands == Operands::kNvfp4;
#endif
}

// cuBLASLt reads element 2j of an FP4 byte from the low nibble; LTX-2's hi_first packs it high.
__global__ void swap_nibbles(uint8_t* __restrict__ out, const uint8_t* __restrict__ in, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint8_t v = in[i];
    out[i] = uint8_t((v << 4) | (v >> 4));
  }
}

// The fp32 bias rounded (to nearest even) to the out type, cuBLASLt's bias type for a 16-bit D.
template <class T>
__global__ void round_bias(T* __restrict__ out, const float* __restrict__ in, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same_v<T, __half>) {
      out[i] = __float2half_rn(in[i]);
    } else {
      out[i] = __float2bfloat16_rn(in[i]);
    }
  }
}

int blocks_for(int64_t n) {
  const int64_t b = (n + 255) / 256;
  return int(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

// The kNvfp4 preparation on the stream: swapped operands, rounded bias, beta = 0.
cudaError_t prepare_fp4(const GemmParams& p, const Fp4Parts& w, char* ws, Operand* in, const void** bias,
                        cudaStream_t stream) {
  if (p.fp4_hi_first) {
    const int64_t na = p.M * (p.K / 2), nb = p.N * (p.K / 2);
    auto* sa = reinterpret_cast<uint8_t*>(ws + w.swapped_a);
    auto* sb = reinterpret_cast<uint8_t*>(ws + w.swapped_b);
    swap_nibbles<<<blocks_for(na), 256, 0, stream>>>(sa, static_cast<const uint8_t*>(p.a), na);
    swap_nibbles<<<blocks_for(nb), 256, 0, stream>>>(sb, static_cast<const uint8_t*>(p.b), nb);
    in->a = sa;
    in->b = sb;
  }
  if (p.bias) {
    const auto* src = static_cast<const float*>(p.bias);
    if (p.out == OutKind::kFP16) {
      round_bias<<<blocks_for(p.N), 256, 0, stream>>>(reinterpret_cast<__half*>(ws + w.bias), src, p.N);
    } else {
      round_bias<<<blocks_for(p.N), 256, 0, stream>>>(reinterpret_cast<__nv_bfloat16*>(ws + w.bias), src, p.N);
    }
    *bias = ws + w.bias;
  }
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  return cudaMemsetAsync(ws + w.beta, 0, sizeof(float), stream);
}

}  // namespace

size_t workspace_bytes(const GemmParams& p, const Device& dev) {
  if (!compiled(p)) return 0;
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mu);
  // alignments as run() will see them: kNvfp4 with hi_first reads its swapped copies (aligned)
  const bool swapped = p.operands == Operands::kNvfp4 && p.fp4_hi_first;
  const Operand in{swapped ? reinterpret_cast<const void*>(kAlign) : p.a, swapped ? reinterpret_cast<const void*>(kAlign) : p.b};
  cublasLtHandle_t handle = nullptr;
  const Entry* e = lookup(p, dev, in, p.bias, &handle);
  if (e == nullptr || e->status != CUBLAS_STATUS_SUCCESS) return 0;
  if (p.operands != Operands::kNvfp4) return e->algo_workspace;
  return fp4_parts(p, e->algo_workspace).total;
}

cudaError_t run(const GemmParams& p, const Device& dev, void* workspace, size_t ws_bytes, cudaStream_t stream) {
  if (!compiled(p)) return cudaErrorNotSupported;
  const bool fp4 = p.operands == Operands::kNvfp4;
  State& s = state();
  const std::lock_guard<std::mutex> lock(s.mu);
  Operand in{p.a, p.b};
  const void* bias = p.bias;
  if (fp4 && p.fp4_hi_first) in = Operand{reinterpret_cast<const void*>(kAlign), reinterpret_cast<const void*>(kAlign)};
  cublasLtHandle_t handle = nullptr;
  Entry* e = lookup(p, dev, in, bias, &handle);
  if (e == nullptr) return cudaErrorNotSupported;
  if (e->status != CUBLAS_STATUS_SUCCESS) return to_cuda(e->status);
  char* ws = static_cast<char*>(workspace);
  const float one = 1.0f, zero = 0.0f;
  const void* alpha = &one;
  const void* beta = &zero;
  if (fp4) {
    const Fp4Parts w = fp4_parts(p, e->algo_workspace);
    if (ws_bytes < w.total || ws == nullptr) return cudaErrorInvalidValue;
    in = Operand{p.a, p.b};
    const cudaError_t err = prepare_fp4(p, w, ws, &in, &bias, stream);
    if (err != cudaSuccess) return err;
    alpha = p.alpha;
    beta = ws + w.beta;
  } else if (ws_bytes < e->algo_workspace || (e->algo_workspace > 0 && ws == nullptr)) {
    return cudaErrorInvalidValue;
  }
  cublasStatus_t st = set_pointers(e->desc.get(), p, bias);
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmul(handle, e->desc.get(), alpha, in.b, e->la.get(), in.a, e->lb.get(), beta, p.d, e->lc.get(),
                        p.d, e->lc.get(), &e->algo, e->algo_workspace > 0 ? ws : nullptr, e->algo_workspace, stream);
  }
  return to_cuda(st);
}

#else  // CUDA older than 12.8: neither recipe exists

}  // namespace

size_t workspace_bytes(const GemmParams&, const Device&) { return 0; }
cudaError_t run(const GemmParams&, const Device&, void*, size_t, cudaStream_t) { return cudaErrorNotSupported; }

#endif  // LTX_CUBLASLT_FP4

}  // namespace cublaslt
}  // namespace gemm
}  // namespace ltx_kernels
