// sm_90a blockwise FP8 GEMM: one CUTLASS 3.x kernel definition, parameterised by tile, cluster,
// schedule, output dtype and tile scheduler; included only by csrc/cuda/gemm/sm90_fp8_gemm_cutlass_*.cu
// (each instantiates one or two of these, so the builds run in parallel and rebuild alone).
//
//   D[m, n] = sum_kb (A_kb . B_kb^T)[m, n] * sa(m, kb) * sb(n/128, kb) + bias[n]     (fp32 accum)
//
// Mainloop: CUTLASS's warp-specialized TMA + wgmma FP8 mainloop with blockwise scaling
// (MainloopSm90TmaGmmaWarpSpecializedBlockwiseFP8): every 128-wide K tile is accumulated by wgmma
// into a temporary fp32 fragment, then scaled by sa(row) * sb(col block) and added into the
// running fp32 total ("promotion"), exactly the 1D2D recipe. Scale granularity (M, N, K) =
// (1, 128, 128):
//   SFA: M-major ("MN-major"), logical (M, K/128) with strides (1, sa_stride_k): the collective
//        loads it with TMA (one 4*TILE_M-byte box per K tile) because it has >= 32 scales per
//        tile along M. TMA needs the base 16-byte aligned and sa_stride_k % 4 == 0 (16 bytes);
//        M itself may be anything (TMA clips, rows >= M are never stored).
//        Or (kRowMajorSA) K-major, strides (sa_stride_m, 1): read by predicated 4-byte cp.async
//        from the producer warp (one scale per row per K tile), no alignment constraint.
//   SFB: K-major (row-major [ceil(N/128), K/128], stride (sb_stride_n, 1)): one scale per tile
//        and K tile, loaded with predicated 4-byte cp.async (no alignment constraint).
// Epilogue: TMA warp-specialized, fusion LinCombPerColBias (alpha = 1, beta = 0, no C):
//   D = bf16/fp16(acc + bias[n]); a null bias pointer reads as zeros (Sm90RowBroadcast's
//   null_default), so one kernel serves both cases. Bias is read with predicated scalar loads.
// Strides of A/B/D are 64-bit; problem extents are int (M, N, K < 2^31, checked by the caller).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <cuda_runtime.h>

#include "ltx_kernels/gemm/fp8_gemm.h"
#include "ltx_kernels/gemm/sm90_fp8_gemm_cutlass_configs.cuh"

#include "cutlass/cutlass.h"
#include "cutlass/numeric_types.h"
#include "cute/tensor.hpp"
#include "cutlass/detail/blockwise_scale_layout.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"

namespace ltx_kernels {
namespace gemm {
namespace sm90_cutlass {

#if defined(CUTLASS_ARCH_MMA_SM90_SUPPORTED)
#define LTX_SM90_GEMM_AVAILABLE 1

template <class TileShape_,       // cute::Shape<_M, _N, _128>: CTA tile
          class ClusterShape_,    // cute::Shape<_x, _1, _1>
          class MainloopSchedule, // KernelTmaWarpSpecialized{Cooperative,Pingpong}FP8BlockScaledAccum
          class EpilogueSchedule, // TmaWarpSpecialized{Cooperative,}
          class ElementD_,        // cutlass::bfloat16_t / cutlass::half_t
          class TileScheduler_,   // void (persistent) / cutlass::gemm::StreamKScheduler
          bool kRowMajorSA = false>  // sa K-major (row-major [M, K/128]) instead of M-major
struct BlockwiseGemm {
  using TileShape = TileShape_;
  using ClusterShape = ClusterShape_;
  using ElementA = cutlass::float_e4m3_t;  // A: [M, K] row-major (K-major)
  using ElementB = cutlass::float_e4m3_t;  // B: [N, K] row-major = ColumnMajor K x N (K-major)
  using ElementD = ElementD_;              // D: [M, N] row-major
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlignA = 16;  // elements = 16 bytes (TMA)
  static constexpr int kAlignB = 16;
  static constexpr int kAlignD = 8;   // 16 bytes of bf16/fp16

