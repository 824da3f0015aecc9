// sm_89+ mma.sync blockwise FP8 GEMM and its FP6-weight variant: host side (support checks, tile
// and pipeline-depth choice, launch). Kernels: ltx_kernels/gemm/sm89_fp8_gemm.cuh. Compiled for
// every target >= 8.9 (CMake: csrc/cuda/*/sm89_*.cu).
//
// Configurations (dynamic shared memory per CTA, 256 threads):
//   fp8, BM=128, 3 stages: 3 * (16 + 16) KB = 96 KB      (fits Ada/sm_120's 99 KB opt-in)
//   fp8, BM=64,  3 stages: 3 * (8 + 16) KB  = 72 KB
//   fp6, BM=128, 3 stages: 3 * (16 + 12) KB + 16 KB = 100 KB  (Hopper / sm_100: 227 KB opt-in)
//   fp6, BM=128, 2 stages: 2 * (16 + 12) KB + 16 KB = 72 KB   (Ada / sm_120)
//   fp6, BM=64,  3 stages: 3 * (8 + 12) KB + 16 KB  = 76 KB
// BM=64 is used when M <= 64 or when 128-row tiles would leave most SMs idle.
#include "ltx_kernels/common/device.h"
#include "ltx_kernels/gemm/fp8_gemm.h"
#include "ltx_kernels/gemm/gemm_host.h"
#include "ltx_kernels/gemm/sm89_fp8_gemm.cuh"

#include <climits>

namespace ltx_kernels {
namespace gemm {
namespace {

using ltx_kernels::gemm_sm89::blockwise_gemm_kernel;
using ltx_kernels::gemm_sm89::Config;
using ltx_kernels::gemm_sm89::kBN;
using ltx_kernels::gemm_sm89::kThreads;
using host::aligned;
using host::cdiv;

// Tile height: 64 when M is small, or when 128-row tiles fill less than half the SMs and 64-row
// ones would fill more.
int choose_bm(int64_t M, int64_t N, int sms) {
  if (M <= 64) return 64;
  const int64_t tiles128 = cdiv(M, 128) * cdiv(N, kBN);
  return (2 * tiles128 < sms) ? 64 : 128;
}

template <int BM, int STAGES, bool FP6>
cudaError_t launch(const Fp8BlockwiseGemmArgs& args, cudaStream_t stream) {
  using Cfg = Config<BM, STAGES, FP6>;
  auto kernel = blockwise_gemm_kernel<BM, STAGES, FP6>;
  const int64_t tiles = cdiv(args.M, BM) * cdiv(args.N, kBN);
  if (tiles > INT_MAX) return cudaErrorNotSupported;
  static PerDeviceMax smem_limit;  // per device: common/per_device.h
  const cudaError_t e = raise_dynamic_smem(smem_limit, kernel, int(Cfg::SMEM));
  if (e != cudaSuccess) return e;
  kernel<<<unsigned(tiles), kThreads, Cfg::SMEM, stream>>>(args);
  return cudaGetLastError();
}

// Whether this binary holds an image of the kernel for the current device (false e.g. on an sm_100
// device when only sm_89/sm_90a were built and no PTX can be JIT-compiled).
template <int BM, int STAGES, bool FP6>
bool has_image() {
  cudaFuncAttributes attr;
  const cudaError_t e = cudaFuncGetAttributes(&attr, blockwise_gemm_kernel<BM, STAGES, FP6>);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; clear it so the caller's next check is clean
    return false;
  }
  return true;
}

bool supported(const Fp8BlockwiseGemmArgs& a, int device_cc, bool fp6) {
  if (device_cc < 89) return false;
  if (a.M < 1 || a.N < 1 || a.K < 0 || a.K % 128 != 0) return false;
  if (a.out != GemmOut::kBF16 && a.out != GemmOut::kFP16) return false;
  if (a.a == nullptr || a.b == nullptr || a.d == nullptr) return false;
  if (a.K > 0 && (a.a_scales == nullptr || a.b_scales == nullptr)) return false;
  if (a.lda % 16 != 0 || a.ldb % 16 != 0 || !aligned(a.a, 16) || !aligned(a.b, 16)) return false;
  if (a.lda < a.K || a.ldb < (fp6 ? a.K / 4 * 3 : a.K) || a.ldd < a.N) return false;
  if (!aligned(a.d, 2)) return false;
  if (cdiv(a.M, 64) * cdiv(a.N, kBN) > INT_MAX) return false;
  // The smallest configuration of the family must fit, and the image must exist.
  const int smem_optin = current_device_props().smem_optin;
  if (fp6) {
    if (smem_optin < Config<128, 2, true>::SMEM) return false;
    return has_image<128, 2, true>();
  }
  if (smem_optin < Config<64, 3, false>::SMEM) return false;
  return has_image<64, 3, false>();
}

}  // namespace

bool fp8_blockwise_gemm_sm89_supported(const Fp8BlockwiseGemmArgs& args, int device_cc) {
  return supported(args, device_cc, false);
}

cudaError_t fp8_blockwise_gemm_sm89(const Fp8BlockwiseGemmArgs& args, cudaStream_t stream) {
  const DeviceProps& dev = current_device_props();
  if (!supported(args, dev.cc, false)) return cudaErrorNotSupported;
  if (choose_bm(args.M, args.N, dev.sm_count) == 64) {
    if (dev.smem_optin < Config<64, 3, false>::SMEM) return cudaErrorNotSupported;
    return launch<64, 3, false>(args, stream);
  }
  if (dev.smem_optin < Config<128, 3, false>::SMEM) return launch<64, 3, false>(args, stream);
  return launch<128, 3, false>(args, stream);
}

bool fp6_blockwise_gemm_sm89_supported(const Fp8BlockwiseGemmArgs& args, int device_cc) {
  return supported(args, device_cc, true);
}

cudaError_t fp6_blockwise_gemm_sm89(const Fp8BlockwiseGemmArgs& args, cudaStream_t stream) {
  const DeviceProps& dev = current_device_props();
  if (!supported(args, dev.cc, true)) return cudaErrorNotSupported;
  if (choose_bm(args.M, args.N, dev.sm_count) == 64 && dev.smem_optin >= Config<64, 3, true>::SMEM)
    return launch<64, 3, true>(args, stream);
  if (dev.smem_optin >= Config<128, 3, true>::SMEM) return launch<128, 3, true>(args, stream);
  return launch<128, 2, true>(args, stream);
}

}  // namespace gemm
}  // namespace ltx_kernels
