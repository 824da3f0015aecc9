// GoogleTest for the sequence-parallel layouts built from shapes (distributed/sp_layout.h) and
// the IPC exchanges' plans (distributed/sp_ipc_plan.h). The pack / unpack params run through the
// CPU backend and every element is compared with the definition of distributed_params.h: the
// all_to_all buffer [W][B, T, H / W, D] holds X[b, t, w H/W + hl, :] at group w, (b, t, hl);
// the concatenated buffer holds Y[b, prefix[s] + t, hl, :] at segment s, (b, t, hl).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ltx_kernels/cpu/ops.h"
#include "ltx_kernels/distributed/sp_ipc_plan.h"
#include "ltx_kernels/distributed/sp_layout.h"

using namespace ltx_kernels;

namespace {
// A 4-D array of uint16 over a padded allocation: element (b, t, h, d) at the given strides,
// value 1 + its row-major index (the padding stays 0).
struct Array4 {
  int64_t size[4], stride[4];
  std::vector<uint16_t> mem;
  Array4(std::initializer_list<int64_t> sizes, int64_t pad_d) {
    std::copy(sizes.begin(), sizes.end(), size);
    stride[3] = 1;
    stride[2] = size[3] + pad_d;
    stride[1] = stride[2] * size[2];
    stride[0] = stride[1] * size[1];
    mem.assign(size_t(stride[0] * size[0]), 0);
  }
  uint16_t& at(int64_t b, int64_t t, int64_t h, int64_t d) {
    return mem[size_t(b * stride[0] + t * stride[1] + h * stride[2] + d)];
  }
  void fill() {
    uint16_t v = 1;
    for (int64_t b = 0; b < size[0]; ++b)
      for (int64_t t = 0; t < size[1]; ++t)
        for (int64_t h = 0; h < size[2]; ++h)
          for (int64_t d = 0; d < size[3]; ++d) at(b, t, h, d) = v++;
  }
  SpArray array() {
    return SpArray{reinterpret_cast<char*>(mem.data()), 2, {size[0], size[1], size[2], size[3]},
                   {stride[0], stride[1], stride[2], stride[3]}};
  }
};
}  // namespace

TEST(SpLayout, Prefix) {
  const int64_t tokens[] = {3, 0, 5};
  int64_t p[4];
  ASSERT_TRUE(sp_prefix(tokens, 3, p));
  EXPECT_EQ(p[0], 0);
  EXPECT_EQ(p[1], 3);
  EXPECT_EQ(p[2], 3);
  EXPECT_EQ(p[3], 8);
  const int64_t bad[] = {3, -1};
  EXPECT_FALSE(sp_prefix(bad, 2, p));
}

TEST(SpLayout, ContiguousAndTokenRows) {
  const SpArray c = sp_contiguous(nullptr, 2, 2, 3, 1, 5);
  EXPECT_EQ(c.stride[0], 15);
  EXPECT_EQ(c.stride[1], 5);
  EXPECT_EQ(c.stride[2], 5);
  EXPECT_EQ(c.stride[3], 1);
  SpArray o{};
  const int64_t sizes[] = {2, 3, 4, 5}, strides[] = {100, 30, 5, 1};  // rows of 20 padded to 30
  ASSERT_TRUE(sp_token_rows(4, sizes, strides, nullptr, 2, &o));
  EXPECT_EQ(o.size[2], 1);
  EXPECT_EQ(o.size[3], 20);
  EXPECT_EQ(o.stride[0], 100);
  EXPECT_EQ(o.stride[1], 30);
  EXPECT_EQ(o.stride[2], 20);
  const int64_t s1[] = {2, 3, 1, 5}, st1[] = {100, 30, 77, 1};  // a size-1 dim in any stride
  ASSERT_TRUE(sp_token_rows(4, s1, st1, nullptr, 2, &o));
  EXPECT_EQ(o.size[3], 5);
  const int64_t st2[] = {100, 30, 6, 1};  // [4, 5] rows of 6: not contiguous
  EXPECT_FALSE(sp_token_rows(4, sizes, st2, nullptr, 2, &o));
  const int64_t s2[] = {2, 3}, st3[] = {3, 1};  // [B, T]: one element per token
  ASSERT_TRUE(sp_token_rows(2, s2, st3, nullptr, 2, &o));
  EXPECT_EQ(o.size[3], 1);
}

