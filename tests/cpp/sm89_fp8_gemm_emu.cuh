// Host emulator for the sm_89 FP8/FP6 GEMM tile body (sm89_fp8_gemm.cuh): a check of the
// kernel's index arithmetic that runs WITHOUT a GPU. A test harness, not part of the library
// (nothing in csrc includes it); build and run it by hand from the repository root:
//   printf '#include "sm89_fp8_gemm_emu.cuh"\nint main(int c, char** v) { return ltx_kernels::gemm_sm89::emu::selftest_main(c, v); }\n' > /tmp/emu.cu
//   nvcc -std=c++17 -O2 --expt-relaxed-constexpr -Icsrc/include -Itests/cpp /tmp/emu.cu -o /tmp/emu -lpthread && /tmp/emu
// It runs the kernel's own gemm_tile<> body with a HostOps policy: ldmatrix and mma.sync emulated
// from the PTX ISA fragment tables (layout_check::ptx_*), one std::thread per CUDA thread, real
// barriers (CTA and per warp); cp.async either immediate (exposes a ring slot overwritten while
// still read) or deferred to the matching wait_group (exposes a missing wait). Each case is
// compared with a double-precision reference; every global read is bounds-checked and nothing
// outside D[:M, :N] may be written (sentinel border). A real GPU run is still needed: this checks
// indices, not the hardware or the compiler.
#pragma once

#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "ltx_kernels/gemm/sm89_fp8_gemm.cuh"

namespace ltx_kernels {
namespace gemm_sm89 {
namespace emu {

using ltx_kernels::gemm::Fp8BlockwiseGemmArgs;
using ltx_kernels::gemm::GemmOut;

inline void fail(const char* msg) {
  fprintf(stderr, "EMU FAIL: %s\n", msg);
  std::abort();
}

struct Barrier {
  std::mutex m;
  std::condition_variable cv;
  int n = 0, count = 0;
  long gen = 0;
  void wait() {
    std::unique_lock<std::mutex> l(m);
    const long g0 = gen;
    if (++count == n) {
      count = 0;
      ++gen;
      cv.notify_all();
    } else {
      cv.wait(l, [&] { return gen != g0; });
    }
  }
};

struct Range {
  const uint8_t* lo;
  const uint8_t* hi;
};

struct Cta {
  Barrier cta;
  Barrier warp[8];
  const uint8_t* addr[8][32];
  uint32_t fa[8][32][4];
  uint32_t fb[8][32][2];
  bool deferred = false;
  uint8_t* smem_lo = nullptr;
  uint8_t* smem_hi = nullptr;
  std::vector<Range> global;
  Cta() {
    cta.n = 256;
    for (auto& w : warp) w.n = 32;
  }
};

// inverse PTX maps: A(row, k) -> (lane, element), B(k, n) -> (lane, element)
inline int a_inv[16][32][2], b_inv[32][8][2];
inline void build_inverse() {
  using namespace layout_check;
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 16; ++i) {
      a_inv[ptx_a_row(l, i)][ptx_a_k(l, i)][0] = l;
      a_inv[ptx_a_row(l, i)][ptx_a_k(l, i)][1] = i;
    }
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 8; ++i) {
      b_inv[ptx_b_k(l, i)][ptx_b_n(l, i)][0] = l;
      b_inv[ptx_b_k(l, i)][ptx_b_n(l, i)][1] = i;
    }
}
inline float dec(uint8_t b) { return minifloat_decode<E4M3>(b); }
inline uint8_t byte_of(const uint32_t* regs, int i) { return uint8_t(regs[i >> 2] >> (8 * (i & 3))); }

struct HostOps {
  Cta* e;
  int tid;
  struct Copy {
    uint8_t* dst;
    const uint8_t* src;
    int bytes;
  };
  std::vector<std::vector<Copy>> groups;
  std::vector<Copy> cur;

