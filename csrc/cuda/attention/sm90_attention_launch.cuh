// The sm_90a attention launcher template shared by the per-dtype translation units
// (sm90_attention_{bf16,fp16,e4m3}.cu, compiled in parallel). Internal to csrc/cuda/attention.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ltx_kernels/attention/attention_cuda.h"
#include "ltx_kernels/common/device.h"
#include "ltx_kernels/attention/sm90_attention_fwd.cuh"

namespace ltx_kernels {
namespace attention_sm90 {

inline int64_t esize(AttnDtype t) { return t == AttnDtype::kE4M3 ? 1 : (t == AttnDtype::kFP32 ? 4 : 2); }

// A TMA tensor map needs a 16-byte aligned base and positive 16-byte multiples as strides (after
// tidy(), which gives extent-1 dimensions packed strides: a zero stride left is an expanded one).
inline bool tma_ok(const void* ptr, const AttnStrides& s, int64_t es) {
  return reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && s.b > 0 && s.s > 0 && s.h > 0 && (s.b * es) % 16 == 0 &&
         (s.s * es) % 16 == 0 && (s.h * es) % 16 == 0;
}

// Strides of extent-1 dimensions never address anything; give them a valid (packed) value.
inline AttnStrides tidy(AttnStrides s, int64_t rows, int64_t heads, int64_t batch, int64_t row_elems) {
  if (rows <= 1) s.s = row_elems;
  if (heads <= 1) s.h = row_elems * (rows > 1 ? rows : 1);
  if (batch <= 1) s.b = row_elems * (rows > 1 ? rows : 1) * (heads > 1 ? heads : 1);
  return s;
}

// FP8 per-key K factors k_descale[b, key, hk] as the TMA tensor (heads, keys, batch): the heads
// contiguous, the key and batch strides multiples of 4 elements (16 bytes), 16-byte aligned.
inline AttnStrides kf_strides(const AttentionParams& a) {
  AttnStrides s = a.k_descale_stride;
  const int64_t row = (a.heads_kv + 3) / 4 * 4;  // stand-in strides for extent-1 dimensions
  if (a.heads_kv <= 1) s.h = 1;
  if (a.seqlen_kv <= 1) s.s = row;
  if (a.batch <= 1) s.b = s.s * (a.seqlen_kv > 1 ? a.seqlen_kv : 1);
  return s;
}
inline bool kf_tma_ok(const AttentionParams& a) {
  const AttnStrides s = kf_strides(a);
  return reinterpret_cast<uintptr_t>(a.k_descale) % 16 == 0 && s.h == 1 && s.s > 0 && s.b > 0 && s.s % 4 == 0 &&
         s.b % 4 == 0;
}

template <class Tr>
typename Tr::TmaKf make_tma_kf(const AttentionParams& a) {
  if constexpr (Tr::kKPerToken) {
    const AttnStrides s = kf_strides(a);
    auto m = make_tensor(make_gmem_ptr(a.k_descale),
                         make_shape(int32_t(a.heads_kv), int32_t(std::max<int64_t>(a.seqlen_kv, 1)), int32_t(a.batch)),
                         make_stride(_1{}, s.s, s.b));
    return make_tma_copy(SM90_TMA_LOAD{}, m, take<0, 2>(typename Tr::SmemLayoutKf{}),
                         Shape<Int<Tr::kKfHeads>, Int<Tr::kBlockN>>{}, _1{});
  } else {
    (void)a;
    return {};
  }
}

// The key bias [B, Skv] as the TMA tensor (keys, batch): 16-byte aligned, keys contiguous, the
// batch stride a positive multiple of 4 elements (any value where B is 1).
inline int64_t bias_stride_b(const AttentionParams& a) {
  return a.batch > 1 ? a.key_bias_stride_b : (a.seqlen_kv + 3) / 4 * 4;
}
inline bool bias_tma_ok(const AttentionParams& a) {
  const int64_t sb = bias_stride_b(a);
  return a.key_bias == nullptr || (reinterpret_cast<uintptr_t>(a.key_bias) % 16 == 0 && sb > 0 && sb % 4 == 0);
}

// The bias's tensor map; without a bias an empty one (the kernel never loads through it), so a
// call without a mask encodes no map for it.
template <class Tr>
typename Tr::TmaBias make_tma_bias(const AttentionParams& a) {
  if (a.key_bias == nullptr) return {};
  auto m = make_tensor(make_gmem_ptr(a.key_bias),
                       make_shape(int32_t(std::max<int64_t>(a.seqlen_kv, 1)), int32_t(a.batch)),
                       make_stride(_1{}, bias_stride_b(a)));
  return make_tma_copy(SM90_TMA_LOAD{}, m, take<0, 1>(typename Tr::SmemLayoutBias{}), Shape<Int<Tr::kBlockN>>{}, _1{});
}

template <class Tr>
cudaError_t launch(const AttentionParams& a, cudaStream_t stream) {
  using E = typename Tr::Element;
  using O = typename Tr::Out;
  constexpr int D = Tr::kHeadDim;
  const int32_t B = int32_t(a.batch), Sq = int32_t(a.seqlen_q), Skv = int32_t(a.seqlen_kv);
  const int32_t H = int32_t(a.heads), Hk = int32_t(a.heads_kv);
  const AttnStrides qs = tidy(a.q_stride, Sq, H, B, D), ks = tidy(a.k_stride, Skv, Hk, B, D);
  const AttnStrides os = tidy(a.out_stride, Sq, H, B, D);
  const int32_t m_blocks = (Sq + Tr::kBlockM - 1) / Tr::kBlockM;
  auto mQ = make_tensor(make_gmem_ptr(static_cast<E const*>(a.q)), make_shape(Sq, int32_t(D), H, B),
                        make_stride(qs.s, _1{}, qs.h, qs.b));
  auto mK = make_tensor(make_gmem_ptr(static_cast<E const*>(a.k)), make_shape(std::max(Skv, 1), int32_t(D), Hk, B),
                        make_stride(ks.s, _1{}, ks.h, ks.b));
  auto mO = make_tensor(make_gmem_ptr(static_cast<O*>(a.out)), make_shape(Sq, int32_t(D), H, B),
                        make_stride(os.s, _1{}, os.h, os.b));
  int32_t v_rows;
  typename Tr::TmaV tma_v;
  if constexpr (Tr::kFp8) {
    v_rows = int32_t(a.v_keys_padded);
    const AttnStrides vs = tidy(a.v_stride, D, Hk, B, a.v_keys_padded);  // rows are channels here
    auto mV = make_tensor(make_gmem_ptr(static_cast<E const*>(a.v)), make_shape(int32_t(D), v_rows, Hk, B),
                          make_stride(vs.s, _1{}, vs.h, vs.b));
    tma_v = make_tma_copy(SM90_TMA_LOAD{}, mV, take<0, 2>(typename Tr::SmemLayoutVStore{}),
                          Shape<Int<D>, Int<Tr::kBlockN>>{}, _1{});
  } else {
    v_rows = std::max(Skv, 1);
    const AttnStrides vs = tidy(a.v_stride, Skv, Hk, B, D);
    auto mV = make_tensor(make_gmem_ptr(static_cast<E const*>(a.v)), make_shape(v_rows, int32_t(D), Hk, B),
                          make_stride(vs.s, _1{}, vs.h, vs.b));
    tma_v = make_tma_copy(SM90_TMA_LOAD{}, mV, take<0, 2>(typename Tr::SmemLayoutVStore{}),
                          Shape<Int<Tr::kBlockN>, Int<D>>{}, _1{});
  }
  typename Tr::Params p{
      make_tma_copy(SM90_TMA_LOAD{}, mQ, take<0, 2>(typename Tr::SmemLayoutQ{}), Shape<_64, Int<D>>{}, _1{}),
      make_tma_copy(SM90_TMA_LOAD{}, mK, take<0, 2>(typename Tr::SmemLayoutK{}), Shape<Int<Tr::kBlockN>, Int<D>>{},
                    _1{}),
      tma_v,
      make_tma_copy(SM90_TMA_STORE{}, mO, take<0, 2>(typename Tr::SmemLayoutO{}), Shape<_64, Int<D>>{}, _1{}),
      make_tma_kf<Tr>(a),
      make_tma_bias<Tr>(a),
      B,
      Sq,
      Skv,
      v_rows,
      H,
      Hk,
      int32_t(a.heads / a.heads_kv),
      float(double(a.scale) * 1.4426950408889634),
      a.kv_lengths,
      a.key_bias,
      a.q_descale,
      a.k_descale,
      a.v_descale,
      a.q_descale_stride,
      a.k_descale_stride,
      a.v_descale_stride,
      a.k_block > 0 ? a.k_block : 1,
      a.pingpong >= 0 ? a.pingpong : (Tr::kPingPong ? 1 : 0),  // the configuration's default
      m_blocks,
  };
  static PerDeviceMax smem_limit;  // per device: common/per_device.h
  if constexpr (Tr::kPersistent) {
    auto kernel = attention_fwd_persistent_kernel<Tr>;
    const cudaError_t attr = raise_dynamic_smem(smem_limit, kernel, Tr::kSmemBytes);
    if (attr != cudaSuccess) return attr;
    const int64_t tiles = int64_t(m_blocks) * H * B;  // < 2^31: persistent_ok
    const int sms = current_device_props().sm_count;
    const unsigned grid = unsigned(std::min<int64_t>(tiles, sms > 0 ? sms : 1));
    kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p);
  } else {
    auto kernel = attention_fwd_kernel<Tr>;
    const cudaError_t attr = raise_dynamic_smem(smem_limit, kernel, Tr::kSmemBytes);
    if (attr != cudaSuccess) return attr;
    const dim3 grid{unsigned(m_blocks), unsigned(H), unsigned(B)};
    kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p);
  }
  return cudaGetLastError();
}

