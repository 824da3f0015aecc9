"""RoPE family benchmarks: the fused RMSNorm + RoPE ops vs the eager composition the models
run (reference rms_norm, then diffusers' / LTX-2's RoPE formula) and torch.compile of that
composition; same run, same method (benchmarks/common.py).

Bytes counted: x read once + out written once + cos and sin read once (the table is
[1, S, C] or [B, H, S, d/2] as given; a batch-broadcast table counts once) + the weight."""

import math

import torch

import ltx_kernels as lk

from common import Row, n_copies, time_graph

EPS_Q = 1e-5  # diffusers LTX-Video norm_q / norm_k
EPS_SPLIT = 1e-6


def eager_rms_norm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def eager_interleaved(x, w, cos, sin, eps):
    """norm_q then diffusers' apply_rotary_emb."""
    y = eager_rms_norm(x, w, eps)
    real, imag = y.unflatten(2, (-1, 2)).unbind(-1)
    rot = torch.stack([-imag, real], dim=-1).flatten(2)
    return (y.float() * cos + rot.float() * sin).to(x.dtype)


def eager_split(x, w, cos, sin, eps):
    """norm, then LTX-2's apply_split_rotary_emb (x [B, S, H*d], cos/sin [B, H, S, d/2])."""
    y = eager_rms_norm(x, w, eps)
    b, h, t, _ = cos.shape
    ys = y.reshape(b, t, h, -1).swapaxes(1, 2).unflatten(-1, (2, -1))
    first, second = ys[..., :1, :], ys[..., 1:, :]
    c, s = cos.unsqueeze(-2), sin.unsqueeze(-2)
    out = torch.cat([first * c - second * s, second * c + first * s], dim=-2)
    return out.flatten(-2).swapaxes(1, 2).reshape(b, t, -1).to(x.dtype)


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
    c_inter = torch.compile(eager_interleaved, dynamic=False)
    c_split = torch.compile(eager_split, dynamic=False)
    for op, shape, heads, d, tb, tdt in CASES[:2] if quick else CASES:
        b, s, c = shape
        if op == "rms_norm_rope":
            ang = torch.rand(tb, s, c // 2, device="cuda") * 2 * math.pi
            tshape_numel = tb * s * c
            eps, fused, eager, comp = EPS_Q, lk.rms_norm_rope, eager_interleaved, c_inter
            ang = ang.repeat_interleave(2, dim=-1)
        else:
            ang = torch.rand(tb, heads, s, d // 2, device="cuda") * 2 * math.pi
            tshape_numel = tb * heads * s * (d // 2)
            eps, fused, eager, comp = EPS_SPLIT, lk.rms_norm_split_rope, eager_split, c_split
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
            "eager": time_graph(lambda i: eager(xs[i], w, cos, sin, eps), k),
            "torch.compile": time_graph(lambda i: comp(xs[i], w, cos, sin, eps), k),
        }
        # correctness of what was timed (cheap): against the eager composition
        err = (outs[0].float() - eager(xs[0], w, cos, sin, eps).float()).abs().max().item()
        rows.append(Row(op, list(shape), f"bf16 x, {str(tdt).replace('torch.', '')} cos/sin", ours, base,
                        bytes=nbytes, note=f"heads {heads} x {d}, table batch {tb}; max abs err vs eager {err:.2e}")
                    .finish(copy_gbps))
        del xs, outs, cos, sin
        torch.cuda.empty_cache()
    return rows