  void do_copy(const Copy& c) {
    if (c.bytes) memcpy(c.dst, c.src, 16);
    else memset(c.dst, 0, 16);
  }
  void cp_async(uint8_t* dst, const void* src, int bytes) {
    const uint8_t* s = static_cast<const uint8_t*>(src);
    if (dst < e->smem_lo || dst + 16 > e->smem_hi || (uintptr_t(dst) & 15)) fail("cp.async dst");
    if (bytes != 0 && bytes != 16) fail("cp.async bytes");
    if (bytes) {
      if (uintptr_t(s) & 15) fail("cp.async src misaligned");
      bool in = false;
      for (auto& r : e->global) in |= (s >= r.lo && s + 16 <= r.hi);
      if (!in) fail("cp.async src out of bounds");
    }
    Copy c{dst, s, bytes};
    if (e->deferred) cur.push_back(c);
    else do_copy(c);
  }
  void commit() {
    groups.push_back(cur);
    cur.clear();
  }
  template <int N>
  void wait() {
    while (int(groups.size()) > N) {
      for (auto& c : groups.front()) do_copy(c);
      groups.erase(groups.begin());
    }
  }
  void sync() { e->cta.wait(); }
  void ldsm(uint32_t (&r)[4], const uint8_t* row) {
    const int w = tid >> 5, l = tid & 31;
    if (row < e->smem_lo || row + 16 > e->smem_hi || (uintptr_t(row) & 15)) fail("ldmatrix addr");
    e->addr[w][l] = row;
    e->warp[w].wait();
    for (int j = 0; j < 4; ++j) memcpy(&r[j], e->addr[w][8 * j + (l >> 2)] + 4 * (l & 3), 4);
    e->warp[w].wait();
  }
  void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    using namespace layout_check;
    const int w = tid >> 5, l = tid & 31;
    memcpy(e->fa[w][l], a, 16);
    e->fb[w][l][0] = b0;
    e->fb[w][l][1] = b1;
    e->warp[w].wait();
    for (int i = 0; i < 4; ++i) {
      const int r = ptx_c_row(l, i), c = ptx_c_col(l, i);
      double s = 0;
      for (int k = 0; k < 32; ++k) {
        const float av = dec(byte_of(e->fa[w][a_inv[r][k][0]], a_inv[r][k][1]));
        const float bv = dec(byte_of(e->fb[w][b_inv[k][c][0]], b_inv[k][c][1]));
        s += double(av) * double(bv);
      }
      d[i] = float(double(d[i]) + s);
    }
    e->warp[w].wait();
  }
  float ldg(const float* q) {
    const uint8_t* s = reinterpret_cast<const uint8_t*>(q);
    bool in = false;
    for (auto& r : e->global) in |= (s >= r.lo && s + 4 <= r.hi);
    if (!in) fail("ldg out of bounds");
    return *q;
  }
};

