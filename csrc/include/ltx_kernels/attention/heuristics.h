// Attention heuristics: which backend runs a call, and which sm_90a kernel configuration. Pure (no
// CUDA, no torch), unit-tested on the CPU (tests/cpp/test_attention_heuristics.cpp); the torch
// adapter (csrc/torch/attention.cpp) asks choose_attn_backend once per call, and the sm_90a
// dispatch (csrc/cuda/attention/sm90_attention.cu) instantiates exactly the configurations named
// here.
//
// Backends (the registry: the op's `backend` argument and attention_backend's answer are these
// names, and the Python package has no list of its own):
//   cpu    the C++ CPU backend (csrc/cpu/attention), for CPU tensors;
//   torch  the inputs dequantized to fp32 through PyTorch's scaled_dot_product_attention
//          (torch-ext/ltx_kernels/attention.py): any device, correct, not fast;
//   sm90   the sm_90a TMA + wgmma kernel, where attention_sm90_why_not accepts the call.
// "auto" takes sm90 when it can run the call, else torch on CUDA; cpu on the CPU.
//
// sm_90a configurations: structs of compile-time constants read by the kernel's Traits
// (sm90_attention_fwd.cuh); Config holds the plain kernel, each named configuration overrides
// what differs. One default per (input class, head dim, K factor granularity):
//
//   input      head dim  K factors   configuration   query x key tile  stages  consumer WGs
//   bf16/fp16  64        -           Half64          192 x 128         4       3
//   bf16/fp16  128       -           Half128         128 x 128         3       2
//   bf16/fp16  64        -           Half64Persistent  192 x 128       4       3   (few keys)
//   bf16/fp16  128       -           Half128Persistent 128 x 128       2       2   (few keys)
//   e4m3       64        per 128     Fp8D64          192 x 128         6       3
//   e4m3       128       per 128     Fp8D128         128 x 128         4       2
//   e4m3       64        per key     Fp8PerKeyD64    128 x 128         4       2
//   e4m3       128       per key     Fp8PerKeyD128   128 x 64          4       2
//
// ("few keys": at most persistent_max_keys(head dim) keys: 1024 at head dim 64, 256 at 128.)
// Why these (docs/design/attention.md has the measurements that decide them):
// - three consumer warpgroups at head dim 64 (160 registers each) keep more query rows in flight
//   per K / V stage, which pays where the GEMMs are short; at head dim 128 two warpgroups of 240
//   registers are needed for S, P and O;
// - the stage count is what fits in 227 KB of shared memory next to Q (which 16-bit O reuses;
//   FP8 O has its own tiles);
// - per-key K factors cost a multiply per score and kBlockN / 4 more registers per thread, so the
//   per-key kernels run two warpgroups and, at head dim 128, 64-key blocks;
// - the FP8 defaults with 128-key factors accumulate P V in O by the tensor core (kPvInO) and run
//   one copy of the softmax per kind of key block (kLeanLoop); the 16-bit head-dim-128 kernel
//   also skips O's rescale while no row's maximum moves by more than 2^8 (kSkipRescale);
// - with few keys a CTA's life is loading Q, one or two key blocks and storing O, one after the
//   other: a persistent CTA overlaps one tile's loads and store with another tile's GEMMs.
#pragma once

#include <cstdint>
#include <string_view>

