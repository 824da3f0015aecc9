// CPU backend of neighborhood attention: one query at a time, explicit window, fp32 scores,
// softmax with double sums, fp32 output accumulation.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ltx_kernels/cpu/ops.h"

namespace ltx_kernels {
namespace cpu {

namespace {

// Window [lo, lo + len) of query position i on one axis.
inline void window(int i, int n, int k, bool causal, int& lo, int& len) {
  if (causal) {
    lo = std::max(i - k + 1, 0);
    len = i - lo + 1;
  } else {
    lo = std::min(std::max(i - k / 2, 0), n - k);
    len = k;
  }
}

constexpr int64_t kGrain = 16;  // queries per task

// Queries [q_begin, q_end) of the flattened (batch, head, S0, S1, S2) index space of one
// dilation-1 problem.
template <typename T>
void natten_queries(const NattenParams& g, int64_t q_begin, int64_t q_end) {
  const NattenProblem& p = g.problem;
  const NattenStrides &os = g.os, &qs = g.qs, &ks = g.ks, &vs = g.vs;
  T* out = static_cast<T*>(g.out);
  const T* q = static_cast<const T*>(g.q);
  const T* k = static_cast<const T*>(g.k);
  const T* v = static_cast<const T*>(g.v);
  const int d = p.dim;
  const int64_t n0 = p.size[0], n1 = p.size[1], n2 = p.size[2];
  std::vector<float> qf(d), acc(d), scores;
  scores.reserve(size_t(p.kernel[0]) * p.kernel[1] * p.kernel[2]);
  for (int64_t idx = q_begin; idx < q_end; ++idx) {
    // idx = (((b * heads + h) * n0 + i0) * n1 + i1) * n2 + i2
    int64_t r = idx;
    const int i2 = int(r % n2);
    r /= n2;
    const int i1 = int(r % n1);
    r /= n1;
    const int i0 = int(r % n0);
    r /= n0;
    const int64_t h = r % p.heads;
    const int64_t b = r / p.heads;
    const T* qp = q + b * qs.batch + i0 * qs.s0 + i1 * qs.s1 + i2 * qs.s2 + h * qs.head;
    for (int c = 0; c < d; ++c) qf[c] = to_float(qp[c]);
    int lo[3], len[3];
    const int pos[3] = {i0, i1, i2};
    for (int a = 0; a < 3; ++a) window(pos[a], p.size[a], p.kernel[a], p.causal[a], lo[a], len[a]);
    const T* kb = k + b * ks.batch + h * ks.head;
    const T* vb = v + b * vs.batch + h * vs.head;
    scores.clear();
    float mx = -INFINITY;
    for (int j0 = lo[0]; j0 < lo[0] + len[0]; ++j0)
      for (int j1 = lo[1]; j1 < lo[1] + len[1]; ++j1)
        for (int j2 = lo[2]; j2 < lo[2] + len[2]; ++j2) {
          const T* kp = kb + j0 * ks.s0 + j1 * ks.s1 + j2 * ks.s2;
          float s = 0.f;
          for (int c = 0; c < d; ++c) s += qf[c] * to_float(kp[c]);
          s *= p.scale;
          scores.push_back(s);
          mx = std::max(mx, s);
        }
    double sum = 0.0;
    for (float& s : scores) {
      s = std::exp(s - mx);
      sum += s;
    }
    std::fill(acc.begin(), acc.end(), 0.f);
    size_t n = 0;
    for (int j0 = lo[0]; j0 < lo[0] + len[0]; ++j0)
      for (int j1 = lo[1]; j1 < lo[1] + len[1]; ++j1)
        for (int j2 = lo[2]; j2 < lo[2] + len[2]; ++j2) {
          const T* vp = vb + j0 * vs.s0 + j1 * vs.s1 + j2 * vs.s2;
          const float w = scores[n++];
          for (int c = 0; c < d; ++c) acc[c] += w * to_float(vp[c]);
        }
    const float inv = float(1.0 / sum);
    T* op = out + b * os.batch + i0 * os.s0 + i1 * os.s1 + i2 * os.s2 + h * os.head;
    for (int c = 0; c < d; ++c) op[c] = from_float<T>(acc[c] * inv);
  }
}

}  // namespace

void natten_forward(const NattenParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    for (int g0 = 0; g0 < p.dilation[0]; ++g0)
      for (int g1 = 0; g1 < p.dilation[1]; ++g1)
        for (int g2 = 0; g2 < p.dilation[2]; ++g2) {
          const NattenParams g = natten_residue_group(p, {g0, g1, g2});
          const NattenProblem& gp = g.problem;
          const int64_t queries = gp.batch * gp.heads * int64_t(gp.size[0]) * gp.size[1] * gp.size[2];
          parallel_for(queries, kGrain, [&](int64_t b, int64_t e) { natten_queries<T>(g, b, e); });
        }
  });
}

}  // namespace cpu
}  // namespace ltx_kernels
