// CPU backend of the low-bit family; see ltx_kernels/cpu/lowbit.h.
#include "ltx_kernels/cpu/lowbit.h"

#include <algorithm>

#include "ltx_kernels/common/formats_lowbit.h"

namespace ltx_kernels {
namespace cpu {
namespace {

constexpr int64_t kGrain = 1 << 14;  // elements / groups per task
constexpr int64_t kRowGrain = 16;    // rows per task

void fp6_pack_range(uint8_t* out, const uint8_t* x, int64_t group_begin, int64_t group_end) {
  for (int64_t g = group_begin; g < group_end; ++g) {
    uint8_t v[4];
    for (int i = 0; i < 4; ++i) v[i] = fp6_e4m3_drop(x[g * 4 + i]);
    fp6_pack4(v, out + g * 3);
  }
}

template <typename T>
void quantize_fp6_block_rows(uint8_t* packed, float* scales, const T* w, int64_t rows, int64_t cols,
                        int block_rows, int block_cols, int64_t brow_begin, int64_t brow_end) {
  const int64_t nbc = (cols + block_cols - 1) / block_cols;
  for (int64_t br = brow_begin; br < brow_end; ++br) {
    const int64_t r0 = br * block_rows, r1 = std::min<int64_t>(rows, r0 + block_rows);
    for (int64_t bc = 0; bc < nbc; ++bc) {
      const int64_t c0 = bc * block_cols, c1 = std::min<int64_t>(cols, c0 + block_cols);
      float amax = 0.f;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) amax = amax_step(amax, to_float(w[r * cols + c]));
      const float s = div_rn(amax, kFp6E4M3Max);
      scales[br * nbc + bc] = s;
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; c += 4) {
          uint8_t v[4];
          for (int i = 0; i < 4; ++i) v[i] = fp6_block_code(to_float(w[r * cols + c + i]), s);
          fp6_pack4(v, packed + r * (cols / 4 * 3) + c / 4 * 3);
        }
      }
    }
  }
}

template <typename T>
void dequantize_fp6_block_rows(T* out, const uint8_t* packed, const float* scales, int64_t rows,
                          int64_t cols, int block_rows, int block_cols, int64_t row_begin,
                          int64_t row_end) {
  (void)rows;
  const int64_t nbc = (cols + block_cols - 1) / block_cols;
  for (int64_t r = row_begin; r < row_end; ++r) {
    const float* srow = scales + (r / block_rows) * nbc;
    for (int64_t c = 0; c < cols; c += 4) {
      uint8_t v[4];
      fp6_unpack4(packed + r * (cols / 4 * 3) + c / 4 * 3, v);
      const float s = srow[c / block_cols];
      for (int i = 0; i < 4; ++i)
        out[r * cols + c + i] = from_float<T>(minifloat_decode<E4M3>(fp6_e4m3_restore(v[i])) * s);
    }
  }
}

template <typename T>
void quantize_fp6_range(uint8_t* codes, const T* x, int fmt, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const float f = to_float(x[i]);
    codes[i] = fmt == 0 ? narrow_encode<E2M3>(f) : narrow_encode<E3M2>(f);
  }
}

template <typename T>
void dequantize_fp6_range(T* out, const uint8_t* codes, int fmt, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    const uint8_t c = uint8_t(codes[i] & 0x3f);
    out[i] = from_float<T>(fmt == 0 ? narrow_decode<E2M3>(c) : narrow_decode<E3M2>(c));
  }
}

template <typename T>
void quantize_nvfp4_rows(uint8_t* packed, uint8_t* block_scales, const T* x, float s_t, int64_t rows,
                    int64_t cols, bool hi_first, int64_t row_begin, int64_t row_end) {
  const int64_t nb = cols / 16;
  const int64_t pcols = (nb + 3) / 4 * 4;
  for (int64_t r = row_begin; r < row_end; ++r) {
    for (int64_t b = 0; b < pcols; ++b) {
      uint8_t code = 0;
      if (r < rows && b < nb) {
        const T* xb = x + r * cols + b * 16;
        float amax = 0.f;
        for (int i = 0; i < 16; ++i) amax = amax_step(amax, to_float(xb[i]));
        code = nvfp4_block_scale_code(amax, s_t);
        const float d = s_t * minifloat_decode<E4M3>(code);
        uint8_t* pb = packed + r * (cols / 2) + b * 8;
        for (int j = 0; j < 8; ++j) {
          const uint8_t q0 = d != 0.f ? e2m1_encode(div_rn(to_float(xb[2 * j]), d)) : 0;
          const uint8_t q1 = d != 0.f ? e2m1_encode(div_rn(to_float(xb[2 * j + 1]), d)) : 0;
          pb[j] = hi_first ? uint8_t(q0 << 4 | q1) : uint8_t(q1 << 4 | q0);
        }
      }
      block_scales[nvfp4_scale_offset(r, b, pcols)] = code;
    }
  }
}

}  // namespace

