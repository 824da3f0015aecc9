#include <cstring>

#include "ltx_kernels/cpu/ops.h"

namespace ltx_kernels {
namespace cpu {
namespace {

constexpr int64_t kGrain = 64;  // tokens per task

// X [B, T, H, D] <-> head groups over tokens [tok_begin, tok_end) of B * T (b * T + t).
void heads_copy(const SpHeadsLayout& l, char* x, int64_t elem_size, bool to_buf,
                   int64_t tok_begin, int64_t tok_end) {
  const int64_t row = l.D * elem_size;
  const int64_t Hl = l.H / l.W;
  for (int64_t tok = tok_begin; tok < tok_end; ++tok) {
    const int64_t b = tok / l.T, t = tok - b * l.T;
    const int64_t brow = (b * l.buf_T + l.t0 + t) * Hl;
    for (int64_t h = 0; h < l.H; ++h) {
      const int64_t w = h / Hl, hl = h - w * Hl;
      char* xp = x + b * l.sb + t * l.st + h * l.sh;
      char* bp = l.group[w] + (brow + hl) * row;
      if (to_buf) std::memcpy(bp, xp, size_t(row));
      else std::memcpy(xp, bp, size_t(row));
    }
  }
}

// Y [B, T_total, Hl, D] <-> token segments over tokens [tok_begin, tok_end) of B * T_total.
void tokens_copy(const SpTokensLayout& l, char* y, int64_t elem_size, bool to_buf,
                    int64_t tok_begin, int64_t tok_end) {
  const int64_t row = l.D * elem_size;
  for (int64_t tok = tok_begin; tok < tok_end; ++tok) {
    const int64_t b = tok / l.T, tt = tok - b * l.T;
    int64_t s = 0;  // the segment holding token tt: prefix[s] <= tt < prefix[s + 1]
    while (s + 1 < l.W && l.prefix[s + 1] <= tt) ++s;
    const int64_t t = tt - l.prefix[s];
    char* seg_tok = l.seg[s] + (b * l.seg_T[s] + t) * l.seg_hs * row;
    for (int64_t hl = 0; hl < l.Hl; ++hl) {
      char* yp = y + b * l.sb + tt * l.st + hl * l.sh;
      char* bp = seg_tok + hl * row;
      if (to_buf) std::memcpy(bp, yp, size_t(row));
      else std::memcpy(yp, bp, size_t(row));
    }
  }
}

void heads(const SpHeadsParams& p, bool to_buf, const ParallelFor& parallel_for) {
  const SpHeadsLayout& l = p.layout;
  parallel_for(l.B * l.T, kGrain, [&](int64_t b, int64_t e) { heads_copy(l, p.x, p.elem_size, to_buf, b, e); });
}

void tokens(const SpTokensParams& p, bool to_buf, const ParallelFor& parallel_for) {
  const SpTokensLayout& l = p.layout;
  parallel_for(l.B * l.T, kGrain, [&](int64_t b, int64_t e) { tokens_copy(l, p.y, p.elem_size, to_buf, b, e); });
}

}  // namespace

void sp_pack_heads(const SpHeadsParams& p, const ParallelFor& parallel_for) { heads(p, true, parallel_for); }
void sp_unpack_tokens(const SpHeadsParams& p, const ParallelFor& parallel_for) { heads(p, false, parallel_for); }
void sp_pack_tokens(const SpTokensParams& p, const ParallelFor& parallel_for) { tokens(p, true, parallel_for); }
void sp_unpack_heads(const SpTokensParams& p, const ParallelFor& parallel_for) { tokens(p, false, parallel_for); }
void sp_unpack_gather(const SpTokensParams& p, const ParallelFor& parallel_for) { tokens(p, false, parallel_for); }

}  // namespace cpu
}  // namespace ltx_kernels
