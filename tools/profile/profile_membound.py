"""One call of each memory-bound op that trails torch.compile or sits far below the copy
ceiling, beside the Triton kernel(s) torch.compile generates for the same fp32 composition
(benchmarks/baselines.py), at the shapes of the families' benchmarks, for Nsight Compute
(tools/profile/profile.sh membound):

    ncu --clock-control none --profile-from-start off --nvtx --print-nvtx-rename kernel \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --metrics smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        python3 tools/profile/profile_membound.py [names...]

`--clock-control none` keeps the clocks the benchmarks run at (ncu's default locks the SM clock
near 1.3 GHz, which makes memory-bound kernels look instruction-bound). Each call runs once
unprofiled first (compile, autotune, module loading). Names select a subset (substring match)."""

import os
import sys

import torch

import ltx_kernels as lk
from ltx_kernels.attention import KEY_ORDER

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import baselines as bl  # noqa: E402
from profile_heavy import profile_calls  # noqa: E402

dev, bf, F8 = "cuda", torch.bfloat16, torch.float8_e4m3fn
EPS = 1e-6
KW = dict(out_dtype=F8, scale_layout="mn_major")


def compiled(fn):
    return torch.compile(fn, dynamic=False)


def calls():
    out = []
    # FP8-output ops at the fused_fp8 benchmark's shapes
    x = torch.randn(2, 6144, 4096, device=dev, dtype=bf)
    w = torch.randn(4096, device=dev, dtype=bf)
    gl = torch.randn(2, 6144, 32, device=dev, dtype=bf)
    sc, sh = torch.randn(2, 4096, device=dev, dtype=bf) * 0.1, torch.randn(2, 4096, device=dev, dtype=bf)
    xg = torch.randn(12288, 8192, device=dev, dtype=bf)
    xm = torch.randn(12288, 16384, device=dev, dtype=bf)
    c_rms = compiled(lambda x, w: bl.rms_norm_fp8(x, w, EPS))
    c_adaln = compiled(lambda x, sc, sh: bl.adaln_rms_norm_fp8(x, sc, sh, None, EPS))
    c_ga, c_gt, c_silu8 = compiled(bl.gated_attention_fp8), compiled(bl.gelu_tanh_fp8), compiled(bl.silu_and_mul_fp8)
    out += [
        ("ours gelu_tanh->fp8", lambda: lk.gelu_tanh(xg, **KW)),
        ("compiled gelu_tanh->fp8", lambda: c_gt(xg)),
        ("ours gated_attention->fp8", lambda: lk.gated_attention(x, gl, **KW)),
        ("compiled gated_attention->fp8", lambda: c_ga(x, gl)),
        ("ours rms_norm->fp8", lambda: lk.rms_norm(x, w, EPS, **KW)),
        ("compiled rms_norm->fp8", lambda: c_rms(x, w)),
        ("ours adaln_rms_norm->fp8", lambda: lk.adaln_rms_norm(x, sc, sh, None, EPS, **KW)),
        ("compiled adaln_rms_norm->fp8", lambda: c_adaln(x, sc, sh)),
        ("ours silu_and_mul->fp8", lambda: lk.silu_and_mul(xm, **KW)),
        ("compiled silu_and_mul->fp8", lambda: c_silu8(xm)),
    ]
    # bf16-output ops
    xa = torch.randn(4096, 28672, device=dev, dtype=bf)
    xe = torch.randn(2, 2688, 8192, device=dev, dtype=bf)
    xs = torch.randn(2, 2688, 2048, device=dev, dtype=bf)
    ys = torch.randn_like(xs)
    gs = torch.randn(2, 2688, 32, device=dev, dtype=bf)
    sc2, sh2, g2 = (torch.randn(2, 2048, device=dev, dtype=bf) * 0.1 for _ in range(3))
    c_silu, c_gelu, c_gt16 = compiled(bl.silu_and_mul), compiled(bl.gelu), compiled(bl.gelu_tanh)
    c_gatt = compiled(bl.gated_attention)
    c_adaln16 = compiled(lambda x, sc, sh: bl.adaln_rms_norm(x, sc, sh, None, EPS))
    c_gres = compiled(lambda h, y, g, sc, sh: bl.gated_residual_adaln_rms_norm(h, y, g, sc, sh, None, EPS))
    out += [
        ("ours silu_and_mul", lambda: lk.silu_and_mul(xa)),
        ("compiled silu_and_mul", lambda: c_silu(xa)),
        ("ours gelu", lambda: lk.gelu(xe)),
        ("compiled gelu", lambda: c_gelu(xe)),
        ("ours gelu_tanh", lambda: lk.gelu_tanh(xe)),
        ("compiled gelu_tanh", lambda: c_gt16(xe)),
        ("ours gated_attention", lambda: lk.gated_attention(xs, gs)),
        ("compiled gated_attention", lambda: c_gatt(xs, gs)),
        ("ours adaln_rms_norm", lambda: lk.adaln_rms_norm(xs, sc2, sh2, None, EPS)),
        ("compiled adaln_rms_norm", lambda: c_adaln16(xs, sc2, sh2)),
        ("ours gated_residual_adaln_rms_norm", lambda: lk.gated_residual_adaln_rms_norm(xs, ys, g2, sc2, sh2, None, EPS)),
        ("compiled gated_residual_adaln_rms_norm", lambda: c_gres(xs, ys, g2, sc2, sh2)),
    ]
    # the rows that still trail torch.compile (results.md): the FP8 quantizers, the split-RoPE
    # norm with FP8 output (beside our own two-kernel path), rms_norm on few rows and on 8192
    # columns, the per-sample AdaLN layer norm, the per-token AdaLN RMSNorm
    xq = torch.randn(12288, 4096, device=dev, dtype=bf)
    q8, s8 = lk.quantize_fp8_per_token_group(xq, 128, "mn_major")
    c_q, c_dq = compiled(bl.quantize_fp8_per_token_group), compiled(bl.dequantize_fp8_per_token_group)
    th = torch.rand(1, 32, 6144, 64, device=dev)
    cs, ss = th.cos(), th.sin()
    c_srope = compiled(lambda x, c, s, w: bl.rms_norm_split_rope_fp8(x, c, s, w, EPS))
    x1, x32, x8k = (torch.randn(*s, device=dev, dtype=bf) for s in ((1, 4096), (32, 4096), (16384, 8192)))
    w4, w8k = torch.randn(4096, device=dev, dtype=bf), torch.randn(8192, device=dev, dtype=bf)
    c_rms = compiled(lambda x, w: bl.rms_norm(x, w, EPS))
    c_aln = compiled(lambda x, sc, sh: bl.adaln_layer_norm(x, sc, sh, None, None, EPS))
    sct, sht = (torch.randn_like(xs) * 0.1 for _ in range(2))
    out += [
        ("ours quantize_fp8_per_token_group", lambda: lk.quantize_fp8_per_token_group(xq, 128, "mn_major")),
        ("compiled quantize_fp8_per_token_group", lambda: c_q(xq)),
        ("ours dequantize_fp8_per_token_group", lambda: lk.dequantize_fp8_per_token_group(q8, s8, 128)),
        ("compiled dequantize_fp8_per_token_group", lambda: c_dq(q8, s8)),
        ("ours rms_norm_split_rope->fp8", lambda: lk.rms_norm_split_rope(x, cs, ss, w, EPS, **KW)),
        ("ours rms_norm_split_rope (bf16)", lambda: lk.rms_norm_split_rope(x, cs, ss, w, EPS)),
        ("compiled rms_norm_split_rope->fp8", lambda: c_srope(x, cs, ss, w)),
        ("ours rms_norm [1, 4096]", lambda: lk.rms_norm(x1, w4, EPS)),
        ("compiled rms_norm [1, 4096]", lambda: c_rms(x1, w4)),
        ("ours rms_norm [32, 4096]", lambda: lk.rms_norm(x32, w4, EPS)),
        ("compiled rms_norm [32, 4096]", lambda: c_rms(x32, w4)),
        ("ours rms_norm [16384, 8192]", lambda: lk.rms_norm(x8k, w8k, EPS)),
        ("compiled rms_norm [16384, 8192]", lambda: c_rms(x8k, w8k)),
        ("ours adaln_layer_norm", lambda: lk.adaln_layer_norm(xs, sc2, sh2, None, None, EPS)),
        ("compiled adaln_layer_norm", lambda: c_aln(xs, sc2, sh2)),
        ("ours adaln_rms_norm per-token", lambda: lk.adaln_rms_norm(xs, sct, sht, None, EPS)),
        ("compiled adaln_rms_norm per-token", lambda: c_adaln16(xs, sct, sht)),
    ]
    # the FP8 attention operands (29-37% of the copy ceiling in attention_quant.json): its three
    # launches (statistics, their reduction, the codes) each under the call's NVTX range, at the
    # LTX-Video and LTX-2 self-attention shapes, factors per 128 keys
    c_aq = compiled(bl.quantize_attention_fp8)
    for d in (64, 128):
        qa, ka, va = (torch.randn(2, 2688, 32, d, device=dev, dtype=bf) for _ in range(3))
        spad = -(-2688 // 32) * 32
        order = torch.tensor([(p // 32) * 32 + KEY_ORDER[p % 32] for p in range(spad)], device=dev)
        out += [
            (f"ours quantize_attention_fp8 d{d}", lambda qa=qa, ka=ka, va=va: lk.quantize_attention_fp8(qa, ka, va)),
            (f"ours quantize_attention_fp8 d{d} smooth_keys 64",
             lambda qa=qa, ka=ka, va=va: lk.quantize_attention_fp8(qa, ka, va, smooth_keys=64)),
            (f"compiled quantize_attention_fp8 d{d}",
             lambda qa=qa, ka=ka, va=va, order=order: c_aq(qa, ka, va, order, 128)),
        ]
    return out


def main(argv):
    todo = calls()
    if argv:
        todo = [c for c in todo if any(a in c[0] for a in argv)]
    profile_calls("profile_membound", todo)


if __name__ == "__main__":
    main(sys.argv[1:])
