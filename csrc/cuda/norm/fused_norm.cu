// Fused-norm launchers: every op builds one Args and runs the shared kernels of
// fused_norm.cuh with its Policy. The launch shape follows rms_norm.cu: small problems (<= 32 MB,
// rows <= 512 accesses) spread a row over up to 256 threads with the epilogue operands preloaded;
// otherwise one warp per row up to 256 accesses, one block per row (row in registers) up to 4096
// accesses, a looping kernel beyond. The 16-byte vector path needs every pointer 16-byte aligned and every stride and
// cols a multiple of the vector width; otherwise the scalar path (VEC = 1) runs.
#include <algorithm>

#include "ltx_kernels/norm/fused_norm.cuh"
#include "ltx_kernels/cuda/ops.h"

namespace ltx_kernels {
namespace {

using namespace fused_norm_detail;

constexpr int64_t kMaxGrid = int64_t(1) << 30;  // rows beyond this are covered by grid-stride

template <class P, typename T, int VEC>
cudaError_t launch(const Args<T>& a, cudaStream_t stream) {
  const int nvec = a.cols / VEC;
  // Small problems (x <= 32 MB: about a wave, latency bound; rms_norm.cu measured the same):
  // each row over as many threads as possible, epilogue operands issued with the row.
  // Measured: it pays for the residual ops and per-token tables, not for per-sample tables
  // (adaln_*_norm per sample), which keep the warp-per-row shape.
  const bool small = a.rows * int64_t(a.cols) * int64_t(sizeof(T)) <= (int64_t(32) << 20);
  const bool per_sample = P::kModulate && a.scale.rows_per_entry > 1;
  if (small && nvec <= 512 && (P::kWritesResidual || !per_sample)) {
    const unsigned grid = unsigned(std::min<int64_t>(a.rows, kMaxGrid));
    auto threads = [&](int nv) { return unsigned(((nvec + nv - 1) / nv + 31) / 32 * 32); };
    if (nvec <= 32) {
      fused_norm_regs<P, T, VEC, 1, true, true>
          <<<unsigned(std::min<int64_t>((a.rows + 3) / 4, kMaxGrid)), 128, 0, stream>>>(a);
    } else if (nvec <= 256) {
      fused_norm_regs<P, T, VEC, 1, false, true><<<grid, threads(1), 0, stream>>>(a);
    } else {
      fused_norm_regs<P, T, VEC, 2, false, true><<<grid, threads(2), 0, stream>>>(a);
    }
    return cudaGetLastError();
  }
  if (nvec <= 32 * 8) {  // one warp per row, 4 rows per block
    const unsigned grid = unsigned(std::min<int64_t>((a.rows + 3) / 4, kMaxGrid));
    const int per_lane = (nvec + 31) / 32;
    if (per_lane <= 1) fused_norm_regs<P, T, VEC, 1, true><<<grid, 128, 0, stream>>>(a);
    else if (per_lane <= 2) fused_norm_regs<P, T, VEC, 2, true><<<grid, 128, 0, stream>>>(a);
    else if (per_lane <= 4) fused_norm_regs<P, T, VEC, 4, true><<<grid, 128, 0, stream>>>(a);
    else fused_norm_regs<P, T, VEC, 8, true><<<grid, 128, 0, stream>>>(a);
  } else if (nvec <= 256 * 16) {  // one block per row, row in registers
    const unsigned grid = unsigned(std::min<int64_t>(a.rows, kMaxGrid));
    auto threads = [&](int nv) { return unsigned(((nvec + nv - 1) / nv + 31) / 32 * 32); };
    if (nvec <= 128 * 4) fused_norm_regs<P, T, VEC, 4, false><<<grid, threads(4), 0, stream>>>(a);
    else if (nvec <= 128 * 8) fused_norm_regs<P, T, VEC, 8, false><<<grid, threads(8), 0, stream>>>(a);
    else fused_norm_regs<P, T, VEC, 16, false><<<grid, threads(16), 0, stream>>>(a);  // <= 256 threads
  } else {
    const unsigned grid = unsigned(std::min<int64_t>(a.rows, kMaxGrid));
    fused_norm_loop<P, T, VEC><<<grid, 512, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

template <typename T>
bool table_vec_ok(const ModTable<T>& t, int v) {
  return t.data == nullptr || (aligned_to(t.data, 16) && t.stride % v == 0);
}

template <class P, typename T>
cudaError_t run(Args<T> a, int64_t cols, cudaStream_t stream) {
  if (a.rows <= 0 || cols <= 0) return cudaSuccess;
  if (cols > int64_t(INT32_MAX)) return cudaErrorInvalidValue;
  a.cols = int(cols);
  a.inv_cols = 1.f / float(cols);
  constexpr int V = kVec16<T>;
  auto ptr_ok = [](const void* p) { return p == nullptr || aligned_to(p, 16); };
  const bool vec_ok = cols % V == 0 && a.out_stride % V == 0 && a.x_stride % V == 0 &&
                      a.res_out_stride % V == 0 && a.x2_stride % V == 0 && ptr_ok(a.out) &&
                      ptr_ok(a.res_out) && ptr_ok(a.x) && ptr_ok(a.x2) && ptr_ok(a.weight) &&
                      ptr_ok(a.bias) && table_vec_ok(a.gate, V) && table_vec_ok(a.scale, V) &&
                      table_vec_ok(a.shift, V);
  if (vec_ok) return launch<P, T, V>(a, stream);
  return launch<P, T, 1>(a, stream);
}

// A table the op reads must have rows_per_entry >= 1.
bool table_ok(const AnyModTable& t) { return t.data == nullptr || t.rows_per_entry >= 1; }

template <class P>
cudaError_t run_op(const FusedNormParams& p, cudaStream_t stream) {
  if (!table_ok(p.gate) || !table_ok(p.scale) || !table_ok(p.shift)) return cudaErrorInvalidValue;
  return dispatch_cuda(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    Args<T> a = fused_norm_args<T, Args<T>>(p);
    a.rows = p.x.layout.rows;
    return run<P>(a, p.x.layout.cols, stream);
  });
}

}  // namespace

cudaError_t add_rms_norm(const FusedNormParams& p, cudaStream_t stream) {
  return run_op<Policy<Prologue::kAdd, false, false>>(p, stream);
}

cudaError_t layer_norm(const FusedNormParams& p, cudaStream_t stream) {
  return run_op<Policy<Prologue::kLoad, true, false>>(p, stream);
}

cudaError_t adaln_rms_norm(const FusedNormParams& p, cudaStream_t stream) {
  return run_op<Policy<Prologue::kLoad, false, true>>(p, stream);
}

cudaError_t adaln_layer_norm(const FusedNormParams& p, cudaStream_t stream) {
  return run_op<Policy<Prologue::kLoad, true, true>>(p, stream);
}

cudaError_t gated_residual_adaln_rms_norm(const FusedNormParams& p, cudaStream_t stream) {
  return run_op<Policy<Prologue::kGatedAdd, false, true>>(p, stream);
}

}  // namespace ltx_kernels
