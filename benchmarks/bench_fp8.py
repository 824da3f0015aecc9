"""FP8 family benchmarks: per-token-group and 128x128-block quantizers and their dequantizers,
ours vs an eager PyTorch composition (benchmarks/baselines.py: reshape to groups, amax, divide,
.to(float8)) and torch.compile of it; same run, same method (benchmarks/common.py).
Bytes = read + written (x once, q once, plus the scales)."""

import torch

import ltx_kernels as lk

import baselines as bl
from common import Row, n_copies, time_graph

# LTX-Video's attention-output / cross-attention input (B 2 x 2688 tokens, 2048), then >= 100 MB
GROUP_SHAPES = [(2 * 2688, 2048), (2 * 6144, 4096), (32760, 4096)]
BLOCK_SHAPES = [(16384, 4096), (4096, 16384)]
F8 = torch.float8_e4m3fn


def _bench(name, shape, ours, eager, compiled, nbytes, k, rows, copy_gbps, note="", extra=None):
    base = {"eager": time_graph(eager, k), "torch.compile": time_graph(compiled, k)}
    base.update({key: time_graph(fn, k) for key, fn in (extra or {}).items()})
    rows.append(Row(name, list(shape), "bfloat16", time_graph(ours, k), base, bytes=nbytes,
                    note=note).finish(copy_gbps))


def run(copy_gbps, quick=False):
    rows = []
    cg, cgd, cb, cbd = (torch.compile(f, dynamic=False) for f in (
        bl.quantize_fp8_per_token_group, bl.dequantize_fp8_per_token_group, bl.quantize_fp8_block,
        bl.dequantize_fp8_block))
    # what FP8BlockwiseLinear traces under torch.compile when the quantizer is left to Inductor
    # (the rule in PyTorch ops, M-major scales; integrations/_compile_policy.py)
    cgr = torch.compile(lambda x: lk.fp8._quantize_fp8_per_token_group_composed(x, 128, "mn_major"), dynamic=False)
    for shape in GROUP_SHAPES[1:2] if quick else GROUP_SHAPES:
        m, kk = shape
        nbytes = m * kk * 3 + m * (kk // 128) * 4
        k = n_copies(nbytes)
        xs = [torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(k)]
        qs = [torch.empty(shape, device="cuda", dtype=F8) for _ in range(k)]
        ss = [lk.mn_major_scales(m, kk // 128, "cuda") for _ in range(k)]
        _bench("quantize_fp8_per_token_group", shape,
               lambda i: lk.quantize_fp8_per_token_group(xs[i], 128, "mn_major", out=(qs[i], ss[i])),
               lambda i: bl.quantize_fp8_per_token_group(xs[i]), lambda i: cg(xs[i]), nbytes, k, rows, copy_gbps,
               note="mn_major scales", extra={"torch.compile (rule)": lambda i: cgr(xs[i])})
        # what was timed, against the eager composition (whose amax / 448 is a multiplication by
        # the reciprocal on CUDA, so its scales can be an ulp off the rule) and against the
        # compiled rule (Inductor's approximate division: a code can move by one step)
        q_e, s_e = bl.quantize_fp8_per_token_group(xs[0])
        same = torch.equal(qs[0].view(torch.uint8), q_e.view(torch.uint8)) and torch.equal(ss[0], s_e)
        q_r, s_r = cgr(xs[0])
        diff = (qs[0].view(torch.uint8) != q_r.view(torch.uint8)).float().mean().item()
        rows[-1].note += (f"; equal to eager: {same}; compiled rule: scales equal {torch.equal(ss[0], s_r)}, "
                          f"codes differing {diff:.1e}")
        outs = [torch.empty(shape, device="cuda", dtype=torch.bfloat16) for _ in range(k)]
        _bench("dequantize_fp8_per_token_group", shape,
               lambda i: lk.dequantize_fp8_per_token_group(qs[i], ss[i], 128, out=outs[i]),
               lambda i: bl.dequantize_fp8_per_token_group(qs[i], ss[i]), lambda i: cgd(qs[i], ss[i]), nbytes, k,
               rows, copy_gbps)
        del xs, qs, ss, outs
        torch.cuda.empty_cache()
    for shape in BLOCK_SHAPES[:1] if quick else BLOCK_SHAPES:
        n, kk = shape
        nbytes = n * kk * 3 + (n // 128) * (kk // 128) * 4
        k = n_copies(nbytes)
        ws = [torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(k)]
        qs = [torch.empty(shape, device="cuda", dtype=F8) for _ in range(k)]
        ss = [torch.empty(n // 128, kk // 128, device="cuda") for _ in range(k)]
        _bench("quantize_fp8_block", shape,
               lambda i: lk.quantize_fp8_block(ws[i], out=(qs[i], ss[i])),
               lambda i: bl.quantize_fp8_block(ws[i]), lambda i: cb(ws[i]), nbytes, k, rows, copy_gbps)
        q_e, s_e = bl.quantize_fp8_block(ws[0])
        same = torch.equal(qs[0].view(torch.uint8), q_e.view(torch.uint8)) and torch.equal(ss[0], s_e)
        rows[-1].note += f"equal to eager: {same}"
        outs = [torch.empty(shape, device="cuda", dtype=torch.bfloat16) for _ in range(k)]
        _bench("dequantize_fp8_block", shape,
               lambda i: lk.dequantize_fp8_block(qs[i], ss[i], out=outs[i]),
               lambda i: bl.dequantize_fp8_block(qs[i], ss[i]), lambda i: cbd(qs[i], ss[i]), nbytes, k,
               rows, copy_gbps)
        del ws, qs, ss, outs
        torch.cuda.empty_cache()
    return rows
