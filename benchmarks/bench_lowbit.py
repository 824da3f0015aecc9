"""Low-bit family benchmarks (NVFP4, LTX-2 FP6): ours vs an eager PyTorch composition of the
same math and torch.compile of it; same run, same method (benchmarks/common.py).

Bytes counted = read + written, each once:
  quantize_nvfp4    x (2 B/elt bf16) + packed (0.5 B) + block scales (1/16 B, padding ignored)
  dequantize_nvfp4  packed + block scales + out (2 B)
  fp6_pack          E4M3 in (1 B) + packed (0.75 B); fp6_unpack the reverse
  quantize_fp6_block  w (2 B) + packed (0.75 B) + scales (4 B per 128x128 block)"""

import torch

import ltx_kernels as lk

from common import Row, n_copies, time_graph

NVFP4_SHAPES = [(16384, 4096), (4096, 16384)]
FP6_SHAPE = (16384, 4096)
_E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def to_blocked(s):
    """[rows, k/16] (rows % 128 == 0, k/16 % 4 == 0) -> cuBLASLt 128x4 tiles."""
    r, c = s.shape
    b = s.view(r // 128, 128, c // 4, 4).permute(0, 2, 1, 3)
    return b.reshape(-1, 4, 32, 4).transpose(1, 2).reshape(r, c)


def from_blocked(s):
    r, c = s.shape
    b = s.view(-1, 32, 4, 4).transpose(1, 2).reshape(r // 128, c // 4, 128, 4)
    return b.permute(0, 2, 1, 3).reshape(r, c)


def eager_quantize_nvfp4(x, s_t):
    rows, k = x.shape
    xb = x.float().view(rows, k // 16, 16)
    r = (xb.abs().amax(-1) / 6.0) / s_t
    sb = r.clamp(max=448.0).to(torch.float8_e4m3fn)
    q = xb / (s_t * sb.float()).unsqueeze(-1)
    a = q.abs()
    m = ((a > 0.25).to(torch.uint8) + (a >= 0.75) + (a > 1.25) + (a >= 1.75) + (a > 2.5)
         + (a >= 3.5) + (a > 5.0))
    code = (m | ((q < 0).to(torch.uint8) << 3)).view(rows, k)
    packed = (code[:, 0::2] << 4) | code[:, 1::2]
    return packed, to_blocked(sb.view(torch.uint8))


def eager_dequantize_nvfp4(packed, scales, s_t, lut):
    rows = packed.shape[0]
    codes = torch.stack([packed >> 4, packed & 0xF], -1).view(rows, -1, 16).long()
    sb = from_blocked(scales).view(torch.float8_e4m3fn).float()
    return (lut[codes] * sb.unsqueeze(-1) * s_t).view(rows, -1).to(torch.bfloat16)


def eager_fp6_pack(x):
    b = x.view(torch.uint8).view(*x.shape[:-1], -1, 4).to(torch.int32)
    v = ((b >> 7) << 5) | (b & 0x1F)
    v0, v1, v2, v3 = v.unbind(-1)
    out = torch.stack([(v0 << 2) | (v1 >> 4), ((v1 << 4) | (v2 >> 2)) & 0xFF, ((v2 << 6) | v3) & 0xFF], -1)
    return out.flatten(-2).to(torch.uint8)


def eager_fp6_unpack(p):
    b = p.view(*p.shape[:-1], -1, 3).to(torch.int32)
    b0, b1, b2 = b.unbind(-1)
    v = torch.stack([b0 >> 2, ((b0 & 3) << 4) | (b1 >> 4), ((b1 & 0xF) << 2) | (b2 >> 6), b2 & 0x3F], -1)
    e = ((v >> 5) << 7) | (v & 0x1F)
    return e.flatten(-2).to(torch.uint8).view(torch.float8_e4m3fn)


def eager_quantize_fp6_block(w):
    n, k = w.shape
    wb = w.float().view(n // 128, 128, k // 128, 128)
    s = wb.abs().amax(dim=(1, 3)) / 0.1171875
    q = (wb / s[:, None, :, None]).nan_to_num(0.0).view(n, k).to(torch.float8_e4m3fn)
    return eager_fp6_pack(q), s


def _row(name, shape, dtype, ours, base, nbytes, copy_gbps, note=""):
    return Row(name, list(shape), dtype, ours, base, bytes=nbytes, note=note).finish(copy_gbps)


def run(copy_gbps, quick=False):
    rows = []
    torch._dynamo.reset()
    c_q = torch.compile(eager_quantize_nvfp4, dynamic=False)
    c_dq = torch.compile(eager_dequantize_nvfp4, dynamic=False)
    c_pack = torch.compile(eager_fp6_pack, dynamic=False)
    c_unpack = torch.compile(eager_fp6_unpack, dynamic=False)
    c_fp6b = torch.compile(eager_quantize_fp6_block, dynamic=False)
    lut = torch.tensor(_E2M1 + [-v for v in _E2M1], device="cuda")
    for shape in NVFP4_SHAPES[:1] if quick else NVFP4_SHAPES:
        n = shape[0] * shape[1]
        qbytes = 2 * n + n // 2 + n // 16
        k = n_copies(qbytes)
        xs = [torch.randn(shape, device="cuda", dtype=torch.bfloat16) for _ in range(k)]
        st = lk.nvfp4_per_tensor_scale(xs[0])
        outs = [lk.quantize_nvfp4(x, st) for x in xs]
        ours = time_graph(lambda i: lk.ops.quantize_nvfp4(outs[i][0], outs[i][1], xs[i], st, True), k)
        base = {"eager": time_graph(lambda i: eager_quantize_nvfp4(xs[i], st), k),
                "torch.compile": time_graph(lambda i: c_q(xs[i], st), k)}
        pe, se = eager_quantize_nvfp4(xs[0], st)
        same = torch.equal(pe, outs[0][0]) and torch.equal(se, outs[0][1])
        rows.append(_row("quantize_nvfp4", shape, "bfloat16", ours, base, qbytes, copy_gbps,
                         note=f"bit-equal to the eager composition: {same}"))
        ys = [torch.empty(shape, device="cuda", dtype=torch.bfloat16) for _ in range(k)]
        ours = time_graph(lambda i: lk.dequantize_nvfp4(outs[i][0], outs[i][1], st, shape[1], out=ys[i]), k)
        base = {"eager": time_graph(lambda i: eager_dequantize_nvfp4(outs[i][0], outs[i][1], st, lut), k),
                "torch.compile": time_graph(lambda i: c_dq(outs[i][0], outs[i][1], st, lut), k)}
        same = torch.equal(ys[0], eager_dequantize_nvfp4(outs[0][0], outs[0][1], st, lut))
        rows.append(_row("dequantize_nvfp4", shape, "bfloat16", ours, base, qbytes, copy_gbps,
                         note=f"bit-equal to the eager composition: {same}"))
        del xs, outs, ys
        torch.cuda.empty_cache()

    n = FP6_SHAPE[0] * FP6_SHAPE[1]
    pbytes = n + n * 3 // 4
    k = n_copies(pbytes)
    es = [(torch.rand(FP6_SHAPE, device="cuda") * 0.2 - 0.1).to(torch.float8_e4m3fn) for _ in range(k)]
    ps = [lk.fp6_pack(e) for e in es]
    ours = time_graph(lambda i: lk.fp6_pack(es[i], out=ps[i]), k)
    base = {"eager": time_graph(lambda i: eager_fp6_pack(es[i]), k),
            "torch.compile": time_graph(lambda i: c_pack(es[i]), k)}
    rows.append(_row("fp6_pack", FP6_SHAPE, "float8_e4m3fn", ours, base, pbytes, copy_gbps,
                     note=f"bit-equal to eager: {torch.equal(ps[0], eager_fp6_pack(es[0]))}"))
    us = [torch.empty_like(e) for e in es]
    ours = time_graph(lambda i: lk.fp6_unpack(ps[i], FP6_SHAPE[1], out=us[i]), k)
    base = {"eager": time_graph(lambda i: eager_fp6_unpack(ps[i]), k),
            "torch.compile": time_graph(lambda i: c_unpack(ps[i]), k)}
    rows.append(_row("fp6_unpack", FP6_SHAPE, "uint8", ours, base, pbytes, copy_gbps))
    del es, ps, us
    torch.cuda.empty_cache()

    bbytes = 2 * n + n * 3 // 4 + 4 * (n // (128 * 128))
    k = n_copies(bbytes)
    ws = [torch.randn(FP6_SHAPE, device="cuda", dtype=torch.bfloat16) for _ in range(k)]
    ours = time_graph(lambda i: lk.quantize_fp6_block(ws[i]), k)
    base = {"eager": time_graph(lambda i: eager_quantize_fp6_block(ws[i]), k),
            "torch.compile": time_graph(lambda i: c_fp6b(ws[i]), k)}
    p, s = lk.quantize_fp6_block(ws[0])
    pe, se = eager_quantize_fp6_block(ws[0])
    rows.append(_row("quantize_fp6_block", FP6_SHAPE, "bfloat16", ours, base, bbytes, copy_gbps,
                     note=f"bit-equal to eager: {torch.equal(p, pe) and torch.equal(s, se)}"))
    del ws
    torch.cuda.empty_cache()
    return rows
