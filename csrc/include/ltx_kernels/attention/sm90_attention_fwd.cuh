// Dense attention forward for sm_90a (bf16 / fp16, and FP8 E4M3 with dequantization factors).
// Included only by csrc/cuda/attention/sm90_attention.cu. Semantics: attention.h.
//
// CTA = 1 + kMmaWG warpgroups, one (64 kMmaWG-query tile, head, batch) per CTA, grid
// (ceil(Sq / (64 kMmaWG)), H, B):
//   WG0  producer: one thread issues TMA loads (Q once, a (64, D) tile per consumer; then K_j, V_j into a kStages-deep ring of
//        shared-memory stages; full_k / full_v mbarriers complete on the bytes, empty[s] is
//        released by the consumers once P_j V_j has read stage s). With per-key FP8 K factors it
//        also loads block j's factors by TMA with K_j, counted on full_k[s]: a (4 heads, kBlockN
//        keys) box, since a TMA box row is at least 16 bytes and the factors' contiguous
//        dimension is the head; zero past Skv. It keeps 24 registers.
//   WG1 .. WG kMmaWG  consumers (2: 240 registers each; 3: 160): rows 64 w .. 64 w + 63 of the
//        query tile.
//        S = Q K^T by wgmma with both operands in shared memory; online softmax in fp32 in the
//        log2 domain (the softmax scale is folded into the exponent's FFMA); P converted in
//        registers into the A operand of the P V wgmma (bf16/fp16 directly: the accumulator
//        fragment of S is the A fragment of P; FP8: a fixed in-thread permutation, matched by
//        the key order of the FP8 V^T layout, see attention.h).
//   Schedule per key block j (FA3's intra-warpgroup overlap):
//        issue S_j = Q K_j^T; issue O += P_{j-1} V_{j-1}; wait S_j; softmax(S_j) while the P V
//        wgmma runs; wait P V; release stage j-1; rescale O; P_j <- S_j.
//   FP8 accumulates each P_j V_j into a fresh fp32 fragment and adds it to O (the FP8 tensor
//        core's own accumulator keeps fewer bits than fp32: adding a whole block at once keeps the
//        long sums in fp32), or with Traits::kPvInO (the defaults with 128-key K factors) into O
//        directly, as 16-bit does.
//        P is scaled by 448 (2^log2(448) folded into the exponent) so it uses E4M3's range; the
//        row sums are of the same scaled values, so the scale cancels.
//   Row sums l: FADDs of the fp32 P in the softmax.
//   Epilogue: O / l (0 where l = 0: a row with no valid key), FP8 per-channel V factors, rounded
//        to the output dtype into shared memory (per warpgroup a 64-row tile; 16-bit inputs write
//        it over the warpgroup's own Q tile) and stored by TMA (rows past Sq are clipped by the
//        tensor map).
// Persistent configurations (Traits::kPersistent, 16-bit inputs, few keys): one CTA per SM (grid
//        min(tiles, SMs)) takes query tiles c, c + gridDim.x, ... (query tile fastest, then head,
//        then batch). Q has two buffers: tile i loads into buffer i % 2 once tile i - 2's O store
//        has read it (q_empty), so the next tile's Q arrives while this one computes; the K / V
//        ring runs on across tiles (a tile's key blocks follow the previous tile's), so the
//        producer fetches the next tile's keys as soon as stages free up; the O store of a tile
//        runs under the next tile's GEMMs. The ping-pong turns carry over from tile to tile.
// Masking: keys past kv_len[b] get -inf (only the last block needs it); an optional additive
// per-key bias is added in the log2 domain. Rows whose running max is -inf exponentiate against 0
// so that they stay 0 instead of NaN.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <type_traits>

#include <cute/tensor.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/numeric_types.h>

#include "ltx_kernels/attention/attention.h"
#include "ltx_kernels/attention/heuristics.h"

namespace ltx_kernels {
namespace attention_sm90 {

using namespace cute;

// K-major shared-memory atom with the widest swizzle that a row of `kRowElems` elements allows.
template <class T, int kRowElems>
CUTE_HOST_DEVICE constexpr auto smem_atom_k() {
  constexpr int bytes = kRowElems * int(sizeof(T));
  if constexpr (bytes % 128 == 0) {
    return GMMA::Layout_K_SW128_Atom<T>{};
  } else if constexpr (bytes % 64 == 0) {
    return GMMA::Layout_K_SW64_Atom<T>{};
  } else {
    return GMMA::Layout_K_SW32_Atom<T>{};
  }
}

using GShape = Shape<int32_t, int32_t, int32_t, int32_t>;   // (rows, cols, head, batch)
using GStride = Stride<int64_t, _1, int64_t, int64_t>;      // cols contiguous

// Element and Out types with a configuration of attention/heuristics.h (Config and its named
// configurations), from which everything else follows.
template <class Element_, class Out_, class Cfg>
struct Traits {
  using Element = Element_;  // cutlass::bfloat16_t, cutlass::half_t or cutlass::float_e4m3_t
  using Out = Out_;          // cutlass::bfloat16_t or cutlass::half_t
  static constexpr bool kFp8 = sizeof(Element) == 1;
  static constexpr bool kKPerToken = Cfg::kKPerToken;  // FP8: one K factor per key (else per block)
  // FP8: P V accumulated by the tensor core into O itself, as for 16-bit inputs (else into a
  // fresh fragment per key block, added to O in fp32): D / 2 fewer registers per thread and one
  // FADD less per O element and block, at the cost of the FP8 accumulator's shorter sums.
  static constexpr bool kPvInO = kFp8 && Cfg::kPvInO;
  // 16-bit: a row keeps its running maximum while a block raises it by at most kRescaleSlack (in
  // log2 units), so that its P values stay <= 2^kRescaleSlack (exact in the final O / l, since
  // O and l use the same maximum), and O is rescaled only when some row of the warp moved its
  // maximum (a warp vote) instead of after every key block. FP8 P has no such headroom (it is
  // scaled to E4M3's largest value), so the FP8 kernels rescale after every key block.
  static constexpr bool kSkipRescale = !kFp8 && Cfg::kSkipRescale;
  static constexpr float kRescaleSlack = 8.f;
  // Two code-shape changes with the same arithmetic:
  // - the main loop runs one copy of a key block's softmax, O update and P conversion per kind of
  //   block (a full block without bias, the last partial one, one with a key bias or per-key K
  //   factors) instead of one copy that branches inside the softmax. Where the branches merge, S
  //   has two definitions, and ptxas copies it out of the wgmma accumulator registers to merge
  //   them (FP8, head dim 64, P V in O: 420 bytes of spills; one copy per kind: none);
  // - the consumers read their warpgroup index through a warp shuffle, which tells the compiler
  //   that it is warp-uniform, so descriptors and addresses that depend on it stay in uniform
  //   registers.
  static constexpr bool kLeanLoop = Cfg::kLeanLoop;
  static constexpr bool kPingPong = Cfg::kPingPong;  // the consumers' GEMM turns by default
  static constexpr bool kPersistent = Cfg::kPersistent;  // one CTA per SM walks query tiles
  static constexpr int kQBufs = kPersistent ? 2 : 1;     // Q (and O over it) buffers
  static constexpr int kHeadDim = Cfg::kHeadDim;
  static constexpr int kMmaWG = Cfg::kMmaWG;  // consumer warpgroups, 64 query rows each
  static constexpr int kBlockM = 64 * kMmaWG;
  static constexpr int kBlockN = Cfg::kBlockN;
  static constexpr int kStages = Cfg::kStages;
  static constexpr int kThreads = 128 * (kMmaWG + 1);
  // setmaxnreg: the producer gives its registers to the consumers (24 x 128 + kMmaWG x 128 x
  // kConsumerRegs <= 65536)
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = kMmaWG == 2 ? 240 : 160;
  static_assert(kMmaWG == 2 || kMmaWG == 3, "two or three consumer warpgroups");
  static_assert(kHeadDim % 64 == 0 && kBlockN % 16 == 0 && kBlockN <= 256, "tile shape");
  static_assert(!kFp8 || kBlockN % 32 == 0, "FP8 key blocks are whole 32-key groups");
  static_assert(!kFp8 || kKPerToken || 128 % kBlockN == 0, "a key block within one 128-key K factor block");

