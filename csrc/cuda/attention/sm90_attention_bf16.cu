// sm_90a attention kernels for bf16 inputs (sm90_attention_launch.cuh, forward_half).
#include "sm90_attention_launch.cuh"

namespace ltx_kernels {
namespace attention_sm90 {

cudaError_t forward_bf16(const AttentionParams& a, Kernel k, cudaStream_t stream) {
  return forward_half<cutlass::bfloat16_t>(a, k, stream);
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
