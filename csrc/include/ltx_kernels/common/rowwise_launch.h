// Launch shapes for memory-bound row-wise kernels (host only, no CUDA): one place that turns a
// problem size into lanes per segment, 16-byte accesses per lane, threads per CTA and grid size.
//
// Why these numbers (H200: ~4.3 TB/s, 132 SMs): to keep HBM busy, each SM needs roughly
// 25-35 KB of loads in flight at all times (bandwidth x latency / SMs). A kernel that issues
// all its loads for a segment before using any of them, and the next segment's loads before
// it computes on the current one, keeps (accesses per lane) x 16 B x 2 per thread in flight:
// with 4 accesses per lane and 768 resident threads (three 256-thread CTAs of up to 80
// registers) that is up to 96 KB per SM, about three times the need, so the loads stay
// saturated even while half the warps are computing or the grid is draining. Four accesses
// per lane (64 bytes) also spread the per-segment work (index arithmetic, reductions, the scale
// and its reciprocal, the scale store) over 32 elements of 2-byte types.
#pragma once

#include <algorithm>
#include <cstdint>

namespace ltx_kernels {

constexpr int kRowwiseThreads = 256;     // threads per CTA of the segment kernels
constexpr int kRowwiseLaneChunks = 4;    // preferred 16-byte accesses per lane per segment
constexpr int kRowwiseMaxLaneChunks = 8; // most a lane holds (beyond: a looping kernel)

// TPG lanes of a warp own one segment (a quantization group, a short row) of `seg_chunks`
// 16-byte accesses, NV each; a warp handles 32 / TPG segments at a time and the grid strides
// over warp-sized batches of segments.
struct SegmentShape {
  int nv = 1;         // accesses per lane: 1, 2, 4 or 8
  int tpg = 1;        // lanes per segment: a power of two <= 32
  int threads = kRowwiseThreads;
  int64_t grid = 1;   // CTAs
  bool in_regs = false;  // false: the segment does not fit (seg_chunks > 32 * 8)
};

// ctas_per_sm: the CTAs of `threads` the kernel keeps resident (its __launch_bounds__); the grid
// is at most one resident wave, so that every warp loops and overlaps its next batch's loads
// with the current batch's arithmetic.
inline SegmentShape segment_shape(int64_t seg_chunks, int64_t segments, int sm_count,
                                  int ctas_per_sm) {
  SegmentShape s;
  seg_chunks = std::max<int64_t>(seg_chunks, 1);
  while (s.tpg < 32 && int64_t(s.tpg) * kRowwiseLaneChunks < seg_chunks) s.tpg *= 2;
  const int64_t per_lane = (seg_chunks + s.tpg - 1) / s.tpg;
  s.in_regs = per_lane <= kRowwiseMaxLaneChunks;
  while (s.nv < per_lane && s.nv < kRowwiseMaxLaneChunks) s.nv *= 2;
  const int64_t per_cta = int64_t(s.threads / 32) * (32 / s.tpg);
  const int64_t want = (std::max<int64_t>(segments, 1) + per_cta - 1) / per_cta;
  s.grid = std::max<int64_t>(1, std::min<int64_t>(want, int64_t(std::max(sm_count, 1)) * ctas_per_sm));
  return s;
}

// Threads of a CTA that gives each of `units` work items one thread: rounded up to whole warps,
// at least one warp, at most `max_threads` (the kernel's limit; the CTA loops beyond it).
inline int warp_rounded_threads(int64_t units, int max_threads) {
  return int(std::min<int64_t>(max_threads, std::max<int64_t>(32, (units + 31) / 32 * 32)));
}

// A CTA owns a tile of `chunks` 16-byte accesses held in registers, `nv` per thread (all loads
// issued before the CTA-wide reduction), one tile per CTA; `max_threads` is the kernel's limit.
struct TileShape {
  int threads = 32;
  int64_t grid = 1;
  bool in_regs = false;
};

inline TileShape tile_shape(int64_t chunks, int64_t tiles, int nv, int max_threads,
                            int64_t max_grid = int64_t(1) << 30) {
  TileShape s;
  const int64_t want = (std::max<int64_t>(chunks, 1) + nv - 1) / nv;
  s.in_regs = want <= max_threads;
  s.threads = warp_rounded_threads(want, max_threads);
  s.grid = std::max<int64_t>(1, std::min<int64_t>(tiles, max_grid));
  return s;
}

// Launch shape of the register-resident row norms (norm/fused_norm.cuh): a row is spread over
// one warp (kWarp: 4 rows per 128-thread CTA, grid-stride over rows) or over one CTA (kBlock:
// ceil(nvec / nv) threads rounded up to a warp), each thread holding `nv` accesses (16 bytes on
// the vector path); rows too wide for registers run kLoop (one 512-thread CTA per row, the
// passes after the first re-read the row from L2). preload: the epilogue's operands (weight,
// bias, scale, shift) are issued with the row instead of after the reduction, so no dependent
// load sits between the reduction and the stores (costs registers).
struct NormShape {
  enum Kind : int { kAuto = 0, kWarp = 1, kBlock = 2, kLoop = 3 };
  int kind = kAuto;
  int nv = 0;
  bool preload = false;
};

constexpr int kNormMaxNv = 16;            // accesses per thread of the widest register shape
constexpr int kNormMaxThreads = 512;      // threads per row of a kBlock shape with nv <= 2
constexpr int kNormMaxThreadsWide = 256;  // ... with nv >= 4

// Threads per CTA of a kBlock shape for a row of `nvec` accesses.
inline int norm_block_threads(int64_t nvec, int nv) {
  return int(((nvec + nv - 1) / nv + 31) / 32 * 32);
}

// Whether the kernels compiled for the vector path (vec16) or the scalar path run shape `s` on
// a row of `nvec` accesses: warp rows nv 1-8 (preload at nv <= 2), block rows nv 1-16 (preload
// at nv <= 4); the scalar path (unaligned or odd sizes) only the preload-free warp shapes and
// block shapes with nv >= 4.
inline bool norm_shape_runs(const NormShape& s, int64_t nvec, bool vec16) {
  const bool pow2 = s.nv == 1 || s.nv == 2 || s.nv == 4 || s.nv == 8 || s.nv == 16;
  switch (s.kind) {
    case NormShape::kWarp:
      return pow2 && s.nv <= 8 && nvec <= int64_t(32) * s.nv && (!s.preload || (vec16 && s.nv <= 2));
    case NormShape::kBlock:
      return pow2 && norm_block_threads(nvec, s.nv) <= (s.nv <= 2 ? kNormMaxThreads : kNormMaxThreadsWide) &&
             (vec16 || s.nv >= 4) && (!s.preload || (vec16 && s.nv <= 4));
    case NormShape::kLoop: return !s.preload;
    default: return false;
  }
}

// A launch shape as the developer setting LTX_KERNELS_NORM_SHAPE names it (common/dev_config.h):
// "" or "auto" (the heuristic's), "loop", or "w" (a warp per row) / "b" (a CTA per row) followed
// by nv = 1, 2, 4, 8 or 16 and optionally "p" (preload). False for anything else. Whether the
// shape runs a given row is norm_shape_runs' (the core refuses a shape that cannot).
inline bool parse_norm_shape(const char* v, NormShape* out) {
  NormShape s;
  int n = 0;
  while (v[n] != '\0') ++n;
  if (n == 0 || (n == 4 && v[0] == 'a' && v[1] == 'u' && v[2] == 't' && v[3] == 'o')) {
    *out = s;
    return true;
  }
  if (n == 4 && v[0] == 'l' && v[1] == 'o' && v[2] == 'o' && v[3] == 'p') {
    s.kind = NormShape::kLoop;
    *out = s;
    return true;
  }
  if (n < 2 || (v[0] != 'w' && v[0] != 'b')) return false;
  s.kind = v[0] == 'w' ? NormShape::kWarp : NormShape::kBlock;
  s.preload = v[n - 1] == 'p';
  const int digits_end = s.preload ? n - 1 : n;
  int nv = 0;
  for (int i = 1; i < digits_end; ++i) {
    if (v[i] < '0' || v[i] > '9' || nv > kNormMaxNv) return false;
    nv = nv * 10 + (v[i] - '0');
  }
  if (digits_end == 1 || (digits_end > 2 && v[1] == '0')) return false;  // no digits, a leading zero
  if (nv != 1 && nv != 2 && nv != 4 && nv != 8 && nv != 16) return false;
  s.nv = nv;
  *out = s;
  return true;
}

// What the launch-shape rule needs to know of a row-norm op.
struct NormOpKind {
  bool layer_norm = false;   // mean-subtracting statistic (two reductions)
  bool residual = false;     // a second row input and a residual output (add_rms_norm, gated)
  bool modulate = false;     // AdaLN scale / shift tables
  bool per_sample = false;   // ... shared by the rows of a sample (else one entry per row)
};

// The smallest `nv` whose CTA of ceil(nvec / nv) threads fits the block shape's limits (one
// access per thread where the row has <= 512, two up to 1024, then 4-16 at <= 256 threads).
inline int norm_spread_nv(int64_t nvec) {
  for (int nv = 1; nv <= kNormMaxNv; nv *= 2) {
    if (norm_block_threads(nvec, nv) <= (nv <= 2 ? kNormMaxThreads : kNormMaxThreadsWide)) return nv;
  }
  return kNormMaxNv;
}

// The shape the row norms run when none is forced. nvec: accesses per row (16 bytes each on
// the vector path, vec16; elements on the scalar path); x_bytes: bytes of the row input x over
// all rows.
//
// The rules come from benchmarks/sweep_norm.py, which times every shape of every op at the
// benchmarks' LTX and LLM sizes beside this pick (docs/design/norm.md); the pick is within a few
// percent of the best shape at every size but rms_norm [32, 4096] (where the looping kernel is
// ahead) and the per-sample AdaLN RMSNorm at [2, 6144, 4096] (where 4 accesses per thread are):
//  - residual ops (add_rms_norm, the gated residual): one access per thread (512 threads for a
//    4096-wide bf16 row), the most loads in flight per row; the residual add with its epilogue
//    operands preloaded; the gated residual with per-sample tables past 32 MB of x in the
//    looping kernel (its rows re-read from L2; faster than one access per thread there);
//  - layer norms and AdaLN: 4 accesses per thread with per-token tables, else 8 from rows of
//    512 accesses (4 below); but the AdaLN RMSNorm with per-token tables up to 32 MB of x at one
//    access per thread, preloaded (faster than 4 at [2, 2688, 2048]);
//  - plain RMS: one access per thread (preloaded) up to 8 MB, else two.
// Rows of <= 32 accesses run a warp each (4 rows per CTA). The scalar path (unaligned or odd
// sizes) keeps 4-16 elements per thread.
inline NormShape norm_shape(int64_t nvec, int64_t x_bytes, const NormOpKind& op, bool vec16) {
  NormShape s;
  if (nvec > int64_t(kNormMaxThreadsWide) * kNormMaxNv) {
    s.kind = NormShape::kLoop;
    return s;
  }
  if (!vec16) {
    if (nvec <= 32 * 8) {
      s.kind = NormShape::kWarp;
      s.nv = nvec <= 32 ? 1 : nvec <= 64 ? 2 : nvec <= 128 ? 4 : 8;
    } else {
      s.kind = NormShape::kBlock;
      s.nv = nvec <= 128 * 4 ? 4 : nvec <= 128 * 8 ? 8 : 16;
    }
    return s;
  }
  if (nvec <= 32) {
    s.kind = NormShape::kWarp;
    s.nv = 1;
    s.preload = true;
    return s;
  }
  s.kind = NormShape::kBlock;
  const int spread = norm_spread_nv(nvec);
  auto at_least = [&](int nv) { return nv > spread ? nv : spread; };
  if (op.residual) {
    if (op.modulate && op.per_sample && x_bytes > (int64_t(32) << 20)) {
      s.kind = NormShape::kLoop;
    } else {
      s.nv = spread;
      s.preload = !op.modulate && s.nv <= 4;  // the residual add
    }
  } else if (op.modulate && !op.per_sample && !op.layer_norm && x_bytes <= (int64_t(32) << 20)) {
    s.nv = spread;  // AdaLN RMSNorm, per-token tables, small: one access per thread, preloaded
    s.preload = s.nv <= 4;
  } else if (op.modulate || op.layer_norm) {
    s.nv = at_least(op.modulate && !op.per_sample ? 4 : nvec >= 512 ? 8 : 4);
  } else {
    s.nv = at_least(x_bytes <= (int64_t(8) << 20) && nvec <= 512 ? 1 : 2);
    s.preload = s.nv <= 2;
  }
  return s;
}

// ---- the other row kernels' shapes --------------------------------------------------------

constexpr int64_t kRowwiseMaxGrid = int64_t(1) << 30;  // more rows: the kernels' grid-stride loops

// A row held in registers by one warp (kWarp: 4 rows per 128-thread CTA) or one CTA (kBlock:
// `threads`, a multiple of 32), `nv` accesses per thread; kLoop: a looping kernel of `threads`
// per row; kNone: no kernel takes the row.
struct RowRegShape {
  enum Kind : int { kNone = 0, kWarp = 1, kBlock = 2, kLoop = 3 };
  int kind = kNone;
  int nv = 0;
  int threads = 0;
};

inline RowRegShape row_reg_warp(int nv) { return RowRegShape{RowRegShape::kWarp, nv, 128}; }
inline RowRegShape row_reg_block(int64_t nvec, int nv) {
  return RowRegShape{RowRegShape::kBlock, nv, norm_block_threads(nvec, nv)};
}

// The FP8-output rows (quant/fused_fp8.cuh), nvec 16-byte accesses per row: a warp per row up to
// 128 accesses (4 per lane), else a CTA of <= 256 threads with 4 accesses each, else 16 (some
// 16-access kernels spill a little (ptxas -v); used only past 1024 accesses, > 8192 bf16
// columns). Three shapes only: every op x dtype instantiates all of them.
inline RowRegShape fp8_rows_shape(int64_t nvec) {
  if (nvec <= 128) return row_reg_warp(4);
  if (nvec <= 256 * 4) return row_reg_block(nvec, 4);
  if (nvec <= 256 * 16) return row_reg_block(nvec, 16);
  return RowRegShape{};
}

// The RMSNorm + RoPE rows (rope/rope.cuh), nch chunks per row; a split chunk is two accesses
// (its pair's other half), so split rows hold half the chunks per thread for the same registers.
// A warp per row up to 256 accesses (2, 4 or 8 per lane: the fewest that hold the row), a CTA
// up to 4096 (4, 8 or 16 per thread: <= 128 threads, 256 for 16), else the looping kernel.
inline RowRegShape norm_rope_shape(int64_t nch, bool split) {
  const int s = split ? 2 : 1;
  if (nch <= 32 * 8 / s) {
    const int64_t per_lane = (nch + 31) / 32;
    return row_reg_warp(per_lane <= 2 / s ? 2 / s : per_lane <= 4 / s ? 4 / s : 8 / s);
  }
  if (nch <= 256 * 16 / s)
    return row_reg_block(nch, nch <= 128 * 4 / s ? 4 / s : nch <= 128 * 8 / s ? 8 / s : 16 / s);
  return RowRegShape{RowRegShape::kLoop, 0, 512};
}

// Strided rows of an element-wise kernel (activation/activation.cuh): tx threads per row (a
// power of two, enough that each makes about one pass of `unroll` accesses), ty = threads / tx
// rows per CTA.
struct RowTileShape {
  int tx = 1;
  int ty = 1;
  int64_t grid = 1;
};

inline RowTileShape row_tile_shape(int64_t rows, int64_t nvec, int unroll, int threads = kRowwiseThreads) {
  RowTileShape t;
  const int64_t per_thread_row = (nvec + unroll - 1) / unroll;
  while (t.tx < per_thread_row && t.tx < threads) t.tx <<= 1;
  t.ty = threads / t.tx;
  t.grid = std::max<int64_t>(std::min<int64_t>((rows + t.ty - 1) / t.ty, kRowwiseMaxGrid), 1);
  return t;
}

// A dense array of nvec accesses, `unroll` per thread per pass: CTAs for one pass (at most
// kRowwiseMaxGrid; grid-stride beyond).
inline int64_t flat_grid(int64_t nvec, int unroll, int threads = kRowwiseThreads) {
  const int64_t per_block = int64_t(threads) * unroll;
  return std::max<int64_t>(1, std::min<int64_t>((nvec + per_block - 1) / per_block, kRowwiseMaxGrid));
}

// The dequantizer (quant/fp8.cuh): `cpr` 16-byte chunks per row, `cpt` per thread; threads for
// the row in one pass (a multiple of 32, <= 256), gx CTAs along a row, gy along the rows (each
// <= 65535, grid-stride beyond).
struct DequantShape {
  int threads = 32;
  int64_t gx = 1, gy = 1;
};

inline DequantShape dequant_shape(int64_t rows, int64_t cpr, int cpt) {
  DequantShape d;
  const int64_t want = (cpr + cpt - 1) / cpt;
  d.threads = warp_rounded_threads(want, kRowwiseThreads);
  d.gx = std::min<int64_t>((cpr + int64_t(d.threads) * cpt - 1) / (int64_t(d.threads) * cpt), 65535);
  d.gy = std::min<int64_t>(rows, 65535);
  return d;
}

// n / d for 0 <= n, d < 2^31 by a multiply-high, an add and a shift (Granlund-Montgomery):
// with k = ceil(log2 d) and m = floor(2^32 (2^k - d) / d) + 1, n / d = (umulhi(n, m) + n) >> k.
struct FastDiv32 {
  uint32_t d = 1, m = 1;
  int k = 0;
};
inline FastDiv32 make_fast_div32(uint32_t d) {
  FastDiv32 f;
  f.d = d;
  f.k = 0;
  while ((uint64_t(1) << f.k) < d) ++f.k;
  f.m = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << f.k) - d)) / d + 1);
  return f;
}
#if defined(__CUDACC__)
// n / f.d for n < 2^31 (umulhi(n, m) < n: the sum fits 32 bits).
__device__ __forceinline__ uint32_t fast_div(uint32_t n, const FastDiv32& f) {
  return (__umulhi(n, f.m) + n) >> f.k;
}
#endif

}  // namespace ltx_kernels
