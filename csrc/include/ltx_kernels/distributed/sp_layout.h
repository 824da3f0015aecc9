// The sequence-parallel layouts of one call built from arrays' shapes (distributed_params.h): the
// rules by which the adapter's tensors, as sizes and strides, become SpHeadsParams /
// SpTokensParams and the IPC exchange's layouts. Host only; no CUDA, no torch. Unit-tested in
// tests/cpp/test_sp_layout.cpp.
#pragma once

#include <cstdint>

#include "ltx_kernels/distributed/distributed_params.h"

namespace ltx_kernels {

// A 4-D array of `elem_size`-byte elements: X [B, T, H, D] on the heads side, Y [B, T, Hl, D] on
// the tokens side. Strides in elements; the last dimension is contiguous (or of one element).
struct SpArray {
  char* data;
  int64_t elem_size;
  int64_t size[4];
  int64_t stride[4];
};

// A contiguous [B, T, R, D] array at `data`.
inline SpArray sp_contiguous(char* data, int64_t elem_size, int64_t B, int64_t T, int64_t R, int64_t D) {
  const int64_t sr = D > 1 ? D : 1, st = sr * (R > 1 ? R : 1), sb = st * (T > 1 ? T : 1);
  return SpArray{data, elem_size, {B, T, R, D}, {sb, st, sr, 1}};
}

// [B, T, ...] (nd >= 2) whose dimensions after the first two are contiguous (those of size 1 in
// any stride) as the array [B, T, 1, F], F their product. False when they are not contiguous.
inline bool sp_token_rows(int64_t nd, const int64_t* sizes, const int64_t* strides, char* data,
                          int64_t elem_size, SpArray* out) {
  int64_t F = 1;
  for (int64_t d = nd - 1; d >= 2; --d) {
    if (sizes[d] != 1 && strides[d] != F) return false;
    F *= sizes[d];
  }
  *out = SpArray{data, elem_size, {sizes[0], sizes[1], 1, F}, {strides[0], strides[1], F, 1}};
  return true;
}

// Prefix sums of `n` per-rank token counts into prefix[0..n]: prefix[0] = 0, prefix[s + 1] =
// prefix[s] + tokens[s]. False when a count is negative.
inline bool sp_prefix(const int64_t* tokens, int64_t n, int64_t* prefix) {
  prefix[0] = 0;
  for (int64_t s = 0; s < n; ++s) {
    if (tokens[s] < 0) return false;
    prefix[s + 1] = prefix[s] + tokens[s];
  }
  return true;
}

// X = x split in `world` groups of H / world heads; group bases unset, buf_T = T, t0 = 0.
inline SpHeadsLayout sp_heads_layout(const SpArray& x, int64_t world) {
  SpHeadsLayout l{};
  const int64_t es = x.elem_size;
  l.B = x.size[0], l.T = x.size[1], l.H = x.size[2], l.D = x.size[3], l.W = world;
  l.sb = x.stride[0] * es, l.st = x.stride[1] * es, l.sh = x.stride[2] * es;
  l.buf_T = l.T, l.t0 = 0;
  return l;
}

// Y = y in `world` token segments [prefix[s], prefix[s + 1]) (prefix: world + 1 entries, the
// last one T); segment bases unset, rows per token in the buffer Hl.
inline SpTokensLayout sp_tokens_layout(const SpArray& y, const int64_t* prefix, int64_t world) {
  SpTokensLayout l{};
  const int64_t es = y.elem_size;
  l.B = y.size[0], l.T = y.size[1], l.Hl = y.size[2], l.D = y.size[3], l.W = world;
  l.sb = y.stride[0] * es, l.st = y.stride[1] * es, l.sh = y.stride[2] * es;
  l.seg_hs = l.Hl;
  for (int64_t s = 0; s <= world; ++s) l.prefix[s] = prefix[s];
  return l;
}

// sp_pack_heads / sp_unpack_tokens: x <-> the contiguous all_to_all buffer [world][B, T, H /
// world, D] at buf (group w at buf + w * B T (H / world) D elements).
inline SpHeadsParams sp_heads_params(const SpArray& x, char* buf, int64_t world) {
  SpHeadsParams p{};
  p.layout = sp_heads_layout(x, world);
  p.x = x.data;
  p.elem_size = x.elem_size;
  const SpHeadsLayout& l = p.layout;
  const int64_t group_bytes = l.B * l.T * (l.H / world) * l.D * p.elem_size;
  for (int64_t w = 0; w < world; ++w) p.layout.group[w] = buf + w * group_bytes;
  return p;
}

// sp_pack_tokens / sp_unpack_heads: y <-> the all_to_all buffer at buf, the concatenation of the
// segments [B, T_s, Hl, D] (segment s at buf + B prefix[s] Hl D elements).
inline SpTokensParams sp_tokens_params(const SpArray& y, char* buf, const int64_t* prefix, int64_t world) {
  SpTokensParams p{};
  p.layout = sp_tokens_layout(y, prefix, world);
  p.y = y.data;
  p.elem_size = y.elem_size;
  SpTokensLayout& l = p.layout;
  const int64_t tok_bytes = l.Hl * l.D * p.elem_size;
  for (int64_t s = 0; s < world; ++s) {
    l.seg[s] = buf + l.B * prefix[s] * tok_bytes;
    l.seg_T[s] = prefix[s + 1] - prefix[s];
  }
  return p;
}

// sp_unpack_gather: the all_gather buffer [world][B, t_max, Hl, D] at buf (every rank's share
// padded to t_max tokens) -> y, rank s's first T_s tokens at prefix[s].
inline SpTokensParams sp_gather_params(const SpArray& y, char* buf, const int64_t* prefix, int64_t world,
                                       int64_t t_max) {
  SpTokensParams p{};
  p.layout = sp_tokens_layout(y, prefix, world);
  p.y = y.data;
  p.elem_size = y.elem_size;
  SpTokensLayout& l = p.layout;
  for (int64_t s = 0; s < world; ++s) {
    l.seg[s] = buf + s * l.B * t_max * l.Hl * l.D * p.elem_size;
    l.seg_T[s] = t_max;
  }
  return p;
}

}  // namespace ltx_kernels
