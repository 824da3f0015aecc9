// sm_90a attention kernels for fp16 inputs: the configurations of attention/heuristics.h.
#include "attention_sm90_launch.cuh"

namespace ltx_kernels {
namespace attention_sm90 {

cudaError_t forward_fp16(const AttentionParams& a, Kernel k, cudaStream_t stream) {
  using E = cutlass::half_t;
  switch (k) {
    case Kernel::kHalf64: return launch<Traits<E, E, Half64>>(a, stream);
    case Kernel::kHalf128: return launch<Traits<E, E, Half128>>(a, stream);
    default: return cudaErrorNotSupported;
  }
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
