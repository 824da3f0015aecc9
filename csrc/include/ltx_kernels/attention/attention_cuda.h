// Dense attention forward, CUDA entry points (see attention.h for the semantics). No torch.
#pragma once

#include <cuda_runtime.h>

#include "ltx_kernels/attention/attention.h"

namespace ltx_kernels {

// Why the sm_90a kernel cannot run the well-formed problem `p` (attention.h) on a device of
// compute capability `cc` (major*10+minor), or nullptr when it can: the device, head dim, dtypes,
// grid limits and the developer tile setting. Sizes and dtypes only: the operands' addresses and
// strides are the launcher's (attention_forward_sm90). Defined only in builds with sm_90a code
// (LTX_KERNELS_HAS_SM90); the backend choice (attention/heuristics.h) asks it once per call.
const char* attention_sm90_why_not(const AttentionParams& p, int cc);

// The sm_90a kernel (csrc/cuda/attention/sm90_attention.cu) for a problem attention_sm90_why_not
// accepts. Returns cudaErrorNotSupported when an operand is not what its TMA tensor map can
// address: 16-byte aligned data and positive strides that are multiples of 16 bytes (FP8 per-key
// K factors: a 16-byte aligned base, contiguous heads, key and batch strides multiples of 4
// elements); the caller copies operands that are not.
cudaError_t attention_forward_sm90(const AttentionParams& p, cudaStream_t stream);

}  // namespace ltx_kernels
