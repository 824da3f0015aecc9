"""FP8 attention operands (quantize_attention_fp8, the pass before every FP8 attention call, and
attention_values_fp8, v's operand alone): ours
vs the same definition in PyTorch (benchmarks/baselines.py: eager and torch.compile), at the
self-attention shapes of benchmarks/bench_attention.py, k factors per 128 keys (what the
attention kernel's fast path takes) and per key, k smoothed by the mean of all keys and (k factors
per 128 keys) by the mean of the leading 128 keys (smooth_keys=128); same run, same method
(benchmarks/common.py).

Bytes = what the op must move: q, k and v read once (bf16), one code byte per element written,
plus the factors. The kernel reads v a second time (its per-channel maxima come first), k a
second time with the exact mean (only its leading keys with smooth_keys) and moves a small
workspace; the note gives that traffic too, so the fraction of the copy ceiling is that of the
single-pass minimum."""

import torch

import ltx_kernels as lk
from ltx_kernels.attention import KEY_ORDER

import baselines as bl
from common import Row, n_copies, time_graph

# name, B, S, H (= Hkv), D
SHAPES = [
    ("LTX-Video self 49x512x768", 2, 2688, 32, 64),
    ("LTX-2 self 49x512x768", 2, 2688, 32, 128),
    ("LTX-Video self 121x720x1280", 1, 14080, 32, 64),
    ("LTX-2 self 16k", 1, 16384, 32, 128),
]
QUICK = [0, 1]


def traffic(b, s, h, d, k_block, smooth_keys=0):
    """(minimal bytes, bytes the kernels move) for bf16 q, k, v of [b, s, h, d]."""
    n = b * s * h * d
    spad = -(-s // 32) * 32
    factors = 4 * (b * s * h + b * (s if k_block == 1 else -(-s // 128)) * h + b * h * d)
    minimal = 3 * n * 2 + 2 * n + b * h * d * spad + factors
    mean_keys = min(smooth_keys, s) if smooth_keys > 0 else s
    chunks, k_chunks = -(-s // 64), -(-mean_keys // 64)
    workspace = b * h * d * (8 * k_chunks + 4 * chunks)
    k_again = b * mean_keys * h * d * 2  # the mean's keys, read before the codes
    return minimal, minimal + n * 2 + k_again + 2 * workspace


def run(copy_gbps, quick=False):
    rows = []
    compiled = torch.compile(bl.quantize_attention_fp8, dynamic=False)
    for i, (name, b, s, h, d) in enumerate(SHAPES):
        if quick and i not in QUICK:
            continue
        spad = -(-s // 32) * 32
        order = torch.tensor([(p // 32) * 32 + KEY_ORDER[p % 32] for p in range(spad)], device="cuda")
        for k_block, smooth_keys in ((128, 0), (1, 0), (128, 128)):
            nbytes, moved = traffic(b, s, h, d, k_block, smooth_keys)
            k = n_copies(nbytes)
            qs, ks, vs = ([torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(k)]
                          for _ in range(3))
            kw = dict(k_block=k_block, smooth_keys=smooth_keys)
            base = {"eager": time_graph(lambda j: bl.quantize_attention_fp8(qs[j], ks[j], vs[j], order, **kw), k),
                    "torch.compile": time_graph(lambda j: compiled(qs[j], ks[j], vs[j], order, **kw), k)}
            ours = time_graph(lambda j: lk.quantize_attention_fp8(qs[j], ks[j], vs[j], **kw), k)
            # what was timed, bit for bit against the float64 definition (reference.py, on the
            # CPU) of batch row 0, heads 0-1: every statistic is per (batch row, head), so those
            # slices of the full outputs are the reference's outputs of the sliced inputs
            got = lk.quantize_attention_fp8(qs[0], ks[0], vs[0], **kw)
            sl = [t[:1, :, :2].cpu() for t in (qs[0], ks[0], vs[0])]
            want = lk.reference.quantize_attention_fp8(*sl, **kw)
            got = [t[:1, :, :2] if i in (0, 1, 3, 4) else t[:1, :2] for i, t in enumerate(got)]
            same = all(torch.equal(g.cpu().view(torch.uint8), w.view(torch.uint8)) if g.dtype == bl.F8 else
                       torch.equal(g.cpu(), w) for g, w in zip(got, want))
            mean = f"the mean of the first {smooth_keys} keys" if smooth_keys else "the mean of all keys"
            again = "v and k's leading keys" if smooth_keys else "k and v"
            note = (f"{name}; k_block {k_block}; k smoothed by {mean}; kernels move {moved / 1e6:.0f} MB ({again} "
                    f"read twice, workspace) = {moved / (ours * 1e-6) / 1e9:.0f} GB/s; bit-exact vs the float64 "
                    f"reference (batch 0, heads 0-1): {same}")
            rows.append(Row("quantize_attention_fp8", [b, s, h, d], "bfloat16", ours, base, bytes=nbytes,
                            note=note).finish(copy_gbps))
            del qs, ks, vs, got, want
            torch.cuda.empty_cache()
        rows.append(values_row(name, b, s, h, d, order, copy_gbps))
    return rows


def values_row(name, b, s, h, d, order, copy_gbps):
    """attention_values_fp8 (v's operand alone, what the FP8 processors run beside the q and k
    producers): bytes = v read once, one code byte per padded position, the factors."""
    spad = order.numel()
    nbytes = b * s * h * d * 2 + b * h * d * spad + 4 * b * h * d
    k = n_copies(nbytes)
    vs = [torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(k)]
    compiled = torch.compile(bl.attention_values_fp8, dynamic=False)
    base = {"eager": time_graph(lambda j: bl.attention_values_fp8(vs[j], order), k),
            "torch.compile": time_graph(lambda j: compiled(vs[j], order), k)}
    ours = time_graph(lambda j: lk.attention_values_fp8(vs[j]), k)
    got = lk.attention_values_fp8(vs[0])
    want = lk.reference.quantize_attention_fp8(*(vs[0][:1, :, :2].cpu(),) * 3)
    same = (torch.equal(got[0][:1, :2].cpu().view(torch.uint8), want[2].view(torch.uint8))
            and torch.equal(got[1][:1, :2].cpu(), want[5]))
    moved = nbytes + b * s * h * d * 2 + 4 * b * h * d * -(-s // 64) * 2
    note = (f"{name}; v alone; kernels move {moved / 1e6:.0f} MB (v read twice, workspace) = "
            f"{moved / (ours * 1e-6) / 1e9:.0f} GB/s; bit-exact vs the float64 reference (batch 0, heads 0-1): {same}")
    return Row("attention_values_fp8", [b, s, h, d], "bfloat16", ours, base, bytes=nbytes, note=note).finish(copy_gbps)
