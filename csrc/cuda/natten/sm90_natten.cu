// sm_90 neighborhood attention launcher: TMA descriptors (one pair per batch element), launch.
// The envelope and the box choice are natten_heuristics.h's; the kernel is sm90_natten.cuh's.
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include <type_traits>

#include "ltx_kernels/common/device.h"
#include "ltx_kernels/natten/natten.h"
#include "ltx_kernels/natten/natten_heuristics.h"
#include "ltx_kernels/natten/sm90_natten.cuh"

namespace ltx_kernels {
namespace {

using natten_sm90::kD;
using natten_sm90::kNK;

static_assert(kD == kNattenSm90HeadDim && kNK == kNattenSm90ChunkKeys,
              "natten_heuristics.h describes this kernel's head dim and chunk");

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();  // not sticky: the caller falls back to the portable kernel
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// K or V of one batch element as a 5-D tensor (d, head, w, h, t), box {64, 1, w8, 64 / w8, 1},
// 128-byte swizzle. Strides of extent-1 axes are replaced by packed ones (never used to address).
template <typename T>
bool encode(CUtensorMap* map, const T* base, const NattenStrides& s, const NattenProblem& p, int w8) {
  auto fn = encode_fn();
  if (fn == nullptr) return false;
  const cuuint64_t dims[5] = {cuuint64_t(kD), cuuint64_t(p.heads), cuuint64_t(p.size[2]), cuuint64_t(p.size[1]),
                              cuuint64_t(p.size[0])};
  const int64_t el[4] = {s.head, s.s2, s.s1, s.s0};
  cuuint64_t strides[4];
  int64_t prev = kD * int64_t(sizeof(T)), prev_extent = 1;
  for (int i = 0; i < 4; ++i) {
    int64_t b = el[i] * int64_t(sizeof(T));
    if (dims[i + 1] == 1) b = (i == 0 ? prev : prev * prev_extent);
    if (b <= 0 || b % 16 != 0) return false;
    strides[i] = cuuint64_t(b);
    prev = b;
    prev_extent = int64_t(dims[i + 1]);
  }
  const cuuint32_t box[5] = {cuuint32_t(kD), 1, cuuint32_t(w8), cuuint32_t(kNK / w8), 1};
  const cuuint32_t estr[5] = {1, 1, 1, 1, 1};
  const CUtensorMapDataType dt =
      std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  return fn(map, dt, 5, const_cast<T*>(base), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <typename T>
cudaError_t launch(const NattenParams& g, int box, cudaStream_t stream) {
  const NattenProblem& p = g.problem;
  if (p.batch <= 0 || p.heads <= 0 || p.size[0] <= 0 || p.size[1] <= 0 || p.size[2] <= 0) return cudaSuccess;
  for (int a = 0; a < 3; ++a)
    if (p.kernel[a] < 1 || p.size[a] < p.kernel[a]) return cudaErrorInvalidValue;
  if (!natten_sm90_takes(p)) return cudaErrorNotSupported;
  if (box < 0) box = natten_sm90_pick(p);
  if (box < 0) return cudaErrorNotSupported;
  if (box >= kNattenSm90Boxes) return cudaErrorInvalidValue;
  const int w8 = natten_sm90_row_width(p);
  const T* q = static_cast<const T*>(g.q);
  const T* k = static_cast<const T*>(g.k);
  const T* v = static_cast<const T*>(g.v);
  T* out = static_cast<T*>(g.out);
  const NattenStrides &qs = g.qs, &ks = g.ks, &vs = g.vs, &os = g.os;

  natten_sm90::NaTmaArgs args{};
  args.qs = qs;
  args.os = os;
  natten_sm90_box(box, args.box[0], args.box[1]);
  const int bext[3] = {args.box[0], args.box[1], 8};
  const int64_t boxes = natten_grid_args(args, p, bext);
  if (boxes > int64_t(INT32_MAX)) return cudaErrorInvalidValue;

  auto kernel = w8 == 16 ? natten_sm90::na_tma_kernel<T, 16> : natten_sm90::na_tma_kernel<T, 32>;
  static PerDeviceMax smem_limit[2];  // per kernel and device: common/per_device.h
  cudaError_t err = raise_dynamic_smem(smem_limit[w8 == 16 ? 0 : 1], kernel, int(natten_sm90::kSmemBytes));
  if (err != cudaSuccess) return err;
  // two CTAs per SM need 2 x 67 KB: ask for the largest shared-memory carveout
  err = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxShared));
  if (err != cudaSuccess) return err;
  const dim3 grid(unsigned(boxes), unsigned(p.heads), 1);
  for (int64_t b = 0; b < p.batch; ++b) {
    CUtensorMap tk, tv;
    if (!encode(&tk, k + b * ks.batch, ks, p, w8) || !encode(&tv, v + b * vs.batch, vs, p, w8))
      return cudaErrorNotSupported;
    args.q = q + b * qs.batch;
    args.out = out + b * os.batch;
    kernel<<<grid, natten_sm90::kThreads, natten_sm90::kSmemBytes, stream>>>(tk, tv, args);
    err = cudaGetLastError();
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t natten_forward_sm90(const NattenParams& p, int box, cudaStream_t stream) {
  return natten_dispatch(p.dtype, cudaErrorNotSupported,
                         [&](auto tag) { return launch<type_of<decltype(tag)>>(p, box, stream); });
}

}  // namespace ltx_kernels