void fp6_unpack(uint8_t* out, const uint8_t* packed, int64_t group_begin, int64_t group_end) {
  for (int64_t g = group_begin; g < group_end; ++g) {
    uint8_t v[4];
    fp6_unpack4(packed + g * 3, v);
    for (int i = 0; i < 4; ++i) out[g * 4 + i] = fp6_e4m3_restore(v[i]);
  }
}

template <typename T>
void dequantize_nvfp4(T* out, const uint8_t* packed, const uint8_t* block_scales, float s_t,
                      int64_t cols, bool hi_first, int64_t row_begin, int64_t row_end) {
  const int64_t nb = cols / 16;
  const int64_t pcols = (nb + 3) / 4 * 4;
  for (int64_t r = row_begin; r < row_end; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      const float sb = minifloat_decode<E4M3>(block_scales[nvfp4_scale_offset(r, b, pcols)]);
      const uint8_t* pb = packed + r * (cols / 2) + b * 8;
      T* ob = out + r * cols + b * 16;
      for (int j = 0; j < 8; ++j) {
        const uint8_t hi = uint8_t(pb[j] >> 4), lo = uint8_t(pb[j] & 0xf);
        ob[2 * j] = from_float<T>(e2m1_decode(hi_first ? hi : lo) * sb * s_t);
        ob[2 * j + 1] = from_float<T>(e2m1_decode(hi_first ? lo : hi) * sb * s_t);
      }
    }
  }
}

template void dequantize_nvfp4<float>(float*, const uint8_t*, const uint8_t*, float, int64_t, bool, int64_t, int64_t);

void fp6_pack(const Fp6PackParams& p, const ParallelFor& parallel_for) {
  parallel_for(p.groups, kGrain, [&](int64_t b, int64_t e) { fp6_pack_range(p.packed, p.codes, b, e); });
}

void fp6_unpack(const Fp6PackParams& p, const ParallelFor& parallel_for) {
  parallel_for(p.groups, kGrain, [&](int64_t b, int64_t e) { fp6_unpack(p.codes, p.packed, b, e); });
}

void quantize_fp6_block(const Fp6BlockParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    const int64_t block_rows = (p.rows + p.block_rows - 1) / p.block_rows;
    parallel_for(block_rows, 1, [&](int64_t b, int64_t e) {
      quantize_fp6_block_rows<T>(p.packed, p.scales, static_cast<const T*>(p.values), p.rows, p.cols, p.block_rows,
                                 p.block_cols, b, e);
    });
  });
}

void dequantize_fp6_block(const Fp6BlockParams& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    parallel_for(p.rows, kRowGrain, [&](int64_t b, int64_t e) {
      dequantize_fp6_block_rows<T>(static_cast<T*>(p.values), p.packed, p.scales, p.rows, p.cols, p.block_rows,
                                   p.block_cols, b, e);
    });
  });
}

void quantize_fp6(const Fp6Params& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    parallel_for(p.n, kGrain, [&](int64_t b, int64_t e) {
      quantize_fp6_range<T>(p.codes, static_cast<const T*>(p.values), p.format, b, e);
    });
  });
}

void dequantize_fp6(const Fp6Params& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    parallel_for(p.n, kGrain, [&](int64_t b, int64_t e) {
      dequantize_fp6_range<T>(static_cast<T*>(p.values), p.codes, p.format, b, e);
    });
  });
}

void quantize_nvfp4(const Nvfp4Params& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    const int64_t padded_rows = (p.rows + 127) / 128 * 128;  // every scale byte is written
    parallel_for(padded_rows, kRowGrain, [&](int64_t b, int64_t e) {
      quantize_nvfp4_rows<T>(p.packed, p.block_scales, static_cast<const T*>(p.values), p.per_tensor_scale[0], p.rows,
                             p.cols, p.hi_first, b, e);
    });
  });
}

void dequantize_nvfp4(const Nvfp4Params& p, const ParallelFor& parallel_for) {
  dispatch_cpu(p.dtype, [&](auto tag) {
    using T = type_of<decltype(tag)>;
    parallel_for(p.rows, kRowGrain, [&](int64_t b, int64_t e) {
      dequantize_nvfp4<T>(static_cast<T*>(p.values), p.packed, p.block_scales, p.per_tensor_scale[0], p.cols,
                          p.hi_first, b, e);
    });
  });
}

}  // namespace cpu
}  // namespace ltx_kernels