  // Each consumer warpgroup runs its own 64-row GEMMs on its own (64, D) slice of Q.
  using AtomLayout = Layout<Shape<_1, _1, _1>>;
  using TiledMmaQK = decltype(make_tiled_mma(
      GMMA::ss_op_selector<Element, Element, float, Shape<_64, Int<kBlockN>, Int<kHeadDim>>>(), AtomLayout{}));
  static constexpr GMMA::Major kMajorV = kFp8 ? GMMA::Major::K : GMMA::Major::MN;
  using TiledMmaPV = decltype(make_tiled_mma(
      GMMA::rs_op_selector<Element, Element, float, Shape<_64, Int<kHeadDim>, Int<kBlockN>>, GMMA::Major::K,
                           kMajorV>(),
      AtomLayout{}));

  // Q as one (64, D) tile per consumer warpgroup, each contiguous, in the same layout as the O
  // staging tiles: 16-bit inputs stage a warpgroup's O over its own Q (read by that warpgroup's
  // GEMMs only, all complete by then), which leaves the shared memory to K / V stages.
  using SmemLayoutQ = decltype(tile_to_shape(smem_atom_k<Element, kHeadDim>(), Shape<_64, Int<kHeadDim>, Int<kMmaWG>>{}));
  using SmemLayoutK =
      decltype(tile_to_shape(smem_atom_k<Element, kHeadDim>(), Shape<Int<kBlockN>, Int<kHeadDim>, Int<kStages>>{}));
  // V as the B operand of P V, (head dim, key, stage). 16-bit: stored like K ([key][d] rows) and
  // read through a transposed (MN-major) view. FP8: stored transposed ([d][key] rows, K-major).
  using SmemLayoutVStore = std::conditional_t<
      kFp8,
      decltype(tile_to_shape(smem_atom_k<Element, kBlockN>(), Shape<Int<kHeadDim>, Int<kBlockN>, Int<kStages>>{})),
      SmemLayoutK>;
  using SmemLayoutVt = std::conditional_t<
      kFp8, SmemLayoutVStore,
      decltype(composition(SmemLayoutK{}, make_ordered_layout(Shape<Int<kHeadDim>, Int<kBlockN>, Int<kStages>>{},
                                                              Step<_2, _1, _3>{})))>;
  // Output staging: one (64, D) tile per consumer warpgroup; over Q when the element sizes match.
  using SmemLayoutO = decltype(tile_to_shape(smem_atom_k<Out, kHeadDim>(), Shape<_64, Int<kHeadDim>, Int<kMmaWG>>{}));
  static constexpr bool kOverQ = sizeof(Out) == sizeof(Element);
  static_assert(!kPersistent || kOverQ, "the persistent kernel stages O over Q (16-bit inputs)");

  using TmaQ = decltype(make_tma_copy(SM90_TMA_LOAD{},
                                      make_tensor(make_gmem_ptr(static_cast<Element const*>(nullptr)), GShape{}, GStride{}),
                                      take<0, 2>(SmemLayoutQ{}), Shape<_64, Int<kHeadDim>>{}, _1{}));
  using TmaK = decltype(make_tma_copy(SM90_TMA_LOAD{},
                                      make_tensor(make_gmem_ptr(static_cast<Element const*>(nullptr)), GShape{}, GStride{}),
                                      take<0, 2>(SmemLayoutK{}), Shape<Int<kBlockN>, Int<kHeadDim>>{}, _1{}));
  using VTile = std::conditional_t<kFp8, Shape<Int<kHeadDim>, Int<kBlockN>>, Shape<Int<kBlockN>, Int<kHeadDim>>>;
  using TmaV = decltype(make_tma_copy(SM90_TMA_LOAD{},
                                      make_tensor(make_gmem_ptr(static_cast<Element const*>(nullptr)), GShape{}, GStride{}),
                                      take<0, 2>(SmemLayoutVStore{}), VTile{}, _1{}));
  using TmaO = decltype(make_tma_copy(SM90_TMA_STORE{},
                                      make_tensor(make_gmem_ptr(static_cast<Out*>(nullptr)), GShape{}, GStride{}),
                                      take<0, 2>(SmemLayoutO{}), Shape<_64, Int<kHeadDim>>{}, _1{}));
  // FP8 per-key K factors k_descale[b, key, hk], (heads, keys, batch) with the heads contiguous:
  // (kKfHeads, kBlockN, stage) in shared memory, heads fastest, as the TMA box lands.
  static constexpr int kKfHeads = 4;  // 16 bytes: the shortest TMA box row
  using SmemLayoutKf = Layout<Shape<Int<kKfHeads>, Int<kBlockN>, Int<kStages>>>;
  using KfShape = Shape<int32_t, int32_t, int32_t>;
  using KfStride = Stride<_1, int64_t, int64_t>;
  struct NoTmaKf {};
  using TmaKf = std::conditional_t<
      kKPerToken,
      decltype(make_tma_copy(SM90_TMA_LOAD{},
                             make_tensor(make_gmem_ptr(static_cast<float const*>(nullptr)), KfShape{}, KfStride{}),
                             take<0, 2>(SmemLayoutKf{}), Shape<Int<kKfHeads>, Int<kBlockN>>{}, _1{})),
      NoTmaKf>;

