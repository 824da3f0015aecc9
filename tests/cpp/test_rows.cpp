// GoogleTest for common/rows.h's strided_rows and strided_span: when a strided array (a tensor's
// sizes and strides) is read as rows of its last dimension, and the address range it spans. The
// expectations are written from the definition: element (i_0, .., i_{n-1}) at sum i_d stride_d
// must be element c of row r at r * stride + c, for every index.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ltx_kernels/common/rows.h"

using namespace ltx_kernels;

namespace {
// Whether `l` addresses every element of the strided array exactly where the array has it
// (row r = the row-major index of the leading dimensions).
bool addresses_every_element(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                             const RowLayout& l) {
  const int64_t nd = int64_t(sizes.size());
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n == 0) return true;
  std::vector<int64_t> idx(size_t(nd), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t off = 0, row = 0;
    for (int64_t d = 0; d < nd; ++d) off += idx[d] * strides[d];
    for (int64_t d = 0; d + 1 < nd; ++d) row = row * sizes[d] + idx[d];
    if (off != row * l.stride + idx[nd - 1]) return false;
    for (int64_t d = nd - 1; d >= 0; --d) {  // next index, row-major
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
  return true;
}

bool rows_of(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, RowLayout* l) {
  return strided_rows(int64_t(sizes.size()), sizes.data(), strides.data(), l);
}
}  // namespace

TEST(StridedRows, AcceptedLayoutsAddressEveryElement) {
  struct Case {
    std::vector<int64_t> sizes, strides;
    int64_t rows, cols, stride;
  };
  const Case cases[] = {
      {{7}, {1}, 1, 7, 7},                         // 1-D
      {{3, 5}, {5, 1}, 3, 5, 5},                   // contiguous
      {{3, 5}, {8, 1}, 3, 5, 8},                   // padded rows
      {{2, 3, 5}, {24, 8, 1}, 6, 5, 8},            // leading dims collapse to stride 8
      {{2, 1, 3, 5}, {15, 99, 5, 1}, 6, 5, 5},     // a size-1 dim's stride does not count
      {{4, 1}, {3, 17}, 4, 1, 3},                  // one element per row: any last stride
      {{1, 6}, {1000, 1}, 1, 6, 6},                // one row: the row stride is cols
      {{0, 5}, {5, 1}, 0, 5, 5},                   // empty
  };
  for (const Case& c : cases) {
    RowLayout l{};
    ASSERT_TRUE(rows_of(c.sizes, c.strides, &l)) << c.sizes.size();
    EXPECT_EQ(l.rows, c.rows);
    EXPECT_EQ(l.cols, c.cols);
    EXPECT_EQ(l.stride, c.stride);
    EXPECT_TRUE(addresses_every_element(c.sizes, c.strides, l));
  }
}

TEST(StridedRows, RefusesWhatRowsCannotAddress) {
  RowLayout l{-1, -1, -1};
  EXPECT_FALSE(strided_rows(0, nullptr, nullptr, &l));          // a scalar
  EXPECT_FALSE(rows_of({3, 5}, {5, 2}, &l));                    // last stride not 1
  EXPECT_FALSE(rows_of({3, 5}, {1, 3}, &l));                    // transposed
  EXPECT_FALSE(rows_of({2, 3, 5}, {40, 8, 1}, &l));             // leading dims do not collapse
  EXPECT_FALSE(rows_of({3, 5}, {4, 1}, &l));                    // rows would overlap
  EXPECT_FALSE(rows_of({3, 5}, {0, 1}, &l));                    // broadcast rows
  EXPECT_EQ(l.rows, -1);                                        // untouched when refused
}

TEST(StridedSpan, FirstToOnePastLast) {
  const int64_t s2[] = {3, 5}, c2[] = {5, 1}, p2[] = {8, 1}, t2[] = {1, 3};
  EXPECT_EQ(strided_span(2, s2, c2), 15);
  EXPECT_EQ(strided_span(2, s2, p2), 2 * 8 + 4 + 1);  // the padding after the last row is not spanned
  EXPECT_EQ(strided_span(2, s2, t2), 2 + 4 * 3 + 1);
  const int64_t s1[] = {4}, b1[] = {0};
  EXPECT_EQ(strided_span(1, s1, b1), 1);  // broadcast: one element
  EXPECT_EQ(strided_span(0, nullptr, nullptr), 1);  // a scalar
}
