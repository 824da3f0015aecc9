// sm_90a attention kernels for FP8 E4M3 inputs (see attention_sm90_launch.cuh).
#include "attention_sm90_launch.cuh"

namespace ltx_kernels {
namespace attention_sm90 {
namespace {

// 64 x 128 blocks per warpgroup (d 128: 64 x 64, so that O, this block's P V, S and P fit in 240
// registers), four stages; k factors per key (a multiply per score) or per 128 keys (folded).
template <class O>
cudaError_t dispatch(const AttentionParams& a, cudaStream_t stream) {
  using E = cutlass::float_e4m3_t;
  const bool per_token = a.k_block == 1;
  if (a.head_dim == 64) {
    return per_token ? launch<Traits<E, O, 64, 128, 4, true>>(a, stream)
                     : launch<Traits<E, O, 64, 128, 4, false>>(a, stream);
  }
  return per_token ? launch<Traits<E, O, 128, 64, 4, true>>(a, stream)
                   : launch<Traits<E, O, 128, 64, 4, false>>(a, stream);
}

}  // namespace

cudaError_t forward_e4m3(const AttentionParams& a, cudaStream_t stream) {
  if (a.tile != 0) return forward_e4m3_tile(a, stream);  // the alternatives (attention_tiles_e4m3_sm90.cu)
  return a.out_dtype == AttnDtype::kBF16 ? dispatch<cutlass::bfloat16_t>(a, stream)
                                         : dispatch<cutlass::half_t>(a, stream);
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