namespace ltx_kernels {

enum class AttnBackend : int { kCpu = 0, kTorch = 1, kSm90 = 2, kAuto = 3 };

inline const char* attn_backend_name(AttnBackend b) {
  switch (b) {
    case AttnBackend::kCpu: return "cpu";
    case AttnBackend::kTorch: return "torch";
    case AttnBackend::kSm90: return "sm90";
    default: return "auto";
  }
}

// The names a call may request, in the order messages list them.
constexpr AttnBackend kAttnBackendChoices[] = {AttnBackend::kAuto, AttnBackend::kSm90, AttnBackend::kTorch,
                                               AttnBackend::kCpu};

// The backend a name selects ("auto" included); false for a name that is none of them.
inline bool parse_attn_backend(std::string_view name, AttnBackend* out) {
  for (AttnBackend b : kAttnBackendChoices) {
    if (name == attn_backend_name(b)) {
      *out = b;
      return true;
    }
  }
  return false;
}

// What the choice depends on besides the requested backend.
struct AttnBackendFacts {
  bool cuda = false;                   // the tensors are on a CUDA device (else on the CPU)
  bool sm90_built = false;             // the build has the sm_90a kernels
  const char* sm90_why_not = nullptr;  // attention_sm90_why_not for the call and its device (when built)
};

struct AttnBackendChoice {
  AttnBackend backend = AttnBackend::kCpu;
  const char* why_not = nullptr;  // set when the requested backend cannot run the call: why
};

inline AttnBackendChoice choose_attn_backend(AttnBackend requested, const AttnBackendFacts& f) {
  const char* sm90 = !f.cuda         ? "the tensors are on the CPU"
                     : !f.sm90_built ? "this build has no sm_90a kernels (TORCH_CUDA_ARCH_LIST without 9.0a)"
                                     : f.sm90_why_not;
  switch (requested) {
    case AttnBackend::kAuto:
      if (!f.cuda) return {AttnBackend::kCpu, nullptr};
      return {sm90 == nullptr ? AttnBackend::kSm90 : AttnBackend::kTorch, nullptr};
    case AttnBackend::kCpu: return {AttnBackend::kCpu, f.cuda ? "the tensors are on a CUDA device" : nullptr};
    case AttnBackend::kSm90: return {AttnBackend::kSm90, sm90};
    default: return {AttnBackend::kTorch, nullptr};
  }
}

namespace attention_sm90 {

// The sm_90a configurations, one name each (kernel_name); each configuration struct says which
// it is (kId).
enum class Kernel {
  kHalf64,
  kHalf128,
  kHalf64Persistent,
  kHalf128Persistent,
  kFp8D64,
  kFp8D128,
  kFp8PerKeyD64,
  kFp8PerKeyD128,
  kNone
};

// The plain kernel. Every field is read by Traits; a named configuration overrides some, and its
// base names the kernel it is (kId: launch_config finds a configuration by it).
template <Kernel K>
struct ConfigOf {
  static constexpr Kernel kId = K;
  static constexpr int kHeadDim = 64;       // 64 or 128
  static constexpr int kBlockN = 128;       // keys per block
  static constexpr int kStages = 2;         // K / V pipeline depth
  static constexpr int kMmaWG = 2;          // consumer warpgroups, 64 query rows each (2 or 3)
  static constexpr bool kKPerToken = false; // FP8: one K factor per key (else per 128 keys)
  static constexpr bool kPvInO = false;     // FP8: P V accumulated in O by the tensor core
  static constexpr bool kSkipRescale = false;  // 16-bit: O rescaled only when a row's maximum moved
  static constexpr bool kLeanLoop = false;  // one copy of a block's softmax per kind of block
  // The two consumer warpgroups take turns issuing their GEMMs (FA3's ping-pong). Off for FP8 at
  // head dim 64, whose GEMMs are too short to hide the other warpgroup's softmax.
  static constexpr bool kPingPong = true;
  // One CTA per SM walks query tiles (FA3's persistent schedule): the producer loads the next
  // tile's Q and its K / V blocks while the consumers finish this one, and a tile's output store
  // runs under the next tile's GEMMs. 16-bit inputs only (O is staged over Q); two Q buffers.
  static constexpr bool kPersistent = false;
};
using Config = ConfigOf<Kernel::kNone>;

struct Half64 : ConfigOf<Kernel::kHalf64> {
  static constexpr int kHeadDim = 64, kBlockN = 128, kStages = 4, kMmaWG = 3;
};
struct Half128 : ConfigOf<Kernel::kHalf128> {
  static constexpr int kHeadDim = 128, kBlockN = 128, kStages = 3, kMmaWG = 2;
  static constexpr bool kSkipRescale = true, kLeanLoop = true;
};
// Few keys (cross-attention to a short text, where one CTA per query tile would spend its life
// loading Q and storing O one after the other): the same kernels, persistent. Two K / V stages at
// head dim 128 leave room for the second Q buffer.
struct Half64Persistent : Half64 {
  static constexpr Kernel kId = Kernel::kHalf64Persistent;
  static constexpr bool kPersistent = true;
};
struct Half128Persistent : Half128 {
  static constexpr Kernel kId = Kernel::kHalf128Persistent;
  static constexpr int kStages = 2;
  static constexpr bool kPersistent = true;
};
struct Fp8D64 : ConfigOf<Kernel::kFp8D64> {
  static constexpr int kHeadDim = 64, kBlockN = 128, kStages = 6, kMmaWG = 3;
  static constexpr bool kPvInO = true, kLeanLoop = true, kPingPong = false;
};
struct Fp8D128 : ConfigOf<Kernel::kFp8D128> {
  static constexpr int kHeadDim = 128, kBlockN = 128, kStages = 4, kMmaWG = 2;
  static constexpr bool kPvInO = true, kLeanLoop = true;
};
struct Fp8PerKeyD64 : ConfigOf<Kernel::kFp8PerKeyD64> {
  static constexpr int kHeadDim = 64, kBlockN = 128, kStages = 4, kMmaWG = 2;
  static constexpr bool kKPerToken = true, kPingPong = false;
};
struct Fp8PerKeyD128 : ConfigOf<Kernel::kFp8PerKeyD128> {
  static constexpr int kHeadDim = 128, kBlockN = 64, kStages = 4, kMmaWG = 2;
  static constexpr bool kKPerToken = true;
};


inline const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::kHalf64: return "half64";
    case Kernel::kHalf128: return "half128";
    case Kernel::kHalf64Persistent: return "half64_persistent";
    case Kernel::kHalf128Persistent: return "half128_persistent";
    case Kernel::kFp8D64: return "fp8_d64";
    case Kernel::kFp8D128: return "fp8_d128";
    case Kernel::kFp8PerKeyD64: return "fp8_per_key_d64";
    case Kernel::kFp8PerKeyD128: return "fp8_per_key_d128";
    default: return "none";
  }
}