  // The key bias (fp32 [B, Skv], keys contiguous, batch stride a multiple of 4 elements), when the
  // call has one: block j of its batch row lands in the stage of K_j, on K_j's barrier, so the
  // softmax reads it from shared memory; read from global memory by the consumers instead, its
  // latency sits between the S GEMM and the softmax of every block (with one key block per query
  // tile, as for a prompt's 128 keys, once per tile).
  using SmemLayoutBias = Layout<Shape<Int<kBlockN>, Int<kStages>>>;
  using BiasShape = Shape<int32_t, int32_t>;    // (keys, batch)
  using BiasStride = Stride<_1, int64_t>;
  using TmaBias = decltype(make_tma_copy(SM90_TMA_LOAD{},
                                         make_tensor(make_gmem_ptr(static_cast<float const*>(nullptr)), BiasShape{},
                                                     BiasStride{}),
                                         take<0, 1>(SmemLayoutBias{}), Shape<Int<kBlockN>>{}, _1{}));

  static constexpr uint32_t kBytesBias = kBlockN * sizeof(float);
  static constexpr uint32_t kBytesQ = kBlockM * kHeadDim * sizeof(Element);
  static constexpr uint32_t kBytesK = kBlockN * kHeadDim * sizeof(Element);
  static constexpr uint32_t kBytesV = kBlockN * kHeadDim * sizeof(Element);
  static constexpr uint32_t kBytesKf = kKPerToken ? kKfHeads * kBlockN * sizeof(float) : 0;

  struct SharedStorage {
    alignas(1024) Element q[kQBufs][cosize_v<SmemLayoutQ>];
    alignas(1024) Element k[cosize_v<SmemLayoutK>];
    alignas(1024) Element v[cosize_v<SmemLayoutVStore>];
    struct OwnO {
      alignas(1024) Out o[cosize_v<SmemLayoutO>];
    };
    struct NoO {};
    std::conditional_t<kOverQ, NoO, OwnO> o_store;  // FP8 inputs: O has its own tiles
    alignas(128) float kf[kKPerToken ? cosize_v<SmemLayoutKf> : 4];  // FP8 per-key K factors
    alignas(128) float bias[cosize_v<SmemLayoutBias>];                   // key bias blocks
    alignas(8) uint64_t bar_q[kQBufs];
    uint64_t full_k[kStages];
    uint64_t full_v[kStages];
    uint64_t empty[kStages];
    uint64_t q_empty[kQBufs];  // persistent: the Q buffer's O store has read it
  };
  static constexpr int kSmemBytes = int(sizeof(SharedStorage)) + 1024;  // + alignment slack
  static_assert(kSmemBytes <= 227 * 1024, "more shared memory than an sm_90 CTA can have");