inline float bits_to_f(uint16_t b, bool bf16) {
  if (bf16) {
    uint32_t u = uint32_t(b) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  return __half2float(__ushort_as_half(b));
}

struct Case {
  const char* name;
  int64_t M, N, K;
  bool fp6, bias, bf16, mn_major_sa, deferred;
  int64_t lda_pad, ldb_pad, ldd;  // ldd absolute (>= N)
  int d_offset;                   // elements: misalign D to force the scalar path
};

template <int BM, int STAGES, bool FP6>
int run_case(const Case& cs, std::mt19937& rng) {
  using Cfg = Config<BM, STAGES, FP6>;
  const int64_t M = cs.M, N = cs.N, K = cs.K, KB = K / 128, NB = (N + 127) / 128;
  const int64_t lda = K + cs.lda_pad;
  const int64_t ldb = (FP6 ? K / 4 * 3 : K) + cs.ldb_pad;
  // operands
  std::vector<uint8_t> A(M * lda + 16), B(N * ldb + 16);
  std::vector<float> Bval(N * K);
  std::uniform_int_distribution<int> byte(0, 255), v6(0, 63);
  auto rnd_e4m3 = [&]() {
    for (;;) {
      const uint8_t b = uint8_t(byte(rng));
      if ((b & 0x7f) != 0x7f) return b;  // no NaN
    }
  };
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) A[m * lda + k] = rnd_e4m3();
  for (int64_t m = 0; m < M; ++m)
    if (m % 5 == 3)
      for (int64_t k = 128; k < 256 && k < K; ++k) A[m * lda + k] = 0;  // a zero group
  for (int64_t n = 0; n < N; ++n) {
    if (FP6) {
      for (int64_t q = 0; q < K / 4; ++q) {
        uint8_t v[4], b3[3];
        for (int e = 0; e < 4; ++e) {
          v[e] = uint8_t(v6(rng));
          Bval[n * K + q * 4 + e] = dec(fp6_e4m3_restore(v[e]));
        }
        fp6_pack4(v, b3);
        memcpy(&B[n * ldb + q * 3], b3, 3);
      }
    } else {
      for (int64_t k = 0; k < K; ++k) {
        B[n * ldb + k] = rnd_e4m3();
        Bval[n * K + k] = dec(B[n * ldb + k]);
      }
    }
  }
  const int64_t Mpad = (M + 3) / 4 * 4;
  std::vector<float> SA(Mpad * KB + 1), SB(NB * KB + 1), bias(N);
  std::uniform_real_distribution<float> u(0.5f, 2.f), ub(-3.f, 3.f);
  const int64_t sa_sm = cs.mn_major_sa ? 1 : KB, sa_sk = cs.mn_major_sa ? Mpad : 1;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t kb = 0; kb < KB; ++kb) SA[m * sa_sm + kb * sa_sk] = u(rng) * 1e-3f;
  for (int64_t i = 0; i < NB * KB; ++i) SB[i] = u(rng) * (FP6 ? 10.f : 1e-2f);
  for (auto& b : bias) b = ub(rng);
  // output with a sentinel border
  const int64_t rows_alloc = M + 3;
  std::vector<uint16_t> Dbuf(rows_alloc * cs.ldd + 64, 0x7E7E);
  uint16_t* D = Dbuf.data() + cs.d_offset;

  Fp8BlockwiseGemmArgs p;
  p.M = M; p.N = N; p.K = K;
  p.a = A.data(); p.lda = lda;
  p.a_scales = SA.data(); p.sa_stride_m = sa_sm; p.sa_stride_k = sa_sk;
  p.b = B.data(); p.ldb = ldb;
  p.b_scales = SB.data(); p.sb_stride_n = KB; p.sb_stride_k = 1;
  p.bias = cs.bias ? bias.data() : nullptr;
  p.d = D; p.ldd = cs.ldd;
  p.out = cs.bf16 ? GemmOut::kBF16 : GemmOut::kFP16;

  // emulate every CTA
  const int64_t tiles = ((M + BM - 1) / BM) * NB;
  std::vector<uint8_t> smem_buf(Cfg::SMEM + 256);
  uint8_t* smem = reinterpret_cast<uint8_t*>((uintptr_t(smem_buf.data()) + 127) & ~uintptr_t(127));
  std::vector<int> seen(tiles, 0);
  for (int64_t pid = 0; pid < tiles; ++pid) {
    Cta cta;
    cta.deferred = cs.deferred;
    cta.smem_lo = smem;
    cta.smem_hi = smem + Cfg::SMEM;
    cta.global = {{A.data(), A.data() + A.size() - 16},
                  {B.data(), B.data() + B.size() - 16},
                  {reinterpret_cast<const uint8_t*>(SA.data()), reinterpret_cast<const uint8_t*>(SA.data() + SA.size() - 1)},
                  {reinterpret_cast<const uint8_t*>(SB.data()), reinterpret_cast<const uint8_t*>(SB.data() + SB.size() - 1)},
                  {reinterpret_cast<const uint8_t*>(bias.data()), reinterpret_cast<const uint8_t*>(bias.data() + bias.size())}};
    memset(smem, 0xCD, Cfg::SMEM);  // garbage, must never leak into results
    std::vector<std::thread> th;
    for (int t = 0; t < 256; ++t)
      th.emplace_back([&, t] {
        HostOps ops{&cta, t, {}, {}};
        gemm_tile<BM, STAGES, FP6>(ops, p, smem, t, pid);
      });
    for (auto& x : th) x.join();
  }
  // reference
  double max_ref = 0, max_err = 0;
  int bad = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double tot = 0;
      for (int64_t kb = 0; kb < KB; ++kb) {
        double s = 0;
        for (int64_t k = kb * 128; k < kb * 128 + 128; ++k)
          s += double(dec(A[m * lda + k])) * double(Bval[n * K + k]);
        tot += s * double(SA[m * sa_sm + kb * sa_sk]) * double(SB[(n / 128) * KB + kb]);
      }
      if (cs.bias) tot += bias[n];
      max_ref = std::fmax(max_ref, std::fabs(tot));
      const double got = bits_to_f(D[m * cs.ldd + n], cs.bf16);
      const double err = std::fabs(got - tot);
      const double tol = (cs.bf16 ? 1.0 / 128 : 1.0 / 1024) * std::fabs(tot) + 1e-4;
      max_err = std::fmax(max_err, err);
      if (!(err <= tol)) {
        if (bad < 5) printf("  mismatch m=%ld n=%ld got %g ref %g\n", long(m), long(n), got, tot);
        ++bad;
      }
    }
  // sentinel outside [M, N]
  int touched = 0;
  for (int64_t i = 0; i < int64_t(Dbuf.size()); ++i) {
    const int64_t e = i - cs.d_offset;
    const bool inside = e >= 0 && e / cs.ldd < M && e % cs.ldd < N;
    if (!inside && Dbuf[i] != 0x7E7E) ++touched;
  }
  printf("%-34s BM=%3d S=%d fp6=%d M=%ld N=%ld K=%ld: %s (bad %d, outside-writes %d, max_err %.3g, max|ref| %.3g)\n",
         cs.name, BM, STAGES, int(FP6), long(M), long(N), long(K), (bad || touched) ? "FAIL" : "ok", bad,
         touched, max_err, max_ref);
  return bad + touched;
}