// 16-bit calls with at most this many keys run the persistent kernels, by head dim. Both
// schedules timed against the key count (tools/tune/attention_schedule.py, record
// benchmarks/results/h100/attention_schedule.json, table in docs/design/attention.md): at head dim 64 persistent is faster from 128 to 1024 keys and slower at a
// self-attention's 2688; at head dim 128 faster at 128 and 256 keys, slower from 512 on.
constexpr int64_t kPersistentMaxKeysD64 = 1024;
constexpr int64_t kPersistentMaxKeysD128 = 256;
inline int64_t persistent_max_keys(int head_dim) {
  return head_dim == 64 ? kPersistentMaxKeysD64 : kPersistentMaxKeysD128;
}

// The configuration for a call: FP8 (e4m3) or 16-bit inputs, the head dim, for FP8 whether K has
// one factor per key (k_block 1) or per 128 keys, and the keys per batch row. `persistent` forces
// (1) or refuses (0) the persistent schedule of 16-bit inputs (a developer setting; -1: by the
// number of keys). kNone where no sm_90a kernel exists (the envelope, attention_sm90_why_not, says
// why).
inline Kernel choose_kernel(bool fp8, int head_dim, bool k_per_key, int64_t seqlen_kv, int persistent = -1) {
  if (head_dim != 64 && head_dim != 128) return Kernel::kNone;
  const bool d64 = head_dim == 64;
  if (!fp8) {
    const bool pers = persistent < 0 ? seqlen_kv <= persistent_max_keys(head_dim) : persistent != 0;
    if (pers) return d64 ? Kernel::kHalf64Persistent : Kernel::kHalf128Persistent;
    return d64 ? Kernel::kHalf64 : Kernel::kHalf128;
  }
  if (k_per_key) return d64 ? Kernel::kFp8PerKeyD64 : Kernel::kFp8PerKeyD128;
  return d64 ? Kernel::kFp8D64 : Kernel::kFp8D128;
}

}  // namespace attention_sm90
}  // namespace ltx_kernels
