// sm_90a attention kernels for FP8 E4M3 inputs, bf16 or fp16 output: the configurations of
// attention/heuristics.h.
#include "sm90_attention_launch.cuh"

namespace ltx_kernels {
namespace attention_sm90 {
namespace {

template <class O>
cudaError_t dispatch(const AttentionParams& a, Kernel k, cudaStream_t stream) {
  using E = cutlass::float_e4m3_t;
  switch (k) {
    case Kernel::kFp8D64: return launch<Traits<E, O, Fp8D64>>(a, stream);
    case Kernel::kFp8D128: return launch<Traits<E, O, Fp8D128>>(a, stream);
    case Kernel::kFp8PerKeyD64: return launch<Traits<E, O, Fp8PerKeyD64>>(a, stream);
    case Kernel::kFp8PerKeyD128: return launch<Traits<E, O, Fp8PerKeyD128>>(a, stream);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace

cudaError_t forward_e4m3(const AttentionParams& a, Kernel k, cudaStream_t stream) {
  return a.out_dtype == AttnDtype::kBF16 ? dispatch<cutlass::bfloat16_t>(a, k, stream)
                                         : dispatch<cutlass::half_t>(a, k, stream);
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