  struct Params {
    TmaQ tma_q;
    TmaK tma_k;
    TmaV tma_v;
    TmaO tma_o;
    TmaKf tma_kf;
    TmaBias tma_bias;  // over key_bias (empty without one: never used)
    int32_t batch, seqlen_q, seqlen_kv, seqlen_kv_rows, heads, heads_kv, group;
    float scale_log2;  // softmax scale * log2(e)
    const int32_t* kv_lengths;
    const float* key_bias;  // null: no key bias
    const float* q_descale;
    const float* k_descale;
    const float* v_descale;
    AttnStrides qd, kd, vd;
    int64_t k_block;
    int32_t pingpong;  // 1: the two consumer warpgroups take turns issuing their GEMMs
    int32_t m_blocks;  // query tiles per (head, batch): ceil(seqlen_q / kBlockM)
  };
};

// One wgmma group: C (+)= A B over every k block of the operands, committed as one batch.
// kARegs: A is a register fragment (P), fenced like the accumulator.
template <bool kZeroInit, bool kARegs = false, class TiledMma, class TA, class TB, class TC>
__device__ __forceinline__ void wg_gemm(TiledMma& mma, TA const& a, TB const& b, TC& c) {
  if constexpr (kARegs) warpgroup_fence_operand(const_cast<TA&>(a));
  warpgroup_fence_operand(c);
  warpgroup_arrive();
  if constexpr (kZeroInit) mma.accumulate_ = GMMA::ScaleOut::Zero;
  CUTE_UNROLL
  for (int kb = 0; kb < size<2>(a); ++kb) {
    cute::gemm(mma, a(_, _, kb), b(_, _, kb), c);
    mma.accumulate_ = GMMA::ScaleOut::One;
  }
  warpgroup_commit_batch();
  warpgroup_fence_operand(c);
  if constexpr (kARegs) warpgroup_fence_operand(const_cast<TA&>(a));
}

__device__ __forceinline__ float fast_exp2(float x) {  // 2^x; -inf -> +0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Online-softmax state of a thread's two rows (r0 = lane/4 + 16 * warp, r0 + 8).
struct RowState {
  float max[2];   // running max of the log2-domain scores (-inf: none yet)
  float sum[2];   // this thread's share of the running sum of P (exact fp32 values)
  float coef[2];  // score -> log2 domain: scale * log2(e) * q factor (* k block factor)
};

// Softmax of one S block in place: S <- P (as fp32, already offset for the FP8 P scale), row
// maxima and sums updated, the factors (alpha) by which O must be rescaled; returns whether any
// of them can differ from 1 in this warp (always true unless Traits::kSkipRescale).
// Flat index i of the accumulator fragment: column pair element e = i % 2, row half h = (i/2) % 2,
// column group g = i / 4; column = 8 g + 2 (lane % 4) + e.
// kKind: -1 decides at run time (prescaled when bias or kf is given; masks past kv_valid); 0 a
// full block without bias or factors, 1 a block without them masked past kv_valid, 2 prescaled.
template <class Tr, int kKind = -1, class TensorS>
__device__ __forceinline__ bool softmax_block(TensorS& s, RowState& st, float (&alpha)[2], int kv_valid,
                                              const float* bias, const float* kf, float p_offset) {
  constexpr int N = size(TensorS{});
  const int lane = threadIdx.x % 32;
  const int c0 = 2 * (lane % 4);
  const bool prescaled = kKind < 0 ? (bias != nullptr || kf != nullptr) : kKind == 2;
  if (prescaled) {
    // Scores to the log2 domain here (per-key factor, bias); keys past kv_valid are never read.
    // kf: this thread's per-key K factors, loaded into registers while S was computed
    // (kf[2 * (i / 4) + i % 2] is the factor of the column of s(i)); bias: the key block's bias
    // in shared memory (the producer loads it with K), read per score: a column's value kept for
    // both of its rows is hoisted with the others and spills at 160 registers.
    CUTE_UNROLL
    for (int i = 0; i < N; ++i) {
      const int col = 8 * (i / 4) + c0 + (i % 2);
      float t = -INFINITY;
      if (col < kv_valid) {
        t = s(i);
        if (kf != nullptr) t *= kf[2 * (i / 4) + (i % 2)];
        t *= st.coef[(i / 2) % 2];
        if (bias != nullptr) t = fmaf(bias[col], 1.4426950408889634f, t);
      }
      s(i) = t;
    }
  } else if (kKind != 0 && kv_valid < Tr::kBlockN) {
    CUTE_UNROLL
    for (int i = 0; i < N; ++i) {
      const int col = 8 * (i / 4) + c0 + (i % 2);
      if (col >= kv_valid) s(i) = -INFINITY;
    }
  }
  float mx[2] = {-INFINITY, -INFINITY};
  CUTE_UNROLL
  for (int i = 0; i < N; ++i) mx[(i / 2) % 2] = fmaxf(mx[(i / 2) % 2], s(i));
  float use[2];
  bool kept = true;  // every row of this thread kept its maximum (Traits::kSkipRescale)
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    float m = quad_max(mx[r]);
    if (!prescaled) m *= st.coef[r];  // coef > 0
    float m_new = fmaxf(st.max[r], m);
    if constexpr (Tr::kSkipRescale) {
      // (a -inf maximum is never kept: the first valid block sets it)
      if (st.max[r] != -INFINITY && m_new - st.max[r] <= Tr::kRescaleSlack) {
        m_new = st.max[r];
      } else {
        kept = false;
      }
    }
    use[r] = (m_new == -INFINITY ? 0.f : m_new) - p_offset;
    alpha[r] = fast_exp2((st.max[r] == -INFINITY ? -INFINITY : st.max[r] - p_offset) - use[r]);
    st.max[r] = m_new;
    st.sum[r] *= alpha[r];
  }
  if (prescaled) {
    CUTE_UNROLL
    for (int i = 0; i < N; ++i) {
      const int r = (i / 2) % 2;
      s(i) = fast_exp2(s(i) - use[r]);
      st.sum[r] += s(i);
    }
  } else {
    CUTE_UNROLL
    for (int i = 0; i < N; ++i) {
      const int r = (i / 2) % 2;
      s(i) = fast_exp2(fmaf(s(i), st.coef[r], -use[r]));
      st.sum[r] += s(i);
    }
  }
  if constexpr (Tr::kSkipRescale) {
    return !__all_sync(0xffffffffu, kept);
  } else {
    return true;
  }
}

// P (fp32 accumulator-ordered) -> the A operand of the P V wgmma.
template <class Tr, class TensorS, class TensorP>
__device__ __forceinline__ void convert_p(TensorS const& s, TensorP& p) {
  constexpr int N = size(TensorS{});
  if constexpr (!Tr::kFp8) {
    // 16-bit: the same flat order; two values per conversion.
    auto p32 = recast<uint32_t>(p);
    CUTE_UNROLL
    for (int i = 0; i < N / 2; ++i) {
      if constexpr (std::is_same_v<typename Tr::Element, cutlass::bfloat16_t>) {
        __nv_bfloat162 h = __floats2bfloat162_rn(s(2 * i), s(2 * i + 1));
        p32(i) = reinterpret_cast<uint32_t const&>(h);
      } else {
        __half2 h = __floats2half2_rn(s(2 * i), s(2 * i + 1));
        p32(i) = reinterpret_cast<uint32_t const&>(h);
      }
    }
  } else {
    // FP8: per 32-key block kb, S value (g', h, e) at 16 kb + 4 g' + 2 h + e goes to A slot
    // 16 kb + 8 (g' / 2) + 4 h + 2 (g' % 2) + e (k = 16 (g'/2) + 4 (lane%4) + 2 (g'%2) + e).
    auto p16 = recast<uint16_t>(p);
    CUTE_UNROLL
    for (int kb = 0; kb < N / 16; ++kb) {
      CUTE_UNROLL
      for (int g = 0; g < 4; ++g) {
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) {
          const int si = 16 * kb + 4 * g + 2 * h;
          const int ai = 16 * kb + 8 * (g / 2) + 4 * h + 2 * (g % 2);
          const __nv_fp8x2_storage_t v =
              __nv_cvt_float2_to_fp8x2(make_float2(s(si), s(si + 1)), __NV_SATFINITE, __NV_E4M3);
          p16(ai / 2) = v;
        }
      }
    }
  }
}

// The consumer warpgroups on one query tile: main loop over key blocks and the epilogue.
// Key block j of the tile is block g0 + j of the K / V ring (the blocks of earlier tiles of a
// persistent CTA come first); the tile's Q is complete when bar_q reaches phase q_phase; a
// persistent CTA's tile releases its Q buffer on q_empty once the O store has read it, and only
// its first tile opens the ping-pong turns (each later one starts where the previous ended).
template <class Tr, class SS, class TQ, class TK, class TVt, class TO>
__device__ __forceinline__ void consumer(typename Tr::Params const& p, SS& ss, TQ& sQ, TK& sK, TVt& sVt, TO& sO,
                                         int m_block, int h, int b, int hk, int kv_len, int n_blocks, int g0,
                                         uint64_t* bar_q, int q_phase, uint64_t* q_empty, bool open_turns) {
  using Element = typename Tr::Element;
  using Out = typename Tr::Out;
  constexpr int kBlockM = Tr::kBlockM, kBlockN = Tr::kBlockN, kD = Tr::kHeadDim, kStages = Tr::kStages;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  const int ctid = threadIdx.x - 128;
  // consumer warpgroup: rows 64 cwg .. (Traits::kLeanLoop: as a warp-uniform value)
  const int cwg = Tr::kLeanLoop ? __shfl_sync(0xffffffffu, ctid / 128, 0) : ctid / 128;
  const int lane = threadIdx.x % 32;
  const int row0 = 64 * cwg + 16 * ((ctid % 128) / 32) + lane / 4;  // and row0 + 8

  typename Tr::TiledMmaQK mma_qk;
  typename Tr::TiledMmaPV mma_pv;
  auto thr_qk = mma_qk.get_thread_slice(ctid % 128);
  auto thr_pv = mma_pv.get_thread_slice(ctid % 128);
  Tensor tSrQ = thr_qk.partition_fragment_A(sQ(_, _, cwg));  // (MMA, 1, D/k): this warpgroup's rows
  Tensor tSrK = thr_qk.partition_fragment_B(sK);  // (MMA, 1, D/k, ST)
  Tensor tOrV = thr_pv.partition_fragment_B(sVt);  // (MMA, 1, BN/k, ST)
  Tensor tSrS = partition_fragment_C(mma_qk, Shape<_64, Int<kBlockN>>{});  // ((2,2,BN/8),1,1)
  Tensor tOrO = partition_fragment_C(mma_pv, Shape<_64, Int<kD>>{});       // ((2,2,D/8),1,1)
  using PLayout = std::conditional_t<Tr::kFp8, Layout<Shape<Shape<_4, _2, _2>, _1, Int<kBlockN / 32>>>,
                                     Layout<Shape<Shape<_2, _2, _2>, _1, Int<kBlockN / 16>>>>;
  Tensor tOrP = make_tensor<Element>(PLayout{});
  static_assert(size(PLayout{}) == size(decltype(tSrS){}), "P fragment size");
  clear(tOrO);

  RowState st;
  const float p_offset = Tr::kFp8 ? 8.807354922057604f : 0.f;  // log2(448): P scaled into E4M3's range
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    st.max[r] = -INFINITY;
    st.sum[r] = 0.f;
    float c = p.scale_log2;
    if constexpr (Tr::kFp8) {
      const int row = m_block * kBlockM + row0 + 8 * r;
      const int rr = min(row, p.seqlen_q - 1);
      c *= p.q_descale[b * p.qd.b + int64_t(rr) * p.qd.s + h * p.qd.h];
    }
    st.coef[r] = c;
  }
  const bool has_bias = p.key_bias != nullptr;
  const float* kd_base = nullptr;
  if constexpr (Tr::kFp8) kd_base = p.k_descale + b * p.kd.b + hk * p.kd.h;

