"""An attention call as a DiT block runs it, everything it costs, from the projections' outputs
(x_q, x_k [B, S, C] before norm_q / norm_k, v [B, S, H, D]) to the attention output:

  sdpa        rms_norm_rope(q), rms_norm_rope(k) in bf16, then cuDNN SDPA ([B, H, S, D] views,
              as diffusers' processors call it)
  bf16        the same two passes, then ltx_kernels.attention in bf16
  fp8 1-pass  the two bf16 passes, quantize_attention_fp8(q, k, v) (k's exact mean), the FP8 kernel
  fp8 prod.   q's operand from rms_norm_rope's FP8 output (group = D), k's from attention_keys_fp8
              (the leading 128 keys' mean), v's from attention_values_fp8, the FP8 kernel (what the
              diffusers processors run)

each by CUDA-graph replay over input sets rotated past L2 (median of 15 trials, and their spread),
with the parts of the two FP8 paths timed alone; and the error of each path's output against a
float64 attention of the exact norm + RoPE outputs (the first 256 queries), on keys with a
per-channel offset and outlier channels (what smoothing is for). LTX-Video (interleaved RoPE,
head dim 64) and LTX-2 (split RoPE, head dim 128) self-attention shapes; cos / sin fp32 as the
diffusers integration passes them: one [1, S, C] pair for LTX-Video (its rotary embedding returns
one row for the batch under `optimize`), one table per batch row for LTX-2.

    python3 tools/tune/attention_step.py [--quick] [--json out.json]
"""

import argparse
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))

import ltx_kernels as lk  # noqa: E402
from ltx_kernels import reference as ref  # noqa: E402

from common import graph_timing, n_copies, time_graph, write_record  # noqa: E402

SHAPES = [  # name, B, S, H, D, split RoPE, table rows (what the diffusers integration passes)
    ("LTX-Video 49x512x768", 2, 2688, 32, 64, False, 1),
    ("LTX-Video 121x720x1280", 2, 14080, 32, 64, False, 1),
    ("LTX-2 49x512x768", 2, 6144, 32, 128, True, 2),
    ("LTX-2 121x720x1280", 1, 16384, 32, 128, True, 1),
]
F8 = torch.float8_e4m3fn


