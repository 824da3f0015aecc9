// GoogleTest for the rules the FP8-output adapters apply (quant/fused_fp8_params.h and
// common/fused_norm_util.h): which modulation tables serve x and how the kernels read them, the
// CUDA kernels' whole-16-byte-vector rows and tables, the output row width of each params type,
// and the CUDA path's limits on group sizes and head dims.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ltx_kernels/quant/fused_fp8_params.h"

using namespace ltx_kernels;

namespace {
ModTableKind kind(const std::vector<int64_t>& t, const std::vector<int64_t>& x) {
  return mod_table_kind(int64_t(t.size()), t.data(), int64_t(x.size()), x.data());
}
// An address with the given remainder modulo 16.
const void* at16(uintptr_t rem) { return reinterpret_cast<const void*>(uintptr_t(0x1000) + rem); }
}  // namespace

TEST(ModTable, Kinds) {
  EXPECT_EQ(kind({2, 64}, {2, 7, 64}), ModTableKind::kPerSample);
  EXPECT_EQ(kind({2, 1, 64}, {2, 7, 64}), ModTableKind::kPerSample);
  EXPECT_EQ(kind({2, 1, 1, 64}, {2, 3, 7, 64}), ModTableKind::kPerSample);
  EXPECT_EQ(kind({2, 7, 64}, {2, 7, 64}), ModTableKind::kPerToken);
  EXPECT_EQ(kind({2, 64}, {2, 64}), ModTableKind::kPerToken);  // both readings agree: one row per entry
  EXPECT_EQ(kind({1, 64}, {2, 7, 64}), ModTableKind::kNone);   // no broadcast over the batch
  EXPECT_EQ(kind({2, 2, 64}, {2, 7, 64}), ModTableKind::kNone);
  EXPECT_EQ(kind({2, 1, 64}, {2, 3, 7, 64}), ModTableKind::kNone);  // [B, 1, C] only with x's dims
  EXPECT_EQ(kind({2, 63}, {2, 7, 64}), ModTableKind::kNone);
  EXPECT_EQ(kind({64}, {2, 7, 64}), ModTableKind::kNone);
  EXPECT_EQ(kind({2, 7, 1, 64}, {2, 7, 64}), ModTableKind::kNone);
}

TEST(ModTable, HowTheKernelsReadIt) {
  int data = 0;
  const AnyModTable s = mod_table(&data, 2, 64, ModTableKind::kPerSample, 14, 2);
  EXPECT_EQ(s.data, &data);
  EXPECT_EQ(s.stride, 64);
  EXPECT_EQ(s.rows_per_entry, 7);  // row r of x reads entry r / 7: its sample
  const AnyModTable t = mod_table(&data, 14, 80, ModTableKind::kPerToken, 14, 2);
  EXPECT_EQ(t.stride, 80);
  EXPECT_EQ(t.rows_per_entry, 1);
  EXPECT_EQ(mod_table(&data, 1, 64, ModTableKind::kPerSample, 7, 1).stride, 0);  // one entry: no stride
}

TEST(Fp8VectorRows, AlignedBaseAndWholeVectorStrides) {
  EXPECT_TRUE(fp8_vector_rows(at16(0), 4, 64, 2));
  EXPECT_FALSE(fp8_vector_rows(at16(2), 4, 64, 2));  // base off by one bf16
  EXPECT_FALSE(fp8_vector_rows(at16(8), 1, 64, 4));  // even for one row
  EXPECT_TRUE(fp8_vector_rows(at16(0), 4, 8, 2));    // 8 bf16 = 16 bytes
  EXPECT_FALSE(fp8_vector_rows(at16(0), 4, 12, 2));
  EXPECT_TRUE(fp8_vector_rows(at16(0), 4, 4, 4));    // 4 floats
  EXPECT_FALSE(fp8_vector_rows(at16(0), 4, 6, 4));
  EXPECT_TRUE(fp8_vector_rows(at16(0), 1, 6, 4));    // one row: its stride is never used
  EXPECT_TRUE(fp8_vector_rows(at16(0), 0, 3, 2));
}