  // Per-key K factors (FP8, one per key): this thread's kBlockN / 4 columns of key block j, read
  // from the stage that holds K_j (the producer loads them with it) while S_j is computed; keys
  // past kv_len are masked before their factor is used. Loaded from global memory by the
  // consumers instead, they cost several times the per-block path, even loaded one block ahead: a
  // strided 4-byte load per column and thread.
  constexpr int kKCols = Tr::kKPerToken ? kBlockN / 4 : 1;
  float kf[kKCols];
  auto load_kf = [&](int s) {
    if constexpr (Tr::kKPerToken) {
      constexpr int H4 = Tr::kKfHeads;
      const float* kc = ss.kf + s * H4 * kBlockN + H4 * 2 * (lane % 4) + hk % H4;
      CUTE_UNROLL
      for (int c = 0; c < kKCols; ++c) kf[c] = kc[H4 * (8 * (c / 2) + c % 2)];  // column 8 (c / 2) + c0 + c % 2
    } else {
      (void)s;
    }
  };
  const float* kf_arg = Tr::kKPerToken ? kf : nullptr;

  // FP8 with K factors per 128 keys (k_block is 128 whenever the factors are not per key): the
  // factor of the next key block, loaded one block ahead so that its latency is hidden.
  auto k_block_factor = [&](int j) {
    return j < n_blocks ? kd_base[int64_t(j * kBlockN / 128) * p.kd.s] : 0.f;
  };
  float kblk_next = 0.f;
  if constexpr (Tr::kFp8 && !Tr::kKPerToken) kblk_next = k_block_factor(0);

  // Per key block j (in stage s): its bias in shared memory, and the k block factor folded into coef.
  auto block_args = [&](int j, int s, const float*& bias, float (&coef)[2]) {
    bias = has_bias ? ss.bias + s * kBlockN : nullptr;
    coef[0] = st.coef[0];
    coef[1] = st.coef[1];
    if constexpr (Tr::kFp8 && !Tr::kKPerToken) {
      coef[0] *= kblk_next;
      coef[1] *= kblk_next;
      kblk_next = k_block_factor(j + 1);
    }
  };

  // Ping-pong (FA3's warpgroup scheduling): the consumer warpgroups issue their GEMMs of a key
  // block in turn (0, 1, .., 0, 1, ..), so one warpgroup's softmax runs under the others' GEMMs.
  // Warpgroup w waits on named barrier kTurn + w (256 threads: w syncs, its predecessor arrives)
  // and then arrives on its successor's; the last one opens warpgroup 0's first turn. Every
  // warpgroup walks the same key blocks, so the turns stay paired. The turns order only when the
  // GEMMs are issued, never a shared-memory access: no consumer warpgroup writes shared memory
  // that another reads (its O staging tile is its own, over its own Q tile for 16-bit inputs), and
  // the K / V stages are ordered by the full / empty mbarriers under either schedule.
  constexpr int kTurn = 1 + Tr::kMmaWG;  // barriers 1 .. kMmaWG are the epilogue's
  const bool pingpong = p.pingpong != 0 && n_blocks > 0;
  auto my_turn = [&] {
    if (pingpong) cutlass::arch::NamedBarrier::sync(256, kTurn + cwg);
  };
  auto your_turn = [&] {
    if (pingpong) cutlass::arch::NamedBarrier::arrive(256, kTurn + (cwg + 1) % Tr::kMmaWG);
  };
  if (open_turns && pingpong && cwg == Tr::kMmaWG - 1) cutlass::arch::NamedBarrier::arrive(256, kTurn);

