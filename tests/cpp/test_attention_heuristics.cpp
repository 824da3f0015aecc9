// The attention backend choice and the sm_90a configuration choice
// (ltx_kernels/attention/heuristics.h), and the developer settings store
// (ltx_kernels/common/dev_config.h).
#include <gtest/gtest.h>

#include <string>

#include "ltx_kernels/attention/heuristics.h"
#include "ltx_kernels/common/dev_config.h"

namespace ltx_kernels {
namespace attention_sm90 {
namespace {

TEST(AttentionHeuristics, OneConfigurationPerClass) {
  const int64_t many = kPersistentMaxKeysD64 + 1;
  EXPECT_EQ(choose_kernel(false, 64, false, many), Kernel::kHalf64);
  EXPECT_EQ(choose_kernel(false, 128, false, many), Kernel::kHalf128);
  EXPECT_EQ(choose_kernel(false, 128, true, many), Kernel::kHalf128);  // per-key factors are an FP8 notion
  EXPECT_EQ(choose_kernel(true, 64, false, many), Kernel::kFp8D64);
  EXPECT_EQ(choose_kernel(true, 128, false, many), Kernel::kFp8D128);
  EXPECT_EQ(choose_kernel(true, 64, true, many), Kernel::kFp8PerKeyD64);
  EXPECT_EQ(choose_kernel(true, 128, true, many), Kernel::kFp8PerKeyD128);
  for (int d : {0, 32, 80, 96, 256}) {
    EXPECT_EQ(choose_kernel(false, d, false, many), Kernel::kNone) << d;
    EXPECT_EQ(choose_kernel(true, d, false, many), Kernel::kNone) << d;
    EXPECT_EQ(choose_kernel(false, d, false, 1), Kernel::kNone) << d;
  }
  EXPECT_STREQ(kernel_name(Kernel::kFp8PerKeyD128), "fp8_per_key_d128");
}

TEST(AttentionHeuristics, FewKeysRunPersistent) {
  EXPECT_EQ(persistent_max_keys(64), kPersistentMaxKeysD64);
  EXPECT_EQ(persistent_max_keys(128), kPersistentMaxKeysD128);
  EXPECT_EQ(choose_kernel(false, 64, false, kPersistentMaxKeysD64), Kernel::kHalf64Persistent);
  EXPECT_EQ(choose_kernel(false, 128, false, kPersistentMaxKeysD128), Kernel::kHalf128Persistent);
  EXPECT_EQ(choose_kernel(false, 128, false, kPersistentMaxKeysD128 + 1), Kernel::kHalf128);
  for (int64_t keys : {int64_t(0), int64_t(1), int64_t(128), kPersistentMaxKeysD128}) {
    EXPECT_EQ(choose_kernel(false, 64, false, keys), Kernel::kHalf64Persistent) << keys;
    EXPECT_EQ(choose_kernel(false, 128, false, keys), Kernel::kHalf128Persistent) << keys;
    // FP8 has no persistent kernel (its O is not staged over Q)
    EXPECT_EQ(choose_kernel(true, 64, false, keys), Kernel::kFp8D64) << keys;
    EXPECT_EQ(choose_kernel(true, 128, true, keys, 1), Kernel::kFp8PerKeyD128) << keys;
  }
  // the developer setting forces either schedule at any length
  EXPECT_EQ(choose_kernel(false, 64, false, 128, 0), Kernel::kHalf64);
  EXPECT_EQ(choose_kernel(false, 128, false, 1 << 20, 1), Kernel::kHalf128Persistent);
  EXPECT_STREQ(kernel_name(Kernel::kHalf64Persistent), "half64_persistent");
}

// The constraints the kernel's Traits asserts at compile time, checked here for every named
// configuration so that a new one fails on the CPU before it reaches nvcc.
template <class C>
void expect_valid(bool fp8, const char* name) {
  SCOPED_TRACE(name);
  EXPECT_NE(C::kId, Kernel::kNone);  // launch_config finds a configuration by its kId
  EXPECT_TRUE(C::kHeadDim == 64 || C::kHeadDim == 128);
  EXPECT_TRUE(C::kMmaWG == 2 || C::kMmaWG == 3);
  EXPECT_EQ(C::kBlockN % 16, 0);
  EXPECT_LE(C::kBlockN, 256);
  EXPECT_GE(C::kStages, 2);
  if (fp8) {
    EXPECT_EQ(C::kBlockN % 32, 0);  // whole 32-key groups of the FP8 V^T layout
    if (!C::kKPerToken) EXPECT_EQ(128 % C::kBlockN, 0);  // a key block within one K factor block
    EXPECT_FALSE(C::kSkipRescale);  // FP8 P has no headroom for a kept maximum: Traits ignores it
  } else {
    EXPECT_FALSE(C::kKPerToken || C::kPvInO);
  }
  if (C::kPersistent) EXPECT_FALSE(fp8);  // O staged over Q: 16-bit only
  // two consumer warpgroups at head dim 128 (240 registers each hold S, P and O)
  if (C::kHeadDim == 128) EXPECT_EQ(C::kMmaWG, 2);
}

TEST(AttentionHeuristics, ConfigurationsNameTheirKernel) {
  EXPECT_EQ(Half64::kId, Kernel::kHalf64);
  EXPECT_EQ(Half128::kId, Kernel::kHalf128);
  EXPECT_EQ(Half64Persistent::kId, Kernel::kHalf64Persistent);  // not its base's
  EXPECT_EQ(Half128Persistent::kId, Kernel::kHalf128Persistent);
  EXPECT_EQ(Fp8D64::kId, Kernel::kFp8D64);
  EXPECT_EQ(Fp8D128::kId, Kernel::kFp8D128);
  EXPECT_EQ(Fp8PerKeyD64::kId, Kernel::kFp8PerKeyD64);
  EXPECT_EQ(Fp8PerKeyD128::kId, Kernel::kFp8PerKeyD128);
  EXPECT_EQ(Config::kId, Kernel::kNone);
}

TEST(AttentionHeuristics, NamedConfigurationsAreValid) {
  expect_valid<Half64>(false, "Half64");
  expect_valid<Half128>(false, "Half128");
  expect_valid<Half64Persistent>(false, "Half64Persistent");
  expect_valid<Half128Persistent>(false, "Half128Persistent");
  expect_valid<Fp8D64>(true, "Fp8D64");
  expect_valid<Fp8D128>(true, "Fp8D128");
  expect_valid<Fp8PerKeyD64>(true, "Fp8PerKeyD64");
  expect_valid<Fp8PerKeyD128>(true, "Fp8PerKeyD128");
  EXPECT_EQ(Fp8D64::kHeadDim, 64);
  EXPECT_EQ(Fp8PerKeyD128::kBlockN, 64);
  // the named configuration overrides, Config supplies the rest
  EXPECT_FALSE(Fp8D64::kPingPong);
  EXPECT_TRUE(Fp8D128::kPingPong);
  EXPECT_TRUE(Half128::kSkipRescale);
  EXPECT_FALSE(Half64::kSkipRescale);
}

}  // namespace
}  // namespace attention_sm90

namespace {

TEST(AttentionBackends, OneRegistryOfNames) {
  AttnBackend b = AttnBackend::kCpu;
  for (AttnBackend want : kAttnBackendChoices) {
    ASSERT_TRUE(parse_attn_backend(attn_backend_name(want), &b)) << attn_backend_name(want);
    EXPECT_EQ(b, want);
  }
  EXPECT_STREQ(attn_backend_name(AttnBackend::kCpu), "cpu");
  EXPECT_STREQ(attn_backend_name(AttnBackend::kTorch), "torch");
  EXPECT_STREQ(attn_backend_name(AttnBackend::kSm90), "sm90");
  EXPECT_STREQ(attn_backend_name(AttnBackend::kAuto), "auto");
  EXPECT_FALSE(parse_attn_backend("flash", &b));
  EXPECT_FALSE(parse_attn_backend("", &b));
  EXPECT_FALSE(parse_attn_backend("sm90 ", &b));
}

// One case of choose_attn_backend: the backend and whether (and why) the request is refused.
void expect_choice(AttnBackend requested, const AttnBackendFacts& f, AttnBackend backend, const char* why) {
  const AttnBackendChoice c = choose_attn_backend(requested, f);
  SCOPED_TRACE(attn_backend_name(requested));
  EXPECT_EQ(c.backend, backend);
  if (why == nullptr) {
    EXPECT_EQ(c.why_not, nullptr) << c.why_not;
  } else {
    ASSERT_NE(c.why_not, nullptr);
    EXPECT_EQ(std::string(c.why_not), why);
  }
}

TEST(AttentionBackends, ChoiceFromTheFacts) {
  const AttnBackend kAuto = AttnBackend::kAuto, kCpu = AttnBackend::kCpu, kTorch = AttnBackend::kTorch,
                    kSm90 = AttnBackend::kSm90;
  // CPU tensors: the C++ backend, or torch when asked; never sm90 (whatever the build)
  for (bool built : {false, true}) {
    const AttnBackendFacts cpu{false, built, nullptr};
    expect_choice(kAuto, cpu, kCpu, nullptr);
    expect_choice(kCpu, cpu, kCpu, nullptr);
    expect_choice(kTorch, cpu, kTorch, nullptr);
    expect_choice(kSm90, cpu, kSm90, "the tensors are on the CPU");
  }
  // CUDA, a build without the sm_90a kernels: torch
  const AttnBackendFacts no_sm90{true, false, nullptr};
  expect_choice(kAuto, no_sm90, kTorch, nullptr);
  expect_choice(kTorch, no_sm90, kTorch, nullptr);
  expect_choice(kSm90, no_sm90, kSm90, "this build has no sm_90a kernels (TORCH_CUDA_ARCH_LIST without 9.0a)");
  expect_choice(kCpu, no_sm90, kCpu, "the tensors are on a CUDA device");
  // CUDA with the kernels: sm90 where its envelope takes the call, else torch
  const AttnBackendFacts fits{true, true, nullptr};
  expect_choice(kAuto, fits, kSm90, nullptr);
  expect_choice(kSm90, fits, kSm90, nullptr);
  expect_choice(kTorch, fits, kTorch, nullptr);
  const AttnBackendFacts outside{true, true, "the sm_90a attention kernel takes head_dim 64 or 128"};
  expect_choice(kAuto, outside, kTorch, nullptr);
  expect_choice(kSm90, outside, kSm90, "the sm_90a attention kernel takes head_dim 64 or 128");
  expect_choice(kCpu, outside, kCpu, "the tensors are on a CUDA device");
}

TEST(DevConfig, KnownNamesOnly) {
  EXPECT_EQ(dev_setting("LTX_KERNELS_NO_SUCH_SETTING"), "");
  EXPECT_FALSE(set_dev_setting("LTX_KERNELS_NO_SUCH_SETTING", "1"));
  const std::string before = dev_setting("LTX_KERNELS_GEMM_CONFIG");
  ASSERT_TRUE(set_dev_setting("LTX_KERNELS_GEMM_CONFIG", "128x192:c2"));
  EXPECT_EQ(dev_setting("LTX_KERNELS_GEMM_CONFIG"), "128x192:c2");
  ASSERT_TRUE(set_dev_setting("LTX_KERNELS_GEMM_CONFIG", before));
  EXPECT_EQ(dev_setting("LTX_KERNELS_GEMM_CONFIG"), before);
}

}  // namespace
}  // namespace ltx_kernels