// Whether the persistent kernels can number the call's query tiles in int32 (counted with the
// shortest query tile, 128 rows).
inline bool persistent_ok(const AttentionParams& a) {
  return (a.seqlen_q + 127) / 128 * a.heads * a.batch <= INT32_MAX;
}

// The launch of the configuration among Cfgs that is kernel k (its kId); cudaErrorNotSupported for
// a kernel that is none of them.
template <class E, class O, class... Cfgs>
cudaError_t launch_config(const AttentionParams& a, Kernel k, cudaStream_t stream) {
  cudaError_t r = cudaErrorNotSupported;
  (void)((k == Cfgs::kId && ((r = launch<Traits<E, O, Cfgs>>(a, stream)), true)) || ...);
  return r;
}

// 16-bit inputs (bf16, fp16): the configurations of attention/heuristics.h.
template <class E>
cudaError_t forward_half(const AttentionParams& a, Kernel k, cudaStream_t stream) {
  return launch_config<E, E, Half64, Half128, Half64Persistent, Half128Persistent>(a, k, stream);
}

// Per-dtype dispatch of the configuration heuristics::choose_kernel names (one translation unit
// each, compiled in parallel).
cudaError_t forward_bf16(const AttentionParams& a, Kernel k, cudaStream_t stream);
cudaError_t forward_fp16(const AttentionParams& a, Kernel k, cudaStream_t stream);
cudaError_t forward_e4m3(const AttentionParams& a, Kernel k, cudaStream_t stream);

}  // namespace attention_sm90
}  // namespace ltx_kernels