// argv[1]: case index (default: all).
inline int selftest_main(int argc, char** argv) {
  build_inverse();
  std::mt19937 rng(1234);
  const int which = argc > 1 ? atoi(argv[1]) : -1;
  int errs = 0;
  //                name                          M    N    K    fp6   bias  bf16  mnmaj deferred lda_pad ldb_pad ldd off
  const Case c0{"fp8 128x3 vec bf16 bias row-sa", 257, 136, 512, false, true, true, false, false, 16, 0, 144, 0};
  const Case c1{"fp8 64x3 scalar fp16 mn-sa defer", 70, 131, 384, false, false, false, true, true, 0, 32, 133, 0};
  const Case c2{"fp6 128x3 vec bf16 bias defer", 130, 200, 512, true, true, true, false, true, 0, 16, 200, 0};
  const Case c3{"fp6 128x2 misaligned-D fp16", 129, 131, 384, true, true, false, true, false, 32, 0, 136, 1};
  const Case c4{"fp6 64x3 small M defer", 33, 129, 256, true, false, true, false, true, 0, 0, 136, 0};
  const Case c5{"fp8 128x3 K=0 (bias only)", 5, 20, 0, false, true, true, false, false, 0, 0, 24, 0};
  const Case c6{"fp8 64x3 immediate", 64, 256, 512, false, true, true, false, false, 0, 0, 256, 0};
  if (which < 0 || which == 0) errs += run_case<128, 3, false>(c0, rng);
  if (which < 0 || which == 1) errs += run_case<64, 3, false>(c1, rng);
  if (which < 0 || which == 2) errs += run_case<128, 3, true>(c2, rng);
  if (which < 0 || which == 3) errs += run_case<128, 2, true>(c3, rng);
  if (which < 0 || which == 4) errs += run_case<64, 3, true>(c4, rng);
  if (which < 0 || which == 5) errs += run_case<128, 3, false>(c5, rng);
  if (which < 0 || which == 6) errs += run_case<64, 3, false>(c6, rng);
  // 10 x 2 tiles: the grouped tile order with a partial last group of M tiles
  const Case c7{"fp8 64x3 grouped order", 581, 256, 128, false, true, true, false, false, 0, 0, 256, 0};
  const Case c8{"fp8 128x3 M=1 N=8", 1, 8, 256, false, true, true, true, true, 0, 0, 8, 0};
  if (which < 0 || which == 7) errs += run_case<64, 3, false>(c7, rng);
  if (which < 0 || which == 8) errs += run_case<128, 3, false>(c8, rng);
  printf(errs ? "EMULATION FAILED\n" : "ALL EMULATION CASES PASSED\n");
  return errs ? 1 : 0;
}

}  // namespace emu
}  // namespace gemm_sm89
}  // namespace ltx_kernels
