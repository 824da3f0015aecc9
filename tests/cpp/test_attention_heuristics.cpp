// The sm_90a attention configuration choice (ltx_kernels/attention/heuristics.h) and the
// developer settings store (ltx_kernels/common/dev_config.h).
#include <gtest/gtest.h>

#include <string>

#include "ltx_kernels/attention/heuristics.h"
#include "ltx_kernels/common/dev_config.h"

namespace ltx_kernels {
namespace attention_sm90 {
namespace {

TEST(AttentionHeuristics, OneConfigurationPerClass) {
  EXPECT_EQ(choose_kernel(false, 64, false), Kernel::kHalf64);
  EXPECT_EQ(choose_kernel(false, 128, false), Kernel::kHalf128);
  EXPECT_EQ(choose_kernel(false, 128, true), Kernel::kHalf128);  // per-key factors are an FP8 notion
  EXPECT_EQ(choose_kernel(true, 64, false), Kernel::kFp8D64);
  EXPECT_EQ(choose_kernel(true, 128, false), Kernel::kFp8D128);
  EXPECT_EQ(choose_kernel(true, 64, true), Kernel::kFp8PerKeyD64);
  EXPECT_EQ(choose_kernel(true, 128, true), Kernel::kFp8PerKeyD128);
  for (int d : {0, 32, 80, 96, 256}) {
    EXPECT_EQ(choose_kernel(false, d, false), Kernel::kNone) << d;
    EXPECT_EQ(choose_kernel(true, d, false), Kernel::kNone) << d;
  }
  EXPECT_STREQ(kernel_name(Kernel::kFp8PerKeyD128), "fp8_per_key_d128");
}

// The constraints the kernel's Traits asserts at compile time, checked here for every named
// configuration so that a new one fails on the CPU before it reaches nvcc.
template <class C>
void expect_valid(bool fp8, const char* name) {
  SCOPED_TRACE(name);
  EXPECT_TRUE(C::kHeadDim == 64 || C::kHeadDim == 128);
  EXPECT_TRUE(C::kMmaWG == 2 || C::kMmaWG == 3);
  EXPECT_EQ(C::kBlockN % 16, 0);
  EXPECT_LE(C::kBlockN, 256);
  EXPECT_GE(C::kStages, 2);
  if (fp8) {
    EXPECT_EQ(C::kBlockN % 32, 0);  // whole 32-key groups of the FP8 V^T layout
    if (!C::kKPerToken) EXPECT_EQ(128 % C::kBlockN, 0);  // a key block within one K factor block
  } else {
    EXPECT_FALSE(C::kKPerToken || C::kPvInO || C::kRowSumInPv || C::kExp2PolyEvery != 0);
  }
  // two consumer warpgroups at head dim 128 (240 registers each hold S, P and O)
  if (C::kHeadDim == 128) EXPECT_EQ(C::kMmaWG, 2);
}

TEST(AttentionHeuristics, NamedConfigurationsAreValid) {
  expect_valid<Half64>(false, "Half64");
  expect_valid<Half128>(false, "Half128");
  expect_valid<Fp8D64>(true, "Fp8D64");
  expect_valid<Fp8D128>(true, "Fp8D128");
  expect_valid<Fp8PerKeyD64>(true, "Fp8PerKeyD64");
  expect_valid<Fp8PerKeyD128>(true, "Fp8PerKeyD128");
  EXPECT_EQ(Fp8D64::kHeadDim, 64);
  EXPECT_EQ(Fp8PerKeyD128::kBlockN, 64);
  // the named configuration overrides, Config supplies the rest
  EXPECT_FALSE(Fp8D64::kPingPong);
  EXPECT_TRUE(Fp8D128::kPingPong);
  EXPECT_FALSE(Fp8D128::kRowSumInPv);
  EXPECT_TRUE(Half128::kSkipRescale);
  EXPECT_FALSE(Half64::kSkipRescale);
}

}  // namespace
}  // namespace attention_sm90

namespace {

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
