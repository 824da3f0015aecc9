"""Ops with FP8 output (out_dtype=torch.float8_e4m3fn, per-token 128-column groups, M-major
scales as DeepGEMM reads them; rows marked "per token": one scale per token, group_size = the row
width, as FP8RowwiseLinear takes its input): ours fused (one pass) vs ours unfused (the plain op in bf16,
then our quantize_fp8_per_token_group) vs torch.compile of the fp32 composition
(benchmarks/baselines.py: the op in fp32, group amax, divide, cast to float8); same run, same
method (benchmarks/common.py).

Bytes = read + written once by the fused op: the inputs (per-sample tables and the weight
counted once), q (1 byte per element), scales (4 bytes per 128 elements), and h_out for the
gated residual. The unfused path moves more (the bf16 intermediate is written and re-read);
its time is compared at the fused op's byte count, which is what the ratio is about.
"""

import torch

import ltx_kernels as lk

import baselines as bl
from common import Row, n_copies, time_graph

F8 = torch.float8_e4m3fn
NORM_SHAPES = [(2, 6144, 4096), (2, 4096, 2048)]
MUL_SHAPES = [(2 * 6144, 2 * 8192)]  # [tokens, 2 * FFN] -> [tokens, 8192]
EPS = 1e-6


# The torch.compile baselines: the fp32 compositions of baselines.py with this file's eps.
def base_rms_norm(x, w):
    return bl.rms_norm_fp8(x, w, EPS)


def base_adaln(x, sc, sh):
    return bl.adaln_rms_norm_fp8(x, sc, sh, None, EPS)


def base_gated(h, y, g, sc, sh):
    return bl.gated_residual_adaln_rms_norm_fp8(h, y, g, sc, sh, None, EPS)


def base_rms_norm_rope(x, cos, sin, w):
    return bl.rms_norm_rope_fp8(x, cos, sin, w, EPS)


def base_rms_norm_split_rope(x, cos, sin, w):
    return bl.rms_norm_split_rope_fp8(x, cos, sin, w, EPS)


def base_gelu_and_mul(x):
    return bl.gelu_and_mul_fp8(x, "tanh")


def _unfused_quant(y):
    return lk.quantize_fp8_per_token_group(y, 128, "mn_major")


def base_adaln_per_token(x, sc, sh):
    return bl.adaln_rms_norm_fp8(x, sc, sh, None, EPS, group_size=x.shape[-1])


def base_gelu_tanh_per_token(x):
    return bl.gelu_tanh_fp8(x, group_size=x.shape[-1])


def _row(name, shape, nbytes, k, ours, unfused, compiled, copy_gbps, note=""):
    base = {"ours unfused (op + quantize)": time_graph(unfused, k), "torch.compile": time_graph(compiled, k)}
    return Row(name, list(shape), "bfloat16", time_graph(ours, k), base, bytes=nbytes, note=note).finish(copy_gbps)


