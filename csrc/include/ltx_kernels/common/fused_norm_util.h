// Per-row broadcast tables of the fused norms and of their FP8-output variants (AdaLN scale /
// shift, gated-residual gate). Host and device; no CUDA and no torch, so the params structs,
// the CPU backend and the CUDA core share it.
#pragma once

#include <cstdint>

namespace ltx_kernels {

// Row r of the activation ([rows, cols]) reads table entry e = r / rows_per_entry, whose
// `cols` contiguous elements start at data + e * stride.
//   rows_per_entry == 1: one entry per row  (per token,  table [B, S, C] = x.shape)
//   rows_per_entry  > 1: one entry per sample (per sample, table [B, C]; rows = B * rows_per_entry)
// The CUDA core reads per-sample entries through the cached path (they are reused by every
// row of the sample) and per-token entries as a stream (read once).
template <typename T>
struct ModTable {
  const T* data;           // [entries, cols], innermost stride 1
  int64_t stride;          // elements between entries
  int64_t rows_per_entry;  // >= 1
};

// The table as a params struct holds it (element type from the params' DType; data nullptr when
// the op has no such table) and as a backend reads it (an absent table: {nullptr, 0, 1}).
using AnyModTable = ModTable<void>;
template <typename T>
inline ModTable<T> typed(const AnyModTable& t) {
  if (t.data == nullptr) return ModTable<T>{nullptr, 0, 1};
  return ModTable<T>{static_cast<const T*>(t.data), t.stride, t.rows_per_entry};
}

// How a table of `t_nd` dimensions serves x [B, ..., C] (x_nd >= 2 dimensions): per sample
// ([B, C], or [B, 1, .., 1, C] with x's number of dimensions), per token (x's shape), or not
// (kNone). The adapters' rule; sizes as the arrays have them.
enum class ModTableKind { kNone, kPerSample, kPerToken };
inline ModTableKind mod_table_kind(int64_t t_nd, const int64_t* t_size, int64_t x_nd, const int64_t* x_size) {
  bool same = t_nd == x_nd;
  for (int64_t d = 0; same && d < t_nd; ++d) same = t_size[d] == x_size[d];
  if (same) return ModTableKind::kPerToken;
  bool per_sample = t_nd >= 2 && t_size[0] == x_size[0] && t_size[t_nd - 1] == x_size[x_nd - 1] &&
                    (t_nd == 2 || t_nd == x_nd);
  for (int64_t d = 1; per_sample && d + 1 < t_nd; ++d) per_sample = t_size[d] == 1;
  return per_sample ? ModTableKind::kPerSample : ModTableKind::kNone;
}

// The table of `kind` at `data` (`t_rows` rows `t_stride` elements apart) for x of `x_rows` rows
// in `batch` samples.
inline AnyModTable mod_table(const void* data, int64_t t_rows, int64_t t_stride, ModTableKind kind, int64_t x_rows,
                             int64_t batch) {
  return AnyModTable{data, t_rows <= 1 ? 0 : t_stride, kind == ModTableKind::kPerToken ? 1 : x_rows / batch};
}

}  // namespace ltx_kernels