TEST(Fp8VectorTables, EveryStrideWholeVectors) {
  EXPECT_TRUE(fp8_vector_tables(at16(0), RopeTableStrides{0, 0, 64}, 4));
  EXPECT_TRUE(fp8_vector_tables(at16(0), RopeTableStrides{128, 32, 4}, 4));
  EXPECT_FALSE(fp8_vector_tables(at16(0), RopeTableStrides{128, 32, 6}, 4));
  EXPECT_FALSE(fp8_vector_tables(at16(0), RopeTableStrides{130, 0, 8}, 2));
  EXPECT_FALSE(fp8_vector_tables(at16(0), RopeTableStrides{0, 12, 8}, 2));
  EXPECT_FALSE(fp8_vector_tables(at16(4), RopeTableStrides{0, 0, 8}, 2));
}

TEST(Fp8OutCols, OutputRowOfEachParamsType) {
  RmsNormFp8Params r{};
  r.op.x.layout = RowLayout{3, 256, 256};
  EXPECT_EQ(fp8_out_cols(r), 256);
  AndMulFp8Params a{};
  a.op.x.layout = RowLayout{3, 512, 512};
  EXPECT_EQ(fp8_out_cols(a), 256);  // x [..., 2d] -> q [..., d]
  RopeFp8Params p{};
  p.op.x.layout = RowLayout{6, 128, 128};
  EXPECT_EQ(fp8_out_cols(p), 128);
}

TEST(FusedFp8CudaLimits, GroupsAndHeadDims) {
  EXPECT_EQ(fused_fp8_cuda_unsupported(2, 4096, 128), nullptr);  // bf16: 16 lanes of 8
  EXPECT_EQ(fused_fp8_cuda_unsupported(4, 4096, 128), nullptr);  // fp32: 32 lanes of 4
  EXPECT_NE(fused_fp8_cuda_unsupported(2, 4096, 100), nullptr);  // not whole vectors
  EXPECT_NE(fused_fp8_cuda_unsupported(2, 4096, 24), nullptr);   // 3 lanes: not a power of two
  EXPECT_NE(fused_fp8_cuda_unsupported(4, 4096, 256), nullptr);  // 64 lanes
  // one scale per token: a group of the whole row, whatever its width in lanes
  EXPECT_EQ(fused_fp8_cuda_unsupported(2, 2048, 2048), nullptr);
  EXPECT_EQ(fused_fp8_cuda_unsupported(2, 8192, 8192), nullptr);
  EXPECT_EQ(fused_fp8_cuda_unsupported(2, 776, 776), nullptr);    // 97 vectors
  EXPECT_NE(fused_fp8_cuda_unsupported(2, 780, 780), nullptr);    // not whole vectors
  EXPECT_NE(fused_fp8_cuda_unsupported(2, 65536, 65536), nullptr);  // wider than 4096 vectors
  EXPECT_NE(fused_fp8_cuda_unsupported(4, 2048, 2048), nullptr);    // the per-token kernel is 16-bit only
  EXPECT_EQ(fused_fp8_cuda_unsupported(4, 128, 128), nullptr);      // a warp's 32 lanes: the group kernel
  EXPECT_TRUE(fused_fp8_cuda_per_row(2, 2048, 2048));
  EXPECT_FALSE(fused_fp8_cuda_per_row(2, 256, 256));   // 32 lanes of 8: the group kernel
  EXPECT_FALSE(fused_fp8_cuda_per_row(2, 2048, 128));
  EXPECT_EQ(fused_fp8_cuda_unsupported(2, 8 * 4096, 128), nullptr);
  EXPECT_NE(fused_fp8_cuda_unsupported(2, 8 * 4096 + 8, 128), nullptr);  // wider than 4096 vectors
  EXPECT_EQ(split_rope_fp8_cuda_unsupported(2, 64), nullptr);
  EXPECT_NE(split_rope_fp8_cuda_unsupported(2, 40), nullptr);  // a 16-byte chunk would straddle the halves
  EXPECT_EQ(split_rope_fp8_cuda_unsupported(4, 40), nullptr);
}