  static_assert(cute::size<2>(TileShape{}) == 128, "K tile must equal the 128-wide scale block");
  static_assert(cute::size<1>(TileShape{}) % 128 == 0, "N tile must be a multiple of the 128 scale block");

  // (granularity M, N, K) = (1, 128, 128); SFA M-major (TMA) or K-major (cp.async), SFB K-major
  // (= row-major sb, cp.async).
  using ScaleConfig = cutlass::detail::Sm90BlockwiseScaleConfig<
      1, 128, 128, kRowMajorSA ? cute::GMMA::Major::K : cute::GMMA::Major::MN, cute::GMMA::Major::K>;
  using LayoutSFA = decltype(ScaleConfig::deduce_layoutSFA());  // ((1,M),(128,K/128),L)
  using LayoutSFB = decltype(ScaleConfig::deduce_layoutSFB());  // ((128,N/128),(128,K/128),L)

  using FusionOp = cutlass::epilogue::fusion::LinCombPerColBias<ElementD, float, float, ElementD, float>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, LayoutD, kAlignD,      // no C
      ElementD, LayoutD, kAlignD,  // D
      EpilogueSchedule, FusionOp>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
      ElementA, cute::tuple<LayoutA, LayoutSFA>, kAlignA,
      ElementB, cute::tuple<LayoutB, LayoutSFB>, kAlignB,
      float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<
          static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue, TileScheduler_>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  using Arguments = typename Gemm::Arguments;
  using StrideA = typename Kernel::StrideA;
  using StrideB = typename Kernel::StrideB;
  using StrideC = typename Kernel::StrideC;
  using StrideD = typename Kernel::StrideD;

  // `pad_m_for_check`: CUTLASS's can_implement asks the SFA tensor's M extent to be a multiple of
  // 4 (it checks shape divisibility for the TMA path); the TMA hardware only needs the strides and
  // base aligned, which the dispatcher checks. We therefore validate with M rounded up to 4 and run
  // with the true M (then the SFA box reads are clipped at M, never past the caller's buffer).
  static Arguments make_arguments(const Fp8BlockwiseGemmArgs& p, int num_sms, const Sm90RunOptions& o,
                                  bool pad_m_for_check) {
    const int M = static_cast<int>(p.M), N = static_cast<int>(p.N), K = static_cast<int>(p.K);
    const int kb = K / 128;
    const int nb = (N + 127) / 128;
    const int m_sfa = pad_m_for_check ? ((M + 3) / 4) * 4 : M;
    // M-major sa (m, kb) at m + kb * sk; for a single K block any multiple of 4 >= M will do.
    const int sk = kb == 1 ? ((M + 3) / 4) * 4 : static_cast<int>(p.sa_stride_k);
    // Row-major sa (m, kb) at m * sm + kb; for a single row the stride is never used.
    const int sm = M == 1 ? kb : static_cast<int>(p.sa_stride_m);
    // sb (nb, kb) at nb * sn + kb; for a single N block the stride is never used.
    const int sn = nb == 1 ? kb : static_cast<int>(p.sb_stride_n);

    using namespace cute;
    LayoutSFA layout_sfa = [&] {
      if constexpr (kRowMajorSA) {
        return make_layout(make_shape(make_shape(Int<1>{}, m_sfa), make_shape(Int<128>{}, kb), 1),
                           make_stride(make_stride(Int<0>{}, sm), make_stride(Int<0>{}, Int<1>{}), sm * M));
      } else {
        return make_layout(make_shape(make_shape(Int<1>{}, m_sfa), make_shape(Int<128>{}, kb), 1),
                           make_stride(make_stride(Int<0>{}, Int<1>{}), make_stride(Int<0>{}, sk), sk * kb));
      }
    }();
    LayoutSFB layout_sfb = make_layout(
        make_shape(make_shape(Int<128>{}, nb), make_shape(Int<128>{}, kb), 1),
        make_stride(make_stride(Int<0>{}, sn), make_stride(Int<0>{}, Int<1>{}), sn * nb));

    StrideA stride_a = make_stride(p.lda, Int<1>{}, p.lda * p.M);  // (M, K, L)
    StrideB stride_b = make_stride(p.ldb, Int<1>{}, p.ldb * p.N);  // (N, K, L)
    StrideD stride_d = make_stride(p.ldd, Int<1>{}, p.ldd * p.M);  // (M, N, L)
    StrideC stride_c = stride_d;

    cutlass::KernelHardwareInfo hw;
    int dev = 0;
    cudaGetDevice(&dev);
    hw.device_id = dev;
    hw.sm_count = num_sms;

    Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {M, N, K, 1};
    args.mainloop.ptr_A = reinterpret_cast<const ElementA*>(p.a);
    args.mainloop.dA = stride_a;
    args.mainloop.ptr_B = reinterpret_cast<const ElementB*>(p.b);
    args.mainloop.dB = stride_b;
    args.mainloop.ptr_SFA = p.a_scales;
    args.mainloop.layout_SFA = layout_sfa;
    args.mainloop.ptr_SFB = p.b_scales;
    args.mainloop.layout_SFB = layout_sfb;
    auto& fusion = args.epilogue.thread;
    fusion.alpha = 1.0f;
    fusion.beta = 0.0f;
    fusion.bias_ptr = p.bias;  // null -> zeros
    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = stride_c;
    args.epilogue.ptr_D = reinterpret_cast<ElementD*>(p.d);
    args.epilogue.dD = stride_d;
    args.hw_info = hw;
    using Raster = decltype(args.scheduler.raster_order);
    args.scheduler.raster_order = o.raster == 1 ? Raster::AlongM : o.raster == 2 ? Raster::AlongN : Raster::Heuristic;
    args.scheduler.max_swizzle_size = o.swizzle;
    return args;
  }

