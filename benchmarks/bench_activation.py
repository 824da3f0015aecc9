"""Activation family benchmarks: ours vs the eager fp32 formula (benchmarks/baselines.py),
PyTorch's fused op where one exists (F.gelu, F.silu) and torch.compile of the fp32 formula, same
run, same method (benchmarks/common.py); the error of what was timed is measured against the
float64 oracles of ltx_kernels.reference. Bytes = bytes read + bytes written by the op:
  elementwise      2 * numel * size
  *_and_mul        (2d read + d written) * rows * size = 1.5 * numel(x) * size
  gated_attention  (2 * numel(x) + numel(gate)) * size
"""

import torch
import torch.nn.functional as F

import ltx_kernels as lk
from ltx_kernels import reference as ref

import baselines as bl
from common import Row, n_copies, time_graph

# LTX-Video FFN (2 x 2688 tokens x 8192), a larger LTX-2 video FFN, an LLM SwiGLU (Llama-3-70B
# intermediate 14336 x 2 = 28672) and the LTX-2 attention output of 32760 tokens x 4096.
ELEMENTWISE_SHAPES = [(2, 2688, 8192), (2, 6144, 16384), (1, 32760, 4096)]
AND_MUL_SHAPES = [(4096, 2 * 14336), (2, 2688, 2 * 8192), (1, 32760, 2 * 4096)]
GATED_SHAPES = [((1, 32760, 4096), 32), ((2, 6144, 4096), 32), ((2, 2688, 2048), 32)]


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _time_ops(ops, xs, outs, k, shape, dtype, nbytes, copy_gbps, note=""):
    """One Row per entry of `ops` (name: (ours(x, out=), eager, fp64 oracle, PyTorch's fused op, its
    name)), each timed over the k rotated inputs xs / outputs outs; the note gives ours' max abs
    error against the oracle."""
    rows = []
    for name, (ours_fn, eager, oracle, fused, fused_name) in ops.items():
        compiled = torch.compile(eager, dynamic=False)
        ours = time_graph(lambda i: ours_fn(xs[i], out=outs[i]), k)
        base = {
            "eager": time_graph(lambda i: eager(xs[i]), k),
            fused_name: time_graph(lambda i: fused(xs[i]), k),
            "torch.compile": time_graph(lambda i: compiled(xs[i]), k),
        }
        err = (outs[0].float() - oracle(xs[0])).abs().max().item()
        rows.append(Row(name, list(shape), _dtype_name(dtype), ours, base, bytes=nbytes,
                        note=f"{note}max abs err vs fp64 oracle {err:.2e}").finish(copy_gbps))
    return rows


def _elementwise(copy_gbps, dtype, shape):
    ops = {
        "gelu": (lk.gelu, bl.gelu, ref.gelu, lambda x: F.gelu(x), "F.gelu"),
        "gelu_tanh": (lk.gelu_tanh, bl.gelu_tanh, ref.gelu_tanh, lambda x: F.gelu(x, approximate="tanh"),
                      "F.gelu(tanh)"),
        "silu": (lk.silu, bl.silu, ref.silu, F.silu, "F.silu"),
    }
    numel = torch.Size(shape).numel()
    nbytes = 2 * numel * torch.finfo(dtype).bits // 8
    k = n_copies(nbytes)
    xs = [torch.randn(shape, device="cuda", dtype=dtype) * 3 for _ in range(k)]
    outs = [torch.empty_like(x) for x in xs]
    rows = _time_ops(ops, xs, outs, k, shape, dtype, nbytes, copy_gbps)
    del xs, outs
    torch.cuda.empty_cache()
    return rows


