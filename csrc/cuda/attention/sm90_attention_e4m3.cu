// sm_90a attention kernels for FP8 E4M3 inputs, bf16 or fp16 output: the configurations of
// attention/heuristics.h.
#include "sm90_attention_launch.cuh"

namespace ltx_kernels {
namespace attention_sm90 {
namespace {

template <class O>
cudaError_t dispatch(const AttentionParams& a, Kernel k, cudaStream_t stream) {
  return launch_config<cutlass::float_e4m3_t, O, Fp8D64, Fp8D128, Fp8PerKeyD64, Fp8PerKeyD128>(a, k, stream);
}

}  // namespace

cudaError_t forward_e4m3(const AttentionParams& a, Kernel k, cudaStream_t stream) {
  return a.out_dtype == AttnDtype::kBF16 ? dispatch<cutlass::bfloat16_t>(a, k, stream)
                                         : dispatch<cutlass::half_t>(a, k, stream);
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