  static size_t workspace(const Fp8BlockwiseGemmArgs& p, int num_sms, const Sm90RunOptions& o) {
    return Gemm::get_workspace_size(make_arguments(p, num_sms, o, false));
  }

  static cudaError_t run(const Fp8BlockwiseGemmArgs& p, void* workspace, size_t workspace_bytes, int num_sms,
                         const Sm90RunOptions& o, cudaStream_t stream) {
    if (Gemm::can_implement(make_arguments(p, num_sms, o, true)) != cutlass::Status::kSuccess) {
      return cudaErrorNotSupported;
    }
    Arguments args = make_arguments(p, num_sms, o, false);
    const size_t need = Gemm::get_workspace_size(args);
    if (need > workspace_bytes || (need > 0 && workspace == nullptr)) return cudaErrorInvalidValue;
    Gemm gemm;
    if (gemm.initialize(args, workspace, stream) != cutlass::Status::kSuccess) {
      cudaError_t e = cudaGetLastError();
      return e != cudaSuccess ? e : cudaErrorLaunchFailure;
    }
    if (gemm.run(stream) != cutlass::Status::kSuccess) {
      cudaError_t e = cudaGetLastError();
      return e != cudaSuccess ? e : cudaErrorLaunchFailure;
    }
    return cudaGetLastError();
  }
};

// Common schedule names.
using CoopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperativeFP8BlockScaledAccum;
using CoopEpilogue = cutlass::epilogue::TmaWarpSpecializedCooperative;
using PingpongSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpongFP8BlockScaledAccum;
using PingpongEpilogue = cutlass::epilogue::TmaWarpSpecialized;

#endif  // CUTLASS_ARCH_MMA_SM90_SUPPORTED

}  // namespace sm90_cutlass
}  // namespace gemm
}  // namespace ltx_kernels