def _and_mul(copy_gbps, dtype, shape):
    d = shape[-1] // 2
    out_shape = (*shape[:-1], d)
    ops = {
        "gelu_and_mul(tanh)": (lambda x, out: lk.gelu_and_mul(x, "tanh", True, out=out),
                               lambda x: bl.gelu_and_mul(x, "tanh", True),
                               lambda x: ref.gelu_and_mul(x, "tanh", True),
                               lambda x: F.gelu(x[..., :d], approximate="tanh") * x[..., d:], "F.act * mul"),
        "gelu_and_mul": (lambda x, out: lk.gelu_and_mul(x, "none", True, out=out),
                         lambda x: bl.gelu_and_mul(x, "none", True),
                         lambda x: ref.gelu_and_mul(x, "none", True),
                         lambda x: F.gelu(x[..., :d]) * x[..., d:], "F.act * mul"),
        "silu_and_mul": (lambda x, out: lk.silu_and_mul(x, True, out=out),
                         lambda x: bl.silu_and_mul(x, True),
                         lambda x: ref.silu_and_mul(x, True),
                         lambda x: F.silu(x[..., :d]) * x[..., d:], "F.act * mul"),
    }
    numel = torch.Size(shape).numel()
    nbytes = (numel + numel // 2) * torch.finfo(dtype).bits // 8
    k = n_copies(nbytes)
    xs = [torch.randn(shape, device="cuda", dtype=dtype) * 3 for _ in range(k)]
    outs = [torch.empty(out_shape, device="cuda", dtype=dtype) for _ in range(k)]
    rows = _time_ops(ops, xs, outs, k, shape, dtype, nbytes, copy_gbps, "act_first=True; ")
    del xs, outs
    torch.cuda.empty_cache()
    return rows


def _gated(copy_gbps, dtype, shape, heads):
    numel = torch.Size(shape).numel()
    gshape = (*shape[:-1], heads)
    nbytes = (2 * numel + numel // (shape[-1] // heads)) * torch.finfo(dtype).bits // 8
    k = n_copies(nbytes)
    xs = [torch.randn(shape, device="cuda", dtype=dtype) for _ in range(k)]
    gs = [torch.randn(gshape, device="cuda", dtype=dtype) for _ in range(k)]
    outs = [torch.empty_like(x) for x in xs]

    def eager(x, g):  # the formula in the tensors' own dtype
        return (x.unflatten(-1, (heads, -1)) * (2 * torch.sigmoid(g)).unsqueeze(-1)).flatten(-2)

    compiled = torch.compile(bl.gated_attention, dynamic=False)
    ours = time_graph(lambda i: lk.gated_attention(xs[i], gs[i], out=outs[i]), k)
    base = {
        "eager": time_graph(lambda i: eager(xs[i], gs[i]), k),
        "eager fp32": time_graph(lambda i: bl.gated_attention(xs[i], gs[i]), k),
        "torch.compile": time_graph(lambda i: compiled(xs[i], gs[i]), k),
    }
    err = (outs[0].float() - ref.gated_attention(xs[0], gs[0])).abs().max().item()
    row = Row("gated_attention", list(shape), _dtype_name(dtype), ours, base, bytes=nbytes,
              note=f"heads={heads}; max abs err vs fp64 oracle {err:.2e}").finish(copy_gbps)
    del xs, gs, outs
    torch.cuda.empty_cache()
    return [row]


def run(copy_gbps, quick=False):
    rows = []
    dtypes = [torch.bfloat16] + ([] if quick else [torch.float16, torch.float32])
    for dtype in dtypes:
        full = dtype == torch.bfloat16  # other dtypes: the first shape of each group only
        ew = ELEMENTWISE_SHAPES[:1] if (quick or not full) else ELEMENTWISE_SHAPES
        am = AND_MUL_SHAPES[:1] if (quick or not full) else AND_MUL_SHAPES
        ga = GATED_SHAPES[:1] if (quick or not full) else GATED_SHAPES
        for shape in ew:
            rows += _elementwise(copy_gbps, dtype, shape)
        for shape in am:
            rows += _and_mul(copy_gbps, dtype, shape)
        for shape, heads in ga:
            rows += _gated(copy_gbps, dtype, shape, heads)
    return rows
