"""The FP8 attention operands from the passes that produce q, k and v, instead of one pass over
the 16-bit q, k and v (quantize_attention_fp8):

- attention_values_fp8(v): v's operand alone, bit for bit reference.quantize_attention_fp8's.
- attention_keys_fp8(x, cos, sin, weight): k's operand straight from the key projection's output
  through rms_norm_rope's fp32 y, the mean of the leading keys subtracted, factors per 128 keys
  and head, against reference.attention_keys_fp8 (the float64 oracle of y, the reference encoder):
  the kernel quantizes its own fp32 y32, within e32 of the exact y (tests/bounds.py's
  norm_rope_e32), so each factor must lie within amax(|kc| +- e) / 448 and each code between the
  codes of (kc - e) / s and (kc + e) / s for the kernel's own s (test_fused_fp8.py's check, one
  group per (128 keys, head)); bit for bit where y32 is the reference's own (fp32 x on the CPU,
  whose y is rms_norm_rope's fp32 output).
- q: rms_norm_rope(..., out_dtype=float8_e4m3fn, group_size=D) already is q's operand.
- the three drive lk.attention within the accuracy bound of the one-pass operands on realistic
  keys (a per-channel offset and outlier channels), and the bound fails wrong operands.
"""

import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

from bounds import U, norm_rope_e32
from conftest import ALL_DEVICES, expect_error, grid
from test_attention_quant import OPCHECK_UTILS
from test_fused_fp8 import assert_codes_within

F8 = torch.float8_e4m3fn


