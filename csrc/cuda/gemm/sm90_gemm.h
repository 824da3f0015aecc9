// The sm_90a GEMM kernels as the entry (gemm_entry.cu) sees them: one run function per operand
// recipe, dispatching on the tile configuration to the compiled instantiations. Internal to
// csrc/cuda/gemm; defined only in builds with an sm_90a target (LTX_KERNELS_HAS_SM90).
#pragma once

#include <cuda_runtime.h>

#include "ltx_kernels/gemm/gemm_params.h"

namespace ltx_kernels {
namespace gemm {
namespace sm90 {

// Runs `g` with tile configuration `cfg` (which heuristics::tile_ok accepted) on a persistent grid
// of at most num_sms CTAs. cudaErrorNotSupported: no such instantiation, or it cannot take these
// arguments (alignment, tensor-map limits); any other error is a launch failure.
cudaError_t run_fp8_1d2d(const GemmParams& g, const TileConfig& cfg, int num_sms, cudaStream_t stream);
cudaError_t run_bf16(const GemmParams& g, const TileConfig& cfg, int num_sms, cudaStream_t stream);
cudaError_t run_fp8_rowwise(const GemmParams& g, const TileConfig& cfg, int num_sms, cudaStream_t stream);

}  // namespace sm90
}  // namespace gemm
}  // namespace ltx_kernels
