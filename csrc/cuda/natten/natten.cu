// Neighborhood attention entry (the residue groups and the kernel chain of natten.h) and the
// portable kernel's launcher. See natten.cuh for the kernel and its work accounting,
// natten_heuristics.h for the choices.
#include "ltx_kernels/common/device.h"
#include "ltx_kernels/cuda/ops.h"
#include "ltx_kernels/natten/natten.cuh"
#include "ltx_kernels/natten/natten.h"
#include "ltx_kernels/natten/natten_heuristics.h"

namespace ltx_kernels {
namespace {

template <typename T, int D>
cudaError_t launch(const natten_detail::NaKernelArgs& args, int64_t boxes, const NattenProblem& p,
                   cudaStream_t stream) {
  using S = natten_detail::Smem<T, D>;
  auto kernel = natten_detail::na_fwd_kernel<T, D>;
  static PerDeviceMax smem_limit;  // per device: common/per_device.h
  const cudaError_t err = raise_dynamic_smem(smem_limit, kernel, int(S::kBytes));
  if (err != cudaSuccess) return err;
  const dim3 grid(unsigned(boxes), unsigned(p.heads), unsigned(p.batch));
  kernel<<<grid, natten_detail::kThreads, S::kBytes, stream>>>(args);
  return cudaGetLastError();
}

template <typename T>
cudaError_t portable(const NattenParams& g, int tile, cudaStream_t stream) {
  const NattenProblem& p = g.problem;
  if (p.batch <= 0 || p.heads <= 0 || p.size[0] <= 0 || p.size[1] <= 0 || p.size[2] <= 0) return cudaSuccess;
  if (p.dim != 32 && p.dim != 64 && p.dim != 128) return cudaErrorInvalidValue;
  if (p.heads > 65535 || p.batch > 65535) return cudaErrorInvalidValue;
  for (int a = 0; a < 3; ++a) {
    // union extents must fit the 10-bit key coordinates: box <= 64 plus kernel - 1
    if (p.kernel[a] < 1 || p.kernel[a] > 511 || p.size[a] < p.kernel[a]) return cudaErrorInvalidValue;
  }
  if (tile < 0) tile = natten_pick_tile(p);
  if (tile >= kNattenNumTiles) return cudaErrorInvalidValue;
  natten_detail::NaKernelArgs args{};
  args.q = g.q;
  args.k = g.k;
  args.v = g.v;
  args.out = g.out;
  args.qs = g.qs;
  args.ks = g.ks;
  args.vs = g.vs;
  args.os = g.os;
  natten_tile_shape(tile, args.tile[0], args.tile[1], args.tile[2]);
  const int64_t boxes = natten_grid_args(args, p, args.tile);
  if (boxes > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  switch (p.dim) {
    case 32: return launch<T, 32>(args, boxes, p, stream);
    case 64: return launch<T, 64>(args, boxes, p, stream);
    default: return launch<T, 128>(args, boxes, p, stream);
  }
}

// One residue group: the sm_90 kernel first where natten_try_sm90 says so, then the portable one.
cudaError_t group_forward(const NattenParams& g, cudaStream_t stream) {
  const bool forced_sm90 = g.tile >= kNattenNumTiles;
#ifdef LTX_KERNELS_HAS_SM90
  if (natten_try_sm90(g, current_device_props().cc)) {
    const cudaError_t err = natten_forward_sm90(g, forced_sm90 ? g.tile - kNattenNumTiles : -1, stream);
    if (err != cudaErrorNotSupported) return err;
  }
#endif
  if (forced_sm90) return cudaErrorNotSupported;  // forced, and it does not take the problem
  return natten_forward_portable(g, g.tile, stream);
}

}  // namespace

cudaError_t natten_forward_portable(const NattenParams& p, int tile, cudaStream_t stream) {
  return natten_dispatch(p.dtype, cudaErrorInvalidValue,
                         [&](auto tag) { return portable<type_of<decltype(tag)>>(p, tile, stream); });
}

cudaError_t natten_forward(const NattenParams& p, cudaStream_t stream) {
  for (int g0 = 0; g0 < p.dilation[0]; ++g0)
    for (int g1 = 0; g1 < p.dilation[1]; ++g1)
      for (int g2 = 0; g2 < p.dilation[2]; ++g2) {
        const cudaError_t err = group_forward(natten_residue_group(p, {g0, g1, g2}), stream);
        if (err != cudaSuccess) return err;
      }
  return cudaSuccess;
}

}  // namespace ltx_kernels