  float alpha[2];
  // A persistent CTA loads every tile's Q, and its O is staged over it: wait even without keys.
  if constexpr (Tr::kPersistent) Barrier::wait(bar_q, q_phase);
  if (n_blocks > 0) {
    if constexpr (!Tr::kPersistent) Barrier::wait(bar_q, q_phase);
    {
      const int s0 = g0 % kStages;
      Barrier::wait(&ss.full_k[s0], (g0 / kStages) & 1);
      my_turn();
      wg_gemm<true>(mma_qk, tSrQ, tSrK(_, _, _, s0), tSrS);
      your_turn();
      load_kf(s0);
      warpgroup_wait<0>();
      const float* bias;
      float coef[2];
      block_args(0, s0, bias, coef);
      RowState tmp = st;
      tmp.coef[0] = coef[0];
      tmp.coef[1] = coef[1];
      softmax_block<Tr>(tSrS, tmp, alpha, min(kv_len, kBlockN), bias, kf_arg, p_offset);
      st.max[0] = tmp.max[0];
      st.max[1] = tmp.max[1];
      st.sum[0] = tmp.sum[0];
      st.sum[1] = tmp.sum[1];
      convert_p<Tr>(tSrS, tOrP);
    }
    for (int j = 1; j < n_blocks; ++j) {
      const int g = g0 + j, s = g % kStages, sp = (g - 1) % kStages;
      Barrier::wait(&ss.full_k[s], (g / kStages) & 1);
      Barrier::wait(&ss.full_v[sp], ((g - 1) / kStages) & 1);
      my_turn();
      wg_gemm<true>(mma_qk, tSrQ, tSrK(_, _, _, s), tSrS);
      Tensor tOrT = make_fragment_like(tOrO);  // FP8: this block's P V alone
      if constexpr (Tr::kFp8 && !Tr::kPvInO) {
        wg_gemm<true, true>(mma_pv, tOrP, tOrV(_, _, _, sp), tOrT);
      } else {
        wg_gemm<false, true>(mma_pv, tOrP, tOrV(_, _, _, sp), tOrO);
      }
      your_turn();
      load_kf(s);
      warpgroup_wait<1>();
      const float* bias;
      float coef[2];
      block_args(j, s, bias, coef);
      RowState tmp = st;
      tmp.coef[0] = coef[0];
      tmp.coef[1] = coef[1];
      const int kv_valid = min(kv_len - j * kBlockN, kBlockN);
      // the rest of the step: softmax of S_j, O updated once P_{j-1} V_{j-1} is in, P_j
      auto finish = [&](auto kind) {
        constexpr int kKind = decltype(kind)::value;
        const bool rescale = softmax_block<Tr, kKind>(tSrS, tmp, alpha, kKind == 0 ? kBlockN : kv_valid, bias,
                                                      kf_arg, p_offset);
        st.max[0] = tmp.max[0];
        st.max[1] = tmp.max[1];
        st.sum[0] = tmp.sum[0];
        st.sum[1] = tmp.sum[1];
        warpgroup_wait<0>();
        if (lane == 0) cutlass::arch::ClusterBarrier::arrive(&ss.empty[sp]);
        if (!Tr::kSkipRescale || rescale) {
          CUTE_UNROLL
          for (int i = 0; i < size(tOrO); ++i) {
            if constexpr (Tr::kFp8 && !Tr::kPvInO) {
              tOrO(i) = (tOrO(i) + tOrT(i)) * alpha[(i / 2) % 2];
            } else {
              tOrO(i) *= alpha[(i / 2) % 2];
            }
          }
        }
        convert_p<Tr>(tSrS, tOrP);
      };
      if constexpr (Tr::kLeanLoop) {
        if (bias != nullptr || kf_arg != nullptr) {
          finish(std::integral_constant<int, 2>{});
        } else if (kv_valid == kBlockN) {
          finish(std::integral_constant<int, 0>{});
        } else {
          finish(std::integral_constant<int, 1>{});
        }
      } else {
        finish(std::integral_constant<int, -1>{});
      }
    }
    {
      const int gl = g0 + n_blocks - 1, sl = gl % kStages;
      Barrier::wait(&ss.full_v[sl], (gl / kStages) & 1);
      Tensor tOrT = make_fragment_like(tOrO);
      if constexpr (Tr::kFp8 && !Tr::kPvInO) {
        wg_gemm<true, true>(mma_pv, tOrP, tOrV(_, _, _, sl), tOrT);
      } else {
        wg_gemm<false, true>(mma_pv, tOrP, tOrV(_, _, _, sl), tOrO);
      }
      warpgroup_wait<0>();
      if (lane == 0) cutlass::arch::ClusterBarrier::arrive(&ss.empty[sl]);
      if constexpr (Tr::kFp8 && !Tr::kPvInO) {
        CUTE_UNROLL
        for (int i = 0; i < size(tOrO); ++i) tOrO(i) += tOrT(i);
      }
    }
  }

  // ---------------- epilogue ----------------
  float inv[2];
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    const float l = quad_sum(st.sum[r]);
    inv[r] = (l > 0.f) ? 1.f / l : 0.f;
  }
  const int c0 = 2 * (lane % 4);
  CUTE_UNROLL
  for (int i = 0; i < size(tOrO); i += 2) {
    const int r = (i / 2) % 2;
    const int col = 8 * (i / 4) + c0;
    float x0 = tOrO(i) * inv[r], x1 = tOrO(i + 1) * inv[r];
    if constexpr (Tr::kFp8) {
      const float* vd = p.v_descale + b * p.vd.b + hk * p.vd.h;
      x0 *= __ldg(vd + col * p.vd.s);
      x1 *= __ldg(vd + (col + 1) * p.vd.s);
    }
    uint32_t packed;
    if constexpr (std::is_same_v<Out, cutlass::bfloat16_t>) {
      __nv_bfloat162 v2 = __floats2bfloat162_rn(x0, x1);
      packed = reinterpret_cast<uint32_t const&>(v2);
    } else {
      __half2 v2 = __floats2half2_rn(x0, x1);
      packed = reinterpret_cast<uint32_t const&>(v2);
    }
    const int rl = row0 - 64 * cwg + 8 * r;  // row within this warpgroup's 64-row tile
    *reinterpret_cast<uint32_t*>(&sO(rl, col, cwg)) = packed;
  }
  cutlass::arch::fence_view_async_shared();
  cutlass::arch::NamedBarrier::sync(128, 1 + cwg);
  if (ctid % 128 == 0) {
    Tensor mO = p.tma_o.get_tma_tensor(make_shape(p.seqlen_q, int32_t(kD), p.heads, p.batch));
    Tensor gO = local_tile(mO(_, _, h, b), Shape<_64, Int<kD>>{}, make_coord(Tr::kMmaWG * m_block + cwg, _0{}));
    Tensor sOw = sO(_, _, cwg);
    auto [tOgO, tOsO] = tma_partition(p.tma_o, _0{}, Layout<_1>{}, group_modes<0, 2>(sOw), group_modes<0, 2>(gO));
    copy(p.tma_o, tOsO, tOgO);
    tma_store_arrive();
    tma_store_wait<0>();  // the store has read the staging tile
    if constexpr (Tr::kPersistent) cutlass::arch::ClusterBarrier::arrive(q_empty);
  }
  (void)q_empty;
}