def inputs(b, s, h, d, split, sets, table_rows):
    c = h * d
    offset = 2 * torch.randn(c, device="cuda")
    offset[torch.randperm(c, device="cuda")[:8]] += 12.0  # a few outlier channels
    sets_ = []
    for _ in range(sets):
        xq = torch.randn(b, s, c, device="cuda").bfloat16()
        xk = (torch.randn(b, s, c, device="cuda") + offset).bfloat16()
        v = torch.randn(b, s, h, d, device="cuda").bfloat16()
        sets_.append((xq, xk, v))
    wq = (1 + 0.3 * torch.randn(c, device="cuda")).bfloat16()
    wk = (1 + 0.3 * torch.randn(c, device="cuda")).bfloat16()
    ang = torch.rand(1, h, s, d // 2, device="cuda", dtype=torch.float64) * 6.3
    if not split:
        ang = ang.permute(0, 2, 1, 3).reshape(1, s, c // 2).repeat_interleave(2, -1)
    rep = (table_rows,) + (1,) * (ang.dim() - 1)
    return sets_, wq, wk, ang.cos().float().repeat(rep), ang.sin().float().repeat(rep)


def paths(b, s, h, d, split, wq, wk, cos, sin, sets_):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    norm_rope = lk.rms_norm_split_rope if split else lk.rms_norm_rope
    out = torch.empty(b, s, h, d, device="cuda", dtype=torch.bfloat16)

    def qk16(i):
        xq, xk, v = sets_[i]
        return norm_rope(xq, cos, sin, wq).view(b, s, h, d), norm_rope(xk, cos, sin, wk).view(b, s, h, d), v

    def sdpa(i):
        q, k, v = qk16(i)
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)

    def bf16(i):
        return lk.attention(*qk16(i), out=out)

    def one_pass(i):
        return lk.attention(*lk.quantize_attention_fp8(*qk16(i)), out=out)

    def q_op(i):
        q8, qd = norm_rope(sets_[i][0], cos, sin, wq, out_dtype=F8, group_size=d)
        return q8.view(b, s, h, d), qd.view(b, s, h)

    def k_op(i):
        return lk.attention_keys_fp8(sets_[i][1], cos, sin, wk, heads=h, split_rope=split, smooth_keys=128)

    def v_op(i):
        return lk.attention_values_fp8(sets_[i][2])

    def producers(i):
        (q8, qd), (k8, kd), (v8, vd) = q_op(i), k_op(i), v_op(i)
        return lk.attention(q8, k8, v8, qd, kd, vd, out=out)

    pre = [qk16(i) for i in range(len(sets_))]  # the bf16 passes' outputs, for the parts timed alone
    ops1 = [lk.quantize_attention_fp8(*t) for t in pre]
    more = {}
    if cos.shape[0] == 1 and b > 1:  # the keys pass with one table per batch row (the same values):
        # what a one-row table saves it, with the launch order that reads a key block's table rows
        # for every batch row in turn
        rows_ = (b,) + (1,) * (cos.dim() - 1)
        cos_b, sin_b = cos.repeat(rows_), sin.repeat(rows_)
        more["  attention_keys_fp8, B tables"] = lambda i: lk.attention_keys_fp8(
            sets_[i][1], cos_b, sin_b, wk, heads=h, split_rope=split, smooth_keys=128)
    return {"sdpa": sdpa, "bf16": bf16, "fp8 1-pass": one_pass, "fp8 prod.": producers,
            "  q,k bf16 norm+rope": qk16, "  quantize_attention_fp8": lambda i: lk.quantize_attention_fp8(*pre[i]),
            "  fp8 kernel": lambda i: lk.attention(*ops1[i], out=out),
            "  q fp8 norm+rope": q_op, "  attention_keys_fp8": k_op, "  attention_values_fp8": v_op} | more


def errors(b, s, h, d, split, wq, wk, cos, sin, xq, xk, v, fns, nq=256):
    """rel L2 of each path's first nq queries against float64 attention of the exact norm+RoPE q, k."""
    nr = ref.rms_norm_split_rope if split else ref.rms_norm_rope
    q = nr(xq, cos, sin, wq).view(b, s, h, d)[:, :nq]  # float64, on the GPU
    k = nr(xk, cos, sin, wk).view(b, s, h, d)
    want = ref.attention(q, k, v.double())
    res = {}
    for name in ("sdpa", "bf16", "fp8 1-pass", "fp8 prod."):
        o = fns[name](0)[:, :nq].double()
        res[name] = float((o - want).norm() / want.norm())
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the first shape only")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    for name, b, s, h, d, split, table_rows in SHAPES[:1] if args.quick else SHAPES:
        sets = n_copies(b * s * h * d * 2 * 4)
        sets_, wq, wk, cos, sin = inputs(b, s, h, d, split, sets, table_rows)
        fns = paths(b, s, h, d, split, wq, wk, cos, sin, sets_)
        us, spread = {}, {}
        for k, fn in fns.items():
            t = [time_graph(fn, sets, trials=9) for _ in range(3)]
            us[k], spread[k] = statistics.median(t), (max(t) - min(t)) / statistics.median(t)
        err = errors(b, s, h, d, split, wq, wk, cos, sin, *sets_[0], fns)
        rows.append(dict(shape=name, B=b, S=s, H=h, D=d, split_rope=split, table_rows=table_rows, us=us, spread=spread, rel_l2_vs_fp64=err))
        print(f"\n{name} [B {b}, S {s}, H {h}, D {d}, {table_rows} table row(s)] (us; spread of 3 medians; rel L2 vs fp64)", flush=True)
        for k in fns:
            e = f"  {err[k]:.4f}" if k in err else ""
            x = f"  {us['sdpa'] / us[k]:.2f}x sdpa" if not k.startswith(" ") else ""
            print(f"  {k:<26} {us[k]:9.1f}  {100 * spread[k]:4.1f}%{x}{e}", flush=True)
        del sets_, fns
        torch.cuda.empty_cache()
        if args.json:  # after every shape: a run cut short keeps what it measured
            write_record(args.json, rows, "tools/tune/attention_step.py", sys.argv[1:],
                         timing=dict(graph_timing(9), statistic="median of 3 medians of 9 replays "
                                     "(spread: their range over the median)"))


if __name__ == "__main__":
    main()