TEST(SpLayout, HeadsRoundTripThroughTheCpuBackend) {
  const int64_t B = 2, T = 3, H = 6, D = 5, W = 3, Hl = H / W;
  Array4 x({B, T, H, D}, 3);  // padded rows: strides the packed buffer does not have
  x.fill();
  std::vector<uint16_t> buf(size_t(B * T * H * D), 0);
  const SpHeadsParams p = sp_heads_params(x.array(), reinterpret_cast<char*>(buf.data()), W);
  cpu::sp_pack_heads(p, cpu::serial_for);
  for (int64_t w = 0; w < W; ++w)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t hl = 0; hl < Hl; ++hl)
          for (int64_t d = 0; d < D; ++d)
            ASSERT_EQ(buf[size_t((((w * B + b) * T + t) * Hl + hl) * D + d)], x.at(b, t, w * Hl + hl, d));
  Array4 back({B, T, H, D}, 1);
  cpu::sp_unpack_tokens(sp_heads_params(back.array(), reinterpret_cast<char*>(buf.data()), W), cpu::serial_for);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) ASSERT_EQ(back.at(b, t, h, d), x.at(b, t, h, d));
}

TEST(SpLayout, TokensRoundTripThroughTheCpuBackend) {
  const int64_t tokens[] = {2, 0, 3}, W = 3, B = 2, Hl = 2, D = 3;
  int64_t prefix[4];
  ASSERT_TRUE(sp_prefix(tokens, W, prefix));
  const int64_t Tt = prefix[W];
  Array4 y({B, Tt, Hl, D}, 2);
  y.fill();
  std::vector<uint16_t> buf(size_t(B * Tt * Hl * D), 0);
  cpu::sp_pack_tokens(sp_tokens_params(y.array(), reinterpret_cast<char*>(buf.data()), prefix, W), cpu::serial_for);
  for (int64_t s = 0; s < W; ++s)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < tokens[s]; ++t)
        for (int64_t hl = 0; hl < Hl; ++hl)
          for (int64_t d = 0; d < D; ++d)
            ASSERT_EQ(buf[size_t(B * prefix[s] * Hl * D + ((b * tokens[s] + t) * Hl + hl) * D + d)],
                      y.at(b, prefix[s] + t, hl, d));
  Array4 back({B, Tt, Hl, D}, 0);
  cpu::sp_unpack_heads(sp_tokens_params(back.array(), reinterpret_cast<char*>(buf.data()), prefix, W),
                       cpu::serial_for);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < Tt; ++t)
      for (int64_t hl = 0; hl < Hl; ++hl)
        for (int64_t d = 0; d < D; ++d) ASSERT_EQ(back.at(b, t, hl, d), y.at(b, t, hl, d));
}

TEST(SpLayout, GatherFromPaddedShares) {
  const int64_t tokens[] = {1, 3}, W = 2, B = 2, F = 4, Tmax = 3;
  int64_t prefix[3];
  ASSERT_TRUE(sp_prefix(tokens, W, prefix));
  std::vector<uint16_t> buf(size_t(W * B * Tmax * F));  // [W][B, Tmax, F], rank s's first T_s tokens valid
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = uint16_t(i + 1);
  Array4 y({B, prefix[W], 1, F}, 0);
  cpu::sp_unpack_gather(sp_gather_params(y.array(), reinterpret_cast<char*>(buf.data()), prefix, W, Tmax),
                        cpu::serial_for);
  for (int64_t s = 0; s < W; ++s)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < tokens[s]; ++t)
        for (int64_t f = 0; f < F; ++f)
          ASSERT_EQ(y.at(b, prefix[s] + t, 0, f), buf[size_t(((s * B + b) * Tmax + t) * F + f)]);
}