// The CTA's shared storage (1024-byte aligned).
template <class Tr>
__device__ __forceinline__ typename Tr::SharedStorage& shared_storage() {
  // Rounded as an integer on purpose: with every access known to be to shared memory (an offset
  // from smem_raw), ptxas schedules the FP8 head-dim-64 main loop slower.
  extern __shared__ char smem_raw[];
  return *reinterpret_cast<typename Tr::SharedStorage*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) &
                                                        ~uintptr_t(1023));
}

// Its barriers, initialized before any thread uses them.
template <class Tr>
__device__ __forceinline__ void init_barriers(typename Tr::SharedStorage& ss) {
  if (threadIdx.x == 0) {
    CUTE_UNROLL
    for (int q = 0; q < Tr::kQBufs; ++q) {
      cutlass::arch::ClusterTransactionBarrier::init(&ss.bar_q[q], 1);
      if constexpr (Tr::kPersistent) cutlass::arch::ClusterBarrier::init(&ss.q_empty[q], Tr::kMmaWG);
    }
    CUTE_UNROLL
    for (int s = 0; s < Tr::kStages; ++s) {
      cutlass::arch::ClusterTransactionBarrier::init(&ss.full_k[s], 1);
      cutlass::arch::ClusterTransactionBarrier::init(&ss.full_v[s], 1);
      cutlass::arch::ClusterBarrier::init(&ss.empty[s], Tr::kMmaWG * 4);
    }
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
}

// Producer (lane 0): the query tile's Q, one (64, D) tile per consumer warpgroup, on bar.
template <class Tr, class TQ>
__device__ __forceinline__ void issue_q(typename Tr::Params const& p, TQ& sQ, uint64_t* bar, int m_block, int h,
                                        int b) {
  constexpr int kD = Tr::kHeadDim;
  Tensor mQ = p.tma_q.get_tma_tensor(make_shape(p.seqlen_q, int32_t(kD), p.heads, p.batch));
  cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(bar, Tr::kBytesQ);
  CUTE_UNROLL
  for (int w = 0; w < Tr::kMmaWG; ++w) {
    Tensor gQ = local_tile(mQ(_, _, h, b), Shape<_64, Int<kD>>{}, make_coord(Tr::kMmaWG * m_block + w, _0{}));
    Tensor sQw = sQ(_, _, w);
    auto [tQgQ, tQsQ] = tma_partition(p.tma_q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQw), group_modes<0, 2>(gQ));
    copy(p.tma_q.with(*bar), tQgQ, tQsQ);
  }
}

// Producer (warp 0, thread 0 issues): key blocks 0 .. n_blocks - 1 of (hk, b) into the ring, key
// block j as ring block g0 + j (stage (g0 + j) % kStages, once the consumers released it).
template <class Tr, class SS, class TK, class TV>
__device__ __forceinline__ void issue_kv(typename Tr::Params const& p, SS& ss, TK& sK, TV& sV, int hk, int b,
                                         int n_blocks, int g0) {
  constexpr int kBlockN = Tr::kBlockN, kD = Tr::kHeadDim, kStages = Tr::kStages;
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  Tensor mK = p.tma_k.get_tma_tensor(make_shape(p.seqlen_kv, int32_t(kD), p.heads_kv, p.batch));
  Tensor gK = local_tile(mK(_, _, hk, b), Shape<Int<kBlockN>, Int<kD>>{}, make_coord(_, _0{}));  // (BN,D,n)
  auto [tKgK, tKsK] = tma_partition(p.tma_k, _0{}, Layout<_1>{}, group_modes<0, 2>(sK), group_modes<0, 2>(gK));
  auto issue_v = [&](int j, int s) {
    if constexpr (Tr::kFp8) {
      Tensor mV = p.tma_v.get_tma_tensor(make_shape(int32_t(kD), p.seqlen_kv_rows, p.heads_kv, p.batch));
      Tensor gV = local_tile(mV(_, _, hk, b), Shape<Int<kD>, Int<kBlockN>>{}, make_coord(_0{}, _));  // (D,BN,n)
      auto [tVgV, tVsV] = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV));
      copy(p.tma_v.with(ss.full_v[s]), tVgV(_, j), tVsV(_, s));
    } else {
      Tensor mV = p.tma_v.get_tma_tensor(make_shape(p.seqlen_kv, int32_t(kD), p.heads_kv, p.batch));
      Tensor gV = local_tile(mV(_, _, hk, b), Shape<Int<kBlockN>, Int<kD>>{}, make_coord(_, _0{}));
      auto [tVgV, tVsV] = tma_partition(p.tma_v, _0{}, Layout<_1>{}, group_modes<0, 2>(sV), group_modes<0, 2>(gV));
      copy(p.tma_v.with(ss.full_v[s]), tVgV(_, j), tVsV(_, s));
    }
  };
  auto issue_kf = [&](int j, int s) {  // block j's per-key K factors with heads hk & ~3 .. + 3
    if constexpr (Tr::kKPerToken) {
      Tensor mKf = p.tma_kf.get_tma_tensor(make_shape(p.heads_kv, p.seqlen_kv, p.batch));
      Tensor gKf = local_tile(mKf(_, _, b), Shape<Int<Tr::kKfHeads>, Int<kBlockN>>{},
                              make_coord(hk / Tr::kKfHeads, _));  // (4, BN, n)
      Tensor sKf = make_tensor(make_smem_ptr(ss.kf), typename Tr::SmemLayoutKf{});
      auto [tFg, tFs] = tma_partition(p.tma_kf, _0{}, Layout<_1>{}, group_modes<0, 2>(sKf), group_modes<0, 2>(gKf));
      copy(p.tma_kf.with(ss.full_k[s]), tFg(_, j), tFs(_, s));
    } else {
      (void)j;
      (void)s;
    }
  };
  auto issue_bias = [&](int j, int s) {  // block j of batch row b's key bias
    Tensor mB = p.tma_bias.get_tma_tensor(make_shape(p.seqlen_kv, p.batch));
    Tensor gB = local_tile(mB(_, b), Shape<Int<kBlockN>>{}, make_coord(_));  // (BN, n)
    Tensor sB = make_tensor(make_smem_ptr(ss.bias), typename Tr::SmemLayoutBias{});
    auto [tBg, tBs] = tma_partition(p.tma_bias, _0{}, Layout<_1>{}, group_modes<0, 1>(sB), group_modes<0, 1>(gB));
    copy(p.tma_bias.with(ss.full_k[s]), tBg(_, j), tBs(_, s));
  };
  const bool has_bias = p.key_bias != nullptr;
  for (int j = 0; j < n_blocks; ++j) {
    const int g = g0 + j, s = g % kStages;
    if (g >= kStages) cutlass::arch::ClusterBarrier::wait(&ss.empty[s], ((g / kStages) - 1) & 1);
    if (threadIdx.x == 0) {
      Barrier::arrive_and_expect_tx(&ss.full_k[s], Tr::kBytesK + Tr::kBytesKf + (has_bias ? Tr::kBytesBias : 0));
      copy(p.tma_k.with(ss.full_k[s]), tKgK(_, j), tKsK(_, s));
      if constexpr (Tr::kKPerToken) issue_kf(j, s);
      if (has_bias) issue_bias(j, s);
      Barrier::arrive_and_expect_tx(&ss.full_v[s], Tr::kBytesV);
      issue_v(j, s);
    }
    __syncwarp();
  }
}