// Defines NAME_workspace / NAME_run for one configuration: CTA tile TILE_M x 128 x 128, 1x1x1
// cluster, SCHEDULE Coop (cooperative: two consumer warp groups share a tile) or Pingpong (each
// owns a tile), tile scheduler SCHEDULER (void: persistent; cutlass::gemm::StreamKScheduler),
// sa row-major when ROW_MAJOR_SA (else M-major); bf16 output always, fp16 when WITH_FP16
// (otherwise fp16 answers cudaErrorNotSupported and the dispatcher picks another kernel).
#if defined(LTX_SM90_GEMM_AVAILABLE)
#define LTX_SM90_GEMM_DEFINE(NAME, TILE_M, SCHEDULE, SCHEDULER, ROW_MAJOR_SA, WITH_FP16)                  \
  namespace ltx_kernels { namespace gemm { namespace sm90_cutlass {                                        \
  template <class ElementD>                                                                               \
  using NAME##_gemm = BlockwiseGemm<cute::Shape<cute::Int<TILE_M>, cute::_128, cute::_128>,               \
                                    cute::Shape<cute::_1, cute::_1, cute::_1>, SCHEDULE##Schedule,        \
                                    SCHEDULE##Epilogue, ElementD, SCHEDULER, ROW_MAJOR_SA>;               \
  using NAME##_fp16 = std::conditional_t<WITH_FP16, NAME##_gemm<cutlass::half_t>, void>;                  \
  size_t NAME##_workspace(const Fp8BlockwiseGemmArgs& args, int num_sms, const Sm90RunOptions& o) {       \
    if (args.out == GemmOut::kBF16) return NAME##_gemm<cutlass::bfloat16_t>::workspace(args, num_sms, o); \
    return ltx_sm90_fp16_workspace<NAME##_fp16>(args, num_sms, o);                                        \
  }                                                                                                       \
  cudaError_t NAME##_run(const Fp8BlockwiseGemmArgs& args, void* ws, size_t ws_bytes, int num_sms,        \
                         const Sm90RunOptions& o, cudaStream_t stream) {                                  \
    if (args.out == GemmOut::kBF16)                                                                       \
      return NAME##_gemm<cutlass::bfloat16_t>::run(args, ws, ws_bytes, num_sms, o, stream);               \
    return ltx_sm90_fp16_run<NAME##_fp16>(args, ws, ws_bytes, num_sms, o, stream);                        \
  }                                                                                                       \
  }}}
#else
#define LTX_SM90_GEMM_DEFINE(NAME, TILE_M, SCHEDULE, SCHEDULER, ROW_MAJOR_SA, WITH_FP16)                  \
  namespace ltx_kernels { namespace gemm { namespace sm90_cutlass {                                        \
  size_t NAME##_workspace(const Fp8BlockwiseGemmArgs&, int, const Sm90RunOptions&) { return 0; }          \
  cudaError_t NAME##_run(const Fp8BlockwiseGemmArgs&, void*, size_t, int, const Sm90RunOptions&,          \
                         cudaStream_t) { return cudaErrorNotSupported; }                                  \
  }}}
#endif

#if defined(LTX_SM90_GEMM_AVAILABLE)
namespace ltx_kernels {
namespace gemm {
namespace sm90_cutlass {
// T = void: no fp16 kernel in this configuration.
template <class T>
inline size_t ltx_sm90_fp16_workspace(const Fp8BlockwiseGemmArgs& a, int n, const Sm90RunOptions& o) {
  if constexpr (std::is_void_v<T>) { (void)a; (void)n; (void)o; return 0; }
  else return T::workspace(a, n, o);
}
template <class T>
inline cudaError_t ltx_sm90_fp16_run(const Fp8BlockwiseGemmArgs& a, void* ws, size_t b, int n,
                                     const Sm90RunOptions& o, cudaStream_t s) {
  if constexpr (std::is_void_v<T>) { (void)a; (void)ws; (void)b; (void)n; (void)o; (void)s; return cudaErrorNotSupported; }
  else return T::run(a, ws, b, n, o, s);
}
}  // namespace sm90_cutlass
}  // namespace gemm
}  // namespace ltx_kernels
#endif