namespace {
struct Strided {
  std::vector<int64_t> size, stride;
  char* data;
  SpStrided view() const { return SpStrided{data, 2, int64_t(size.size()), size.data(), stride.data()}; }
};

Strided contiguous(std::vector<int64_t> size, char* data) {
  std::vector<int64_t> stride(size.size(), 1);
  for (int64_t d = int64_t(size.size()) - 2; d >= 0; --d) stride[d] = stride[d + 1] * size[d + 1];
  return Strided{size, stride, data};
}

using Plan = std::string (*)(const SpStrided&, const SpStrided&, const int64_t*, int64_t, double, SpIpcParams*);

// One call of a plan (2-byte elements) on rank 1 of 3, by default with tokens {4, 5, 2}, a 1 s
// timeout and 1 MB per rank.
struct Call {
  Strided in, out;
  std::vector<int64_t> tokens = {4, 5, 2};
  double timeout = 1.0;
  int64_t nbytes = 1 << 20;
};

std::string plan(Plan f, const Call& c, SpIpcParams* p) {
  *p = SpIpcParams{};
  p->comm.device = 0;
  p->comm.rank = 1;
  p->comm.world = 3;
  p->comm.nbytes = c.nbytes;
  return f(c.in.view(), c.out.view(), c.tokens.data(), int64_t(c.tokens.size()), c.timeout, p);
}

// Each call is refused with its message.
void expect_refused(Plan f, const std::vector<std::pair<Call, std::string>>& calls) {
  for (const auto& [call, message] : calls) {
    SpIpcParams p;
    EXPECT_EQ(plan(f, call, &p), message);
  }
}
}  // namespace

TEST(SpIpcPlan, SendRecvHeads) {
  char xb = 0, ob = 0;
  const Strided x = contiguous({2, 5, 6, 8}, &xb), out = contiguous({2, 11, 2, 8}, &ob);
  SpIpcParams p;
  ASSERT_EQ(plan(sp_ipc_plan_send_recv_heads, {x, out, {4, 5, 2}, 1.5}, &p), "");
  EXPECT_EQ(p.timeout_ns, 1500000000u);
  EXPECT_EQ(p.elem_size, 2);
  EXPECT_EQ(p.prefix[1], 4);
  EXPECT_EQ(p.prefix[3], 11);
  EXPECT_EQ(p.in, &xb);
  EXPECT_EQ(p.in_heads.W, 3);
  EXPECT_EQ(p.in_heads.T, 5);
  EXPECT_EQ(p.in_heads.sb, 5 * 6 * 8 * 2);
  EXPECT_EQ(p.in_heads.sh, 16);
  EXPECT_EQ(p.out_base, &ob);
  EXPECT_EQ(p.out.W, 1);
  EXPECT_EQ(p.out.T, 11);
  EXPECT_EQ(p.out.prefix[1], 11);
  EXPECT_EQ(p.out.Hl, 2);
  EXPECT_EQ(p.out.st, 2 * 8 * 2);

  Strided out_last_strided = out;
  out_last_strided.stride = {176, 16, 1, 2};
  expect_refused(sp_ipc_plan_send_recv_heads,
                 {{{x, out, {4, 5}}, "tokens must list one count per rank (3) (got 2)"},
                  {{x, out, {4, 5, 2}, 0.0}, "timeout must be > 0 s (got 0)"},
                  {{x, out, {4, 5, -2}}, "token counts must be >= 0 (got [4, 5, -2])"},
                  {{contiguous({2, 5, 7, 8}, &xb), out},
                   "heads H = x.shape[2] must be divisible by world (got H = 7, world = 3)"},
                  {{contiguous({2, 4, 6, 8}, &xb), out}, "x.shape[1] must be this rank's token count 5 (got 4)"},
                  {{x, contiguous({2, 11, 16}, &ob)},
                   "out must be 4-D [B, T_total, H / world, D] (got shape [2, 11, 16])"},
                  {{x, contiguous({2, 11, 2, 9}, &ob)}, "out must have shape [2, 11, 2, 8] (got [2, 11, 2, 9])"},
                  {{x, out_last_strided}, "out must have stride 1 in its last dimension (got strides [176, 16, 1, 2])"},
                  {{x, out, {4, 5, 2}, 1.0, 100},
                   "the call needs a receive buffer of 704 bytes but the communicator holds 100 (raise max_tokens)"}});
}

