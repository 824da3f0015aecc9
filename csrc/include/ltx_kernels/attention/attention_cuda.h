// Dense attention forward, CUDA entry points (see attention.h for the semantics). No torch.
#pragma once

#include <cuda_runtime.h>

#include "ltx_kernels/attention/attention.h"

namespace ltx_kernels {

// Why the sm_90a kernel cannot run `p` on a device of compute capability `cc` (major*10+minor),
// or nullptr when it can. Defined only in builds with sm_90a code (LTX_KERNELS_HAS_SM90).
const char* attention_sm90_why_not(const AttentionParams& p, int cc);

// The sm_90a kernel (csrc/cuda/attention/attention_sm90.cu): returns cudaErrorNotSupported when
// attention_sm90_why_not is not null.
cudaError_t attention_forward_sm90(const AttentionParams& p, cudaStream_t stream);

}  // namespace ltx_kernels