def run(copy_gbps, quick=False):
    rows = []
    dev, bf = "cuda", torch.bfloat16
    kw = dict(out_dtype=F8, scale_layout="mn_major")
    c_rms, c_adaln, c_gated = (torch.compile(f, dynamic=False) for f in (base_rms_norm, base_adaln, base_gated))
    c_rope, c_srope = (torch.compile(f, dynamic=False) for f in (base_rms_norm_rope, base_rms_norm_split_rope))
    c_silu, c_gelu, c_gt, c_ga = (torch.compile(f, dynamic=False)
                                  for f in (bl.silu_and_mul_fp8, base_gelu_and_mul, bl.gelu_tanh_fp8,
                                            bl.gated_attention_fp8))
    c_adaln_t, c_gt_t = (torch.compile(f, dynamic=False) for f in (base_adaln_per_token, base_gelu_tanh_per_token))
    for shape in NORM_SHAPES[:1] if quick else NORM_SHAPES:
        B, S, C = shape
        n = B * S * C
        qbytes = n + n // 128 * 4
        w = torch.randn(C, device=dev, dtype=bf)
        sc, sh = torch.randn(B, C, device=dev, dtype=bf) * 0.1, torch.randn(B, C, device=dev, dtype=bf)
        # rms_norm
        nbytes = 2 * n + qbytes
        k = n_copies(nbytes)
        xs = [torch.randn(shape, device=dev, dtype=bf) for _ in range(k)]
        rows.append(_row("rms_norm -> fp8", shape, nbytes, k, lambda i: lk.rms_norm(xs[i], w, EPS, **kw),
                         lambda i: _unfused_quant(lk.rms_norm(xs[i], w, EPS)),
                         lambda i: c_rms(xs[i], w), copy_gbps, "weight; mn_major scales"))
        rows.append(_row("adaln_rms_norm -> fp8", shape, nbytes, k,
                         lambda i: lk.adaln_rms_norm(xs[i], sc, sh, None, EPS, **kw),
                         lambda i: _unfused_quant(lk.adaln_rms_norm(xs[i], sc, sh, None, EPS)),
                         lambda i: c_adaln(xs[i], sc, sh), copy_gbps, "per-sample scale/shift"))
        tok = dict(out_dtype=F8, group_size=C)  # one scale per token
        tbytes = 2 * n + n + B * S * 4
        rows.append(_row("adaln_rms_norm -> fp8 per token", shape, tbytes, k,
                         lambda i: lk.adaln_rms_norm(xs[i], sc, sh, None, EPS, **tok),
                         lambda i: lk.quantize_fp8_per_token_group(lk.adaln_rms_norm(xs[i], sc, sh, None, EPS), C),
                         lambda i: c_adaln_t(xs[i], sc, sh), copy_gbps, "per-sample scale/shift; one scale per token"))
        del xs
        # gated residual: reads h, y; writes h_out, q, scales
        nbytes = 3 * 2 * n + qbytes
        k = n_copies(nbytes)
        hs = [torch.randn(shape, device=dev, dtype=bf) for _ in range(k)]
        ys = [torch.randn(shape, device=dev, dtype=bf) for _ in range(k)]
        hos = [torch.empty(shape, device=dev, dtype=bf) for _ in range(k)]
        g = torch.randn(B, C, device=dev, dtype=bf)
        rows.append(_row("gated_residual_adaln_rms_norm -> fp8", shape, nbytes, k,
                         lambda i: lk.gated_residual_adaln_rms_norm(hs[i], ys[i], g, sc, sh, None, EPS,
                                                                    h_out=hos[i], **kw),
                         lambda i: _unfused_quant(lk.gated_residual_adaln_rms_norm(hs[i], ys[i], g, sc, sh, None, EPS,
                                                                                   h_out=hos[i])[1]),
                         lambda i: c_gated(hs[i], ys[i], g, sc, sh), copy_gbps, "h_out written; per-sample tables"))
        del hs, ys, hos
        # gated attention (32 heads)
        nbytes = 2 * n + qbytes
        k = n_copies(nbytes)
        xs = [torch.randn(shape, device=dev, dtype=bf) for _ in range(k)]
        gls = [torch.randn(B, S, 32, device=dev, dtype=bf) for _ in range(k)]
        rows.append(_row("gated_attention -> fp8", shape, nbytes, k, lambda i: lk.gated_attention(xs[i], gls[i], **kw),
                         lambda i: _unfused_quant(lk.gated_attention(xs[i], gls[i])),
                         lambda i: c_ga(xs[i], gls[i]), copy_gbps, "32 heads"))
        del xs, gls
        # RMSNorm + RoPE -> fp8 (LTX-Video interleaved tables [1, S, C]; LTX-2 split tables
        # [1, 32, S, d/2] for 32 heads of 128), fp32 tables read once
        th = torch.rand(1, S, C, device=dev) * 6.3
        cos_i, sin_i = th.cos(), th.sin()
        th = torch.rand(1, 32, S, C // 64, device=dev) * 6.3
        cos_s, sin_s = th.cos(), th.sin()
        del th
        nbytes = 2 * n + qbytes + 2 * S * C * 4
        k = n_copies(nbytes)
        xs = [torch.randn(shape, device=dev, dtype=bf) for _ in range(k)]
        rows.append(_row("rms_norm_rope -> fp8", shape, nbytes, k,
                         lambda i: lk.rms_norm_rope(xs[i], cos_i, sin_i, w, EPS, **kw),
                         lambda i: _unfused_quant(lk.rms_norm_rope(xs[i], cos_i, sin_i, w, EPS)),
                         lambda i: c_rope(xs[i], cos_i, sin_i, w), copy_gbps, "interleaved; fp32 tables [1, S, C]"))
        nbytes = 2 * n + qbytes + 2 * S * C // 2 * 4
        rows.append(_row("rms_norm_split_rope -> fp8", shape, nbytes, k,
                         lambda i: lk.rms_norm_split_rope(xs[i], cos_s, sin_s, w, EPS, **kw),
                         lambda i: _unfused_quant(lk.rms_norm_split_rope(xs[i], cos_s, sin_s, w, EPS)),
                         lambda i: c_srope(xs[i], cos_s, sin_s, w), copy_gbps, "32 heads; fp32 tables [1, H, S, d/2]"))
        del xs, cos_i, sin_i, cos_s, sin_s
        torch.cuda.empty_cache()
    for shape in MUL_SHAPES:
        M, C2 = shape
        n = M * C2 // 2
        qbytes = n + n // 128 * 4
        nbytes = 2 * 2 * n + qbytes
        k = n_copies(nbytes)
        xs = [torch.randn(shape, device=dev, dtype=bf) for _ in range(k)]
        rows.append(_row("silu_and_mul -> fp8", shape, nbytes, k, lambda i: lk.silu_and_mul(xs[i], **kw),
                         lambda i: _unfused_quant(lk.silu_and_mul(xs[i])), lambda i: c_silu(xs[i]), copy_gbps))
        if not quick:
            rows.append(_row("gelu_and_mul(tanh) -> fp8", shape, nbytes, k,
                             lambda i: lk.gelu_and_mul(xs[i], "tanh", **kw),
                             lambda i: _unfused_quant(lk.gelu_and_mul(xs[i], "tanh")),
                             lambda i: c_gelu(xs[i]), copy_gbps))
        del xs
        # gelu_tanh on the FFN activation [tokens, 8192]
        gshape = (M, C2 // 2)
        nbytes = 2 * n + qbytes
        k = n_copies(nbytes)
        xs = [torch.randn(gshape, device=dev, dtype=bf) for _ in range(k)]
        rows.append(_row("gelu_tanh -> fp8", gshape, nbytes, k, lambda i: lk.gelu_tanh(xs[i], **kw),
                         lambda i: _unfused_quant(lk.gelu_tanh(xs[i])), lambda i: c_gt(xs[i]), copy_gbps))
        tok = dict(out_dtype=F8, group_size=gshape[1])  # one scale per token
        tbytes = 2 * n + n + gshape[0] * 4
        rows.append(_row("gelu_tanh -> fp8 per token", gshape, tbytes, k, lambda i: lk.gelu_tanh(xs[i], **tok),
                         lambda i: lk.quantize_fp8_per_token_group(lk.gelu_tanh(xs[i]), gshape[1]),
                         lambda i: c_gt_t(xs[i]), copy_gbps, "one scale per token"))
        del xs
        torch.cuda.empty_cache()
    return rows
