"""RoPE family benchmarks: the fused RMSNorm + RoPE ops vs the eager fp32 composition
(benchmarks/baselines.py: the RMSNorm, then diffusers' / LTX-2's RoPE formula) and
torch.compile of that composition; same run, same method (benchmarks/common.py). The error of
what was timed is measured against the float64 oracles of ltx_kernels.reference.

Bytes counted: x read once + out written once + cos and sin read once (the table is
[1, S, C] or [B, H, S, d/2] as given; a batch-broadcast table counts once) + the weight."""

import math

import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

import baselines as bl
from common import Row, n_copies, time_graph

EPS_Q = 1e-5  # diffusers LTX-Video norm_q / norm_k
EPS_SPLIT = 1e-6


# (op, x shape, heads, head_dim, table batch, table dtype)
CASES = [
    ("rms_norm_rope", (2, 2688, 2048), 1, 2048, 1, torch.float32),  # LTX-Video 2B
    ("rms_norm_rope", (2, 6144, 4096), 1, 4096, 1, torch.float32),
    ("rms_norm_split_rope", (2, 6144, 4096), 32, 128, 2, torch.bfloat16),  # LTX-2 video
    ("rms_norm_split_rope", (1, 32760, 4096), 32, 128, 1, torch.bfloat16),
]


def run(copy_gbps, quick=False):
    rows = []
    dtype = torch.bfloat16
    c_inter = torch.compile(bl.rms_norm_rope, dynamic=False)
    c_split = torch.compile(bl.rms_norm_split_rope, dynamic=False)
    for op, shape, heads, d, tb, tdt in CASES[:2] if quick else CASES:
        b, s, c = shape
        if op == "rms_norm_rope":
            ang = torch.rand(tb, s, c // 2, device="cuda") * 2 * math.pi
            tshape_numel = tb * s * c
            eps, fused, eager, comp, oracle = (EPS_Q, lk.rms_norm_rope, bl.rms_norm_rope, c_inter,
                                               ref.rms_norm_rope)
            ang = ang.repeat_interleave(2, dim=-1)
        else:
            ang = torch.rand(tb, heads, s, d // 2, device="cuda") * 2 * math.pi
            tshape_numel = tb * heads * s * (d // 2)
            eps, fused, eager, comp, oracle = (EPS_SPLIT, lk.rms_norm_split_rope, bl.rms_norm_split_rope, c_split,
                                               ref.rms_norm_split_rope)
        cos, sin = ang.cos().to(tdt), ang.sin().to(tdt)
        del ang
        esz = torch.finfo(dtype).bits // 8
        tsz = torch.finfo(tdt).bits // 8
        x_bytes = 2 * b * s * c * esz  # read x, write out
        nbytes = x_bytes + 2 * tshape_numel * tsz + c * esz
        k = n_copies(x_bytes)
        xs = [torch.randn(shape, device="cuda", dtype=dtype) for _ in range(k)]
        w = torch.randn(c, device="cuda", dtype=dtype)
        outs = [torch.empty_like(x) for x in xs]
        ours = time_graph(lambda i: fused(xs[i], cos, sin, w, eps, out=outs[i]), k)
        base = {
            "eager": time_graph(lambda i: eager(xs[i], cos, sin, w, eps), k),
            "torch.compile": time_graph(lambda i: comp(xs[i], cos, sin, w, eps), k),
        }
        # correctness of what was timed: against the float64 oracle
        err = (outs[0].float() - oracle(xs[0], cos, sin, w, eps)).abs().max().item()
        rows.append(Row(op, list(shape), f"bf16 x, {str(tdt).replace('torch.', '')} cos/sin", ours, base,
                        bytes=nbytes,
                        note=f"heads {heads} x {d}, table batch {tb}; max abs err vs fp64 oracle {err:.2e}")
                    .finish(copy_gbps))
        del xs, outs, cos, sin
        torch.cuda.empty_cache()
    return rows