template <class Tr>
__device__ __forceinline__ int keys_of(typename Tr::Params const& p, int b) {
  int kv_len = p.seqlen_kv;
  if (p.kv_lengths != nullptr) kv_len = min(max(p.kv_lengths[b], 0), p.seqlen_kv);
  return kv_len;
}

// Shared-memory views: K (BN, D, stage), V as stored, V^T (D, BN, stage), and Q / O of buffer q
// (64, D, warpgroup), O over Q for 16-bit inputs.
template <class Tr, class SS>
__device__ __forceinline__ auto smem_views(SS& ss, int q) {
  using Out = typename Tr::Out;
  Out* o_ptr;
  if constexpr (Tr::kOverQ) {
    o_ptr = reinterpret_cast<Out*>(ss.q[q]);
  } else {
    o_ptr = ss.o_store.o;
  }
  return make_tuple(make_tensor(make_smem_ptr(ss.k), typename Tr::SmemLayoutK{}),
                    make_tensor(make_smem_ptr(ss.v), typename Tr::SmemLayoutVStore{}),
                    make_tensor(make_smem_ptr(ss.v), typename Tr::SmemLayoutVt{}),
                    make_tensor(make_smem_ptr(ss.q[q]), typename Tr::SmemLayoutQ{}),
                    make_tensor(make_smem_ptr(o_ptr), typename Tr::SmemLayoutO{}));
}

// One query tile per CTA, grid (ceil(Sq / kBlockM), H, B).
template <class Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1) attention_fwd_kernel(CUTE_GRID_CONSTANT typename Tr::Params const p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  auto& ss = shared_storage<Tr>();
  const int m_block = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int hk = h / p.group;
  const int kv_len = keys_of<Tr>(p, b);
  const int n_blocks = (kv_len + Tr::kBlockN - 1) / Tr::kBlockN;
  init_barriers<Tr>(ss);
  auto [sK, sV, sVt, sQ, sO] = smem_views<Tr>(ss, 0);
  if (threadIdx.x / 128 == 0) {
    // ---------------- producer ----------------
    cutlass::arch::warpgroup_reg_dealloc<Tr::kProducerRegs>();
    if (threadIdx.x < 32 && n_blocks > 0) {  // lane 0 issues the TMA loads
      if (threadIdx.x == 0) issue_q<Tr>(p, sQ, &ss.bar_q[0], m_block, h, b);
      issue_kv<Tr>(p, ss, sK, sV, hk, b, n_blocks, 0);
    }
  } else {
    cutlass::arch::warpgroup_reg_alloc<Tr::kConsumerRegs>();
    consumer<Tr>(p, ss, sQ, sK, sVt, sO, m_block, h, b, hk, kv_len, n_blocks, 0, &ss.bar_q[0], 0, nullptr, true);
  }
#endif
}

// Persistent: one CTA per SM (grid <= the SM count), tile t = (m, h, b) with m fastest, CTA c
// taking tiles c, c + gridDim.x, ...; tile i of a CTA uses Q buffer i % 2, and its key blocks
// follow the previous tiles' in the K / V ring, so the producer runs ahead across tiles.
template <class Tr>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    attention_fwd_persistent_kernel(CUTE_GRID_CONSTANT typename Tr::Params const p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(Tr::kPersistent && Tr::kQBufs == 2, "a persistent configuration");
  auto& ss = shared_storage<Tr>();
  init_barriers<Tr>(ss);
  const int tiles = p.m_blocks * p.heads * p.batch;
  auto tile = [&](int t, int& m_block, int& h, int& b) {
    m_block = t % p.m_blocks;
    h = (t / p.m_blocks) % p.heads;
    b = t / (p.m_blocks * p.heads);
  };
  if (threadIdx.x / 128 == 0) {
    // ---------------- producer ----------------
    cutlass::arch::warpgroup_reg_dealloc<Tr::kProducerRegs>();
    if (threadIdx.x < 32) {
      int g = 0;  // key blocks issued so far
      for (int t = blockIdx.x, i = 0; t < tiles; t += gridDim.x, ++i) {
        int m_block, h, b;
        tile(t, m_block, h, b);
        const int q = i % 2;
        auto [sK, sV, sVt, sQ, sO] = smem_views<Tr>(ss, q);
        if (i >= 2) cutlass::arch::ClusterBarrier::wait(&ss.q_empty[q], ((i / 2) - 1) & 1);
        if (threadIdx.x == 0) issue_q<Tr>(p, sQ, &ss.bar_q[q], m_block, h, b);
        const int n_blocks = (keys_of<Tr>(p, b) + Tr::kBlockN - 1) / Tr::kBlockN;
        issue_kv<Tr>(p, ss, sK, sV, h / p.group, b, n_blocks, g);
        g += n_blocks;
      }
    }
  } else {
    cutlass::arch::warpgroup_reg_alloc<Tr::kConsumerRegs>();
    int g = 0;           // key blocks consumed so far
    bool turns = false;  // the ping-pong turns are open (at the first tile with keys)
    for (int t = blockIdx.x, i = 0; t < tiles; t += gridDim.x, ++i) {
      int m_block, h, b;
      tile(t, m_block, h, b);
      const int q = i % 2;
      auto [sK, sV, sVt, sQ, sO] = smem_views<Tr>(ss, q);
      const int kv_len = keys_of<Tr>(p, b);
      const int n_blocks = (kv_len + Tr::kBlockN - 1) / Tr::kBlockN;
      consumer<Tr>(p, ss, sQ, sK, sVt, sO, m_block, h, b, h / p.group, kv_len, n_blocks, g, &ss.bar_q[q],
                   (i / 2) & 1, &ss.q_empty[q], !turns);
      turns = turns || n_blocks > 0;
      g += n_blocks;
    }
  }
#endif
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