TEST(SpIpcPlan, GatherHeads) {
  char yb = 0, ob = 0;
  const Strided y = contiguous({2, 11, 2, 8}, &yb), out = contiguous({2, 5, 6, 8}, &ob);
  SpIpcParams p;
  ASSERT_EQ(plan(sp_ipc_plan_gather_heads, {y, out}, &p), "");
  EXPECT_EQ(p.in, &yb);
  EXPECT_EQ(p.in_tokens.W, 3);
  EXPECT_EQ(p.in_tokens.T, 11);
  EXPECT_EQ(p.in_tokens.prefix[2], 9);
  EXPECT_EQ(p.out.T, 5);
  EXPECT_EQ(p.out.Hl, 6);
  expect_refused(sp_ipc_plan_gather_heads,
                 {{{contiguous({2, 10, 2, 8}, &yb), out}, "y.shape[1] must be sum(tokens) = 11 (got 10)"},
                  {{y, contiguous({2, 4, 6, 8}, &ob)}, "out must have shape [2, 5, 6, 8] (got [2, 4, 6, 8])"},
                  // the largest share (5 tokens) must fit
                  {{y, out, {4, 5, 2}, 1.0, 2 * 5 * 6 * 8 * 2 - 1},
                   "the call needs a receive buffer of 960 bytes but the communicator holds 959 (raise max_tokens)"}});
}

TEST(SpIpcPlan, AllGather) {
  char xb = 0, ob = 0;
  const Strided x = contiguous({2, 5, 3, 7}, &xb), out = contiguous({2, 11, 3, 7}, &ob);
  SpIpcParams p;
  ASSERT_EQ(plan(sp_ipc_plan_all_gather, {x, out}, &p), "");
  EXPECT_EQ(p.in_tokens.W, 1);
  EXPECT_EQ(p.in_tokens.T, 5);
  EXPECT_EQ(p.in_tokens.Hl, 1);
  EXPECT_EQ(p.in_tokens.D, 21);
  EXPECT_EQ(p.in_tokens.st, 21 * 2);
  EXPECT_EQ(p.out.T, 11);
  EXPECT_EQ(p.out.D, 21);
  EXPECT_EQ(p.out.sb, 11 * 21 * 2);
  Strided out_not_contiguous = out;
  out_not_contiguous.stride = {231, 21, 1, 3};
  expect_refused(sp_ipc_plan_all_gather,
                 {{{x, contiguous({2, 11, 21}, &ob)}, "out must have shape [2, 11, 3, 7] (got [2, 11, 21])"},
                  {{x, out_not_contiguous}, "out must be contiguous (got strides [231, 21, 1, 3])"},
                  {{contiguous({2, 4, 3, 7}, &xb), out}, "x.shape[1] must be this rank's token count 5 (got 4)"}});
  // empty: nothing to copy
  ASSERT_EQ(plan(sp_ipc_plan_all_gather, {contiguous({0, 5, 3, 7}, &xb), contiguous({0, 11, 3, 7}, &ob)}, &p), "");
  EXPECT_EQ(p.in_tokens.B * p.in_tokens.T * p.in_tokens.Hl * p.in_tokens.D, 0);
}