def tables(b, s, heads, d, split, dtype=torch.float32, device="cpu"):
    """cos / sin of rms_norm_rope ([1, S, C], interleaved) or rms_norm_split_rope ([1, H, S, D/2])."""
    ang = torch.rand(1, heads, s, d // 2, dtype=torch.float64) * 6.3
    if not split:  # full width, interleaved pairs share an angle
        ang = ang.permute(0, 2, 1, 3).reshape(1, s, heads * d // 2).repeat_interleave(2, -1)
    return ang.cos().to(dtype).to(device), ang.sin().to(dtype).to(device)


def keys_input(b, s, heads, d, dtype, device, offset=3.0):
    """x [B, S, C] with a per-channel offset (what smoothing takes out) and a norm weight."""
    c = heads * d
    x = (torch.randn(b, s, c) + offset * torch.randn(c)).to(dtype).to(device)
    w = (1 + 0.5 * torch.randn(c)).to(dtype).to(device)
    return x, w


# ---- attention_values_fp8 ----------------------------------------------------------------------


@grid(("device", ALL_DEVICES), ("layout", ["bshd", "bhsd"]), ("dtype", [torch.bfloat16, torch.float16, torch.float32]))
def test_values_match_quantize_attention_fp8(device, layout, dtype):
    """v's operand byte for byte and factor for factor the one-pass op's (ragged key counts, head
    dims 64 / 128 / 24)."""
    for d in (64, 128, 24):
        for skv in (1, 31, 129, 300):
            shape = (2, skv, 3, d) if layout == "bshd" else (2, 3, skv, d)
            v = torch.randn(shape).half().to(dtype).to(device)
            q = v[:, :1] if layout == "bshd" else v[:, :, :1]
            v8, vd = lk.attention_values_fp8(v, layout=layout)
            want = ref.quantize_attention_fp8(q.cpu(), v.cpu(), v.cpu(), layout=layout)
            assert torch.equal(v8.view(torch.uint8).cpu(), want[2].view(torch.uint8)), (d, skv)
            assert torch.equal(vd.cpu(), want[5]), (d, skv)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_values_errors(device):
    v = torch.randn(1, 10, 2, 64, device=device)
    op = "attention_values_fp8"
    expect_error(op, lambda: lk.attention_values_fp8(v, layout="bsd"), "layout must be")
    expect_error(op, lambda: lk.attention_values_fp8(v[0]), "v must be 4-D")
    expect_error(op, lambda: lk.attention_values_fp8(v.double()), "v must be bfloat16, float16 or float32")
    expect_error(op, lambda: lk.attention_values_fp8(torch.randn(1, 10, 2, 12, device=device)),
                 "head dim must be a multiple of 8")


# ---- attention_keys_fp8 ------------------------------------------------------------------------


def check_keys(x, cos, sin, w, heads, split, smooth_keys, what, eps=1e-6):
    """The op's (k8, k_descale), checked by assert_keys_within."""
    k8, kd = lk.attention_keys_fp8(x, cos, sin, w, eps, heads=heads, split_rope=split, smooth_keys=smooth_keys)
    assert_keys_within(k8, kd, x, cos, sin, w, heads, split, smooth_keys, what, eps)
    return k8, kd


def assert_keys_within(k8, kd, x, cos, sin, w, heads, split, smooth_keys, what, eps=1e-6):
    """(k8, k_descale) against the float64 oracle within e32 (module docstring)."""
    b, s, c = x.shape
    d = c // heads
    nb = -(-s // 128)
    assert k8.shape == (b, s, heads, d) and k8.dtype == F8 and k8.is_contiguous()
    assert kd.shape == (b, nb, heads) and kd.dtype == torch.float32
    xc, cc, sc, wc = (t.cpu() if t is not None else None for t in (x, cos, sin, w))
    y = (ref.rms_norm_split_rope if split else ref.rms_norm_rope)(xc, cc, sc, wc, eps)  # float64 [B, S, C]
    e32 = norm_rope_e32(xc, cc, sc, wc, eps, not split).expand(y.shape)
    n = min(smooth_keys, s)
    yh, eh = y.reshape(b, s, heads, d), e32.reshape(b, s, heads, d)
    if n > 0:  # the mean of y32 is within max e32 of the leading rows' of y's, rounded once
        mean = yh[:, :n].mean(1, keepdim=True)
        kc = yh - mean
        e = eh + eh[:, :n].amax(1, keepdim=True) + 2 * U * (yh.abs() + mean.abs())
    else:
        kc, e = yh, eh
    # one group per (batch row, 128-key block, head): [B, nb, H, 128 * D], missing keys as zeros
    pad = nb * 128 - s

    def groups(t):
        t = torch.cat([t, torch.zeros(b, pad, heads, d, dtype=t.dtype)], 1)
        return t.reshape(b, nb, 128, heads, d).permute(0, 1, 3, 2, 4).reshape(b * nb * heads, 128 * d)

    q = groups(k8.cpu().view(torch.uint8)).view(F8)
    assert_codes_within(q, kd.cpu().reshape(-1, 1), groups(kc), groups(e), 128 * d, what)


@grid(("device", ALL_DEVICES), ("dtype", [torch.bfloat16, torch.float16, torch.float32]), ("split", [False, True]))
def test_keys_within_the_oracle(device, dtype, split):
    """Ragged key counts (one partial block, several, fewer keys than the mean's), head dims 64 /
    128 / 32, the leading 64 / 128 keys' mean or none, with and without a weight, fp32 and x-dtype
    tables, grouped batch rows."""
    for heads, d in ((4, 64), (2, 128), (3, 32)):
        for s in (1, 100, 129, 300):
            x, w = keys_input(2, s, heads, d, dtype, device)
            for tdt in (torch.float32, dtype):
                cos, sin = tables(2, s, heads, d, split, tdt, device)
                for smooth in (0, 64, 128):
                    check_keys(x, cos, sin, w if smooth != 64 else None, heads, split, smooth,
                               f"{dtype} split{split} h{heads} d{d} s{s} {tdt} smooth{smooth}")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_keys_tables_per_batch_row(device):
    """One table pair per batch row (diffusers' rotary embeddings with per-sample coordinates):
    each row rotated by its own table; the check fails the operand against row 0's table for
    every row (so a kernel that ignored the tables' batch stride would fail it)."""
    heads, d, s = 4, 64, 200
    for split in (False, True):
        x, w = keys_input(2, s, heads, d, torch.bfloat16, device)
        c0, s0 = tables(1, s, heads, d, split, device=device)
        c1, s1 = tables(1, s, heads, d, split, device=device)
        cos, sin = torch.cat([c0, c1]), torch.cat([s0, s1])
        k8, kd = check_keys(x, cos, sin, w, heads, split, 128, f"per-row tables split{split}")
        with pytest.raises(AssertionError):
            assert_keys_within(k8, kd, x, c0.expand_as(cos), s0.expand_as(sin), w, heads, split, 128, "row 0's")


def test_keys_bit_for_bit_on_the_cpu():
    """fp32 x on the CPU: y32 is rms_norm_rope's own fp32 output (one arithmetic), so the operand is
    the reference's on that y bit for bit: codes, factors."""
    for split in (False, True):
        x, w = keys_input(2, 300, 4, 64, torch.float32, "cpu")
        cos, sin = tables(2, 300, 4, 64, split)
        y = (lk.rms_norm_split_rope if split else lk.rms_norm_rope)(x, cos, sin, w, 1e-6)
        for smooth in (0, 64, 192):
            k8, kd = lk.attention_keys_fp8(x, cos, sin, w, 1e-6, heads=4, split_rope=split, smooth_keys=smooth)
            w8, wd, _ = ref.attention_keys_fp8(None, None, None, heads=4, smooth_keys=smooth, y=y)
            assert torch.equal(k8.view(torch.uint8), w8.view(torch.uint8)), (split, smooth)
            assert torch.equal(kd, wd), (split, smooth)


def test_keys_check_fails_wrong_operands():
    """The oracle check is tight: a factor off by 10%, the mean dropped, heads swapped, one block's
    factor doubled each fail it."""
    x, w = keys_input(1, 300, 4, 64, torch.bfloat16, "cpu", offset=4.0)
    cos, sin = tables(1, 300, 4, 64, False)
    k8, kd = check_keys(x, cos, sin, w, 4, False, 128, "correct")
    nomean = lk.attention_keys_fp8(x, cos, sin, w, heads=4, smooth_keys=0)
    swapped = (k8[:, :, [1, 0, 2, 3]].contiguous(), kd[:, :, [1, 0, 2, 3]].contiguous())
    doubled = kd.clone()
    doubled[:, 1] *= 2
    wrong = {"k factors x1.1": (k8, kd * 1.1), "no mean": nomean, "heads swapped": swapped,
             "one block's factor x2": (k8, doubled)}
    for what, (bad8, badd) in wrong.items():
        with pytest.raises(AssertionError):
            assert_keys_within(bad8, badd, x, cos, sin, w, 4, False, 128, what)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_keys_strided_and_empty(device):
    """x as a slice of a wider row (a row stride > C) and a misaligned base; S = 0 and B = 0."""
    big = torch.randn(2, 140, 300, dtype=torch.bfloat16, device=device)
    x = big[:, :, 8:264]  # C 256: 4 heads of 64, row stride 300
    cos, sin = tables(2, 140, 4, 64, False, device=device)
    check_keys(x, cos, sin, None, 4, False, 64, "row stride 300")
    x2 = big.flatten()[1:1 + 2 * 140 * 256].view(2, 140, 256)  # misaligned base
    w2 = torch.randn(257, dtype=torch.bfloat16, device=device)[1:]  # misaligned weight and tables
    cos2, sin2 = (torch.empty(1, 140, 257, device=device)[:, :, 1:].copy_(t) for t in (cos, sin))
    check_keys(x2, cos2, sin2, w2, 4, False, 64, "misaligned")
    for shape in ((2, 0, 256), (0, 5, 256)):
        xe = torch.randn(shape, dtype=torch.bfloat16, device=device)
        ce, se = tables(max(shape[0], 1), shape[1], 4, 64, False, device=device)
        k8, kd = lk.attention_keys_fp8(xe, ce, se, heads=4)
        assert k8.shape == (shape[0], shape[1], 4, 64) and kd.shape == (shape[0], -(-shape[1] // 128), 4)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_keys_errors(device):
    x, w = keys_input(1, 10, 2, 64, torch.bfloat16, device)
    cos, sin = tables(1, 10, 2, 64, False, device=device)
    scos, ssin = tables(1, 10, 2, 64, True, device=device)
    op, name = lk.attention_keys_fp8, "attention_keys_fp8"
    expect_error(name, lambda: op(x, cos, sin, w, heads=3), "heads must be a positive int dividing")
    expect_error(name, lambda: op(x, cos, sin, w, heads=2, smooth_keys=32), "smooth_keys must be 0")
    expect_error(name, lambda: op(x, cos, sin, w, heads=32), "head dim x.shape[-1] / heads must be a multiple of 8")
    expect_error(name, lambda: op(x[0], cos, sin, w, heads=2), "x must be 3-D")
    expect_error(name, lambda: op(x, scos, ssin, w, heads=2), "cos/sin must have shape [B or 1, S, C]")
    expect_error(name, lambda: op(x, cos, sin, w, heads=2, split_rope=True), "cos/sin must have shape [B or 1, heads, S")
    expect_error(name, lambda: op(x, scos[:, :1].repeat(1, 4, 1, 1)[:, :, :, :16], ssin[:, :1].repeat(1, 4, 1, 1)[:, :, :, :16],
                            w, heads=2, split_rope=True), "the split RoPE's head dim")
    expect_error(name, lambda: op(x, cos, sin, w[:5], heads=2), "weight must be 1-D")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_opcheck_and_compile(device):
    x, w = keys_input(1, 130, 2, 64, torch.bfloat16, device)
    cos, sin = tables(1, 130, 2, 64, False, device=device)
    k8, kd = lk.attention_keys_fp8(x, cos, sin, w, heads=2)
    torch.library.opcheck(lk.ops.attention_keys_fp8.default,
                          (torch.empty_like(k8).flatten(2), torch.empty_like(kd), x, cos, sin, w, 1e-6, 2, False, 128),
                          test_utils=OPCHECK_UTILS)
    v = x.view(1, 130, 2, 64)
    v8, vd = lk.attention_values_fp8(v)
    torch.library.opcheck(lk.ops.attention_values_fp8.default, (torch.empty_like(v8), torch.empty_like(vd), v, "bshd"),
                          test_utils=OPCHECK_UTILS)
    f = torch.compile(lambda a: lk.attention_keys_fp8(a, cos, sin, w, heads=2), fullgraph=True)
    g8, gd = f(x)
    assert torch.equal(g8.view(torch.uint8), k8.view(torch.uint8)) and torch.equal(gd, kd)


# ---- the three producers drive attention ---------------------------------------------------------


def _rel(out, want):
    o, w = out.double().cpu().flatten(), want.double().flatten()
    return float((o - w).norm() / w.norm())


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_producers_drive_attention(device):
    """q from rms_norm_rope's FP8 output (group = D), k from attention_keys_fp8 (the leading 128
    keys' mean), v from attention_values_fp8, on keys whose norm output carries a per-channel
    offset of ~8 sigma and outlier channels of ~40 sigma (test_attention.py's realistic keys; the
    rotation is the identity so that the offset is the same for every key, as for RoPE's slow
    channels): the attention of the exact rms_norm_rope q and k within rel L2 0.08. Measured on
    the CPU: 0.049-0.053 (one-pass operands of the bf16-rounded q, k: 0.053-0.059); the same
    bound fails k factors x1.1 (0.16-0.19), v factors x1.1 (0.11) and k without its mean (0.30)."""
    b, s, heads, d = 1, 512, 2, 64
    c = heads * d
    xq = torch.randn(b, s, c).bfloat16().to(device)
    offset = 8 * torch.randn(c)
    offset[[3, 17, 40, 64 + 5, 64 + 33]] += 40.0
    xk = (torch.randn(b, s, c) + offset).bfloat16().to(device)
    v = torch.randn(b, s, heads, d).bfloat16().to(device)
    wq = (1 + 0.1 * torch.randn(c)).bfloat16().to(device)
    wk = (12 * (1 + 0.1 * torch.randn(c))).bfloat16().to(device)  # undoes the norm's 1 / rms of the offset rows
    cos, sin = torch.ones(1, s, c, device=device), torch.zeros(1, s, c, device=device)
    qy = ref.rms_norm_rope(xq.cpu(), cos.cpu(), sin.cpu(), wq.cpu()).reshape(b, s, heads, d)
    ky = ref.rms_norm_rope(xk.cpu(), cos.cpu(), sin.cpu(), wk.cpu()).reshape(b, s, heads, d)
    want = ref.attention(qy, ky, v.cpu().double())
    q8, qd = lk.rms_norm_rope(xq, cos, sin, wq, out_dtype=F8, group_size=d)
    k8, kd = lk.attention_keys_fp8(xk, cos, sin, wk, heads=heads, smooth_keys=128)
    v8, vd = lk.attention_values_fp8(v)
    ops8 = (q8.view(b, s, heads, d), k8, v8, qd.view(b, s, heads), kd, vd)
    rel = _rel(lk.attention(*ops8), want)
    assert rel <= 0.08, rel
    raw = lk.attention_keys_fp8(xk, cos, sin, wk, heads=heads, smooth_keys=0)
    wrong = {"k factors x1.1": (ops8[0], ops8[1], ops8[2], ops8[3], kd * 1.1, vd),
             "v factors x1.1": (*ops8[:5], vd * 1.1),
             "no k mean": (ops8[0], raw[0], ops8[2], ops8[3], raw[1], vd)}
    for what, bad in wrong.items():
        rel_bad = _rel(lk.attention(*bad), want)
        assert rel_bad > 0.08, f"{what}: rel L2 {rel_bad:.4f} within the bound (correct: {rel:.4f})"
