"""RoPE family (rms_norm_rope, rms_norm_split_rope, apply_rope, ltx_video_rope_cos_sin).

Oracles: independent transcriptions of the model code's formulas written here (diffusers
LTX-Video's `apply_rotary_emb`: x*cos + rotate_pairs(x)*sin; LTX-2's `apply_split_rotary_emb`),
composed with the float64 reference rms_norm; and the float64 oracles in ltx_kernels.reference.
Bounds (u = 2^-24): a rotated value o = a c -+ b s may cancel, so its fp32 error scales with
M = |a c| + |b s|, not with |o|: the two products and the sum round once each, 2u M; with the
RMSNorm in front, a and b carry its relative error (C / 2 + 8) u (test_rms_norm.norm_rel).
Then one rounding to the output dtype (conftest.rounded_bound).
"""

import math
import re

import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

from bounds import norm_rope_e32, rope_e32, rot_mag
from conftest import (ALL_DEVICES, DTYPES, HAS_CUDA, U32, assert_close_to, assert_within, expect_error, grid,
                      wide_row)

HEADS_D = [(1, 2), (3, 6), (1, 64), (3, 128), (32, 64)]
SPLIT_HEADS_D = [(1, 2), (3, 6), (3, 64), (1, 128), (32, 128)]
SEQS = [1, 7, 83]


def rope_grid(heads_d, seqs):
    """device x dtype x (heads, d) x seq x (batch, table batch): tables shared by the batch or not."""
    return grid(("device", ALL_DEVICES), ("dtype", DTYPES), ("heads,d", heads_d), ("seq", seqs),
                ("batch,tab_batch", [(1, 1), (2, 1), (2, 2)]))


# ---- independent transcriptions of the model code ----------------------------------------------
def rotate_pairs(x):
    """[.., 2i] = -x[2i+1], [.., 2i+1] = x[2i] (diffusers' x_rotated)."""
    real, imag = x.unflatten(-1, (-1, 2)).unbind(-1)
    return torch.stack([-imag, real], dim=-1).flatten(-2)


def diffusers_rope(x, cos, sin):
    """diffusers LTX-Video apply_rotary_emb, in float64: x*cos + rotate_pairs(x)*sin."""
    x = x.double()
    return x * cos.double() + rotate_pairs(x) * sin.double()


def ltx2_split_rope(x, cos, sin):
    """LTX-2 apply_split_rotary_emb, in float64: x [B, S, H*d], cos/sin [B|1, H, S, d/2]."""
    bsz, t = x.shape[0], x.shape[1]
    h = cos.shape[1]
    xs = x.double().reshape(bsz, t, h, -1).swapaxes(1, 2)  # (B, H, S, d)
    split = xs.unflatten(-1, (2, -1))  # (B, H, S, 2, d/2)
    first, second = split[..., :1, :], split[..., 1:, :]
    c, s = cos.double().unsqueeze(-2), sin.double().unsqueeze(-2)
    out = split * c
    out = torch.cat([out[..., :1, :] - s * second, out[..., 1:, :] + s * first], dim=-2)
    return out.flatten(-2).swapaxes(1, 2).reshape(bsz, t, -1)


def tables(shape, device, dtype):
    """cos/sin of random angles (every entry distinct, so index mistakes show)."""
    ang = torch.rand(shape, device=device) * 2 * math.pi
    return ang.cos().to(dtype), ang.sin().to(dtype)


def check_rope(y, x, cos, sin, interleaved, want=None, what=""):
    """apply_rope: y against the oracle (or `want`, the same float64 numbers from a transcription)."""
    want = ref.apply_rope(x, cos, sin, interleaved) if want is None else want
    assert_close_to(y, want, y.dtype, rope_e32(x, cos, sin, interleaved), what)


def check_norm_rope(y, x, cos, sin, weight, eps, interleaved, want=None, what=""):
    """rms_norm_rope (interleaved) / rms_norm_split_rope (split) against the oracle or `want`."""
    if want is None:
        want = (ref.rms_norm_rope if interleaved else ref.rms_norm_split_rope)(x, cos, sin, weight, eps)
    assert_close_to(y, want, y.dtype, norm_rope_e32(x, cos, sin, weight, eps, interleaved), what)


def table_dtypes(dtype):
    return [torch.float32] if dtype == torch.float32 else [torch.float32, dtype]


# ---- rms_norm_rope -------------------------------------------------------------------------------
@rope_grid(HEADS_D, SEQS)
def test_rms_norm_rope_matches_diffusers(device, dtype, heads, d, seq, batch, tab_batch):
    c = heads * d
    x = torch.randn(batch, seq, c, device=device, dtype=dtype) * 2 + 0.3
    w = torch.randn(c, device=device, dtype=dtype)
    for tdt in table_dtypes(dtype):
        cos, sin = tables((tab_batch, seq, c), device, tdt)
        y = lk.rms_norm_rope(x, cos, sin, w, eps=1e-5)
        assert y.shape == x.shape and y.dtype == dtype
        check_norm_rope(y, x, cos, sin, w, 1e-5, True, diffusers_rope(ref.rms_norm(x, w, 1e-5), cos, sin), "diffusers")
        # fused == composition of the unfused reference ops, and the fused oracle
        check_norm_rope(y, x, cos, sin, w, 1e-5, True, ref.apply_rope(ref.rms_norm(x, w, 1e-5), cos, sin, True))
        check_norm_rope(lk.rms_norm_rope(x, cos, sin), x, cos, sin, None, 1e-6, True)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_rms_norm_rope_is_ltx_video_attention(device):
    """norm_q = torch.nn.RMSNorm(C, eps=1e-5) with weight, then apply_rotary_emb with the
    fp32 tables of LTX-Video's rotary embedding on a small grid; x bf16."""
    heads, d, t, h, w = 4, 64, 2, 3, 5
    c = heads * d
    x = torch.randn(2, t * h * w, c, device=device, dtype=torch.bfloat16)
    norm = torch.nn.RMSNorm(c, eps=1e-5, device=device, dtype=torch.float32)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(c, device=device))
    wt = norm.weight.detach().to(torch.bfloat16)
    cos, sin = lk.ltx_video_rope_cos_sin(t, h, w, dim=c, device=device)
    assert cos.dtype == torch.float32 and cos.shape == (1, t * h * w, c)
    y = lk.rms_norm_rope(x, cos, sin, wt, eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(wt.float())
        # the model's fp32 RMSNorm (any summation order: the same bound as ours) then the
        # rotation, in float64: within the kernel's bound plus the module's own fp32 error
        want = diffusers_rope(norm(x.float()), cos, sin)
    e32 = 2 * norm_rope_e32(x, cos, sin, wt, 1e-5, True)
    assert_within(y, want, 2 * 2.0**-8 * want.abs() + e32 + 2.0**-133, "nn.RMSNorm + apply_rotary_emb")


# ---- rms_norm_split_rope -------------------------------------------------------------------------
@rope_grid(SPLIT_HEADS_D, SEQS)
def test_rms_norm_split_rope_matches_ltx2(device, dtype, heads, d, seq, batch, tab_batch):
    c = heads * d
    x = torch.randn(batch, seq, c, device=device, dtype=dtype) * 2 - 0.2
    w = torch.randn(c, device=device, dtype=dtype)
    for tdt in table_dtypes(dtype):
        cos, sin = tables((tab_batch, heads, seq, d // 2), device, tdt)
        y = lk.rms_norm_split_rope(x, cos, sin, w, eps=1e-6)
        assert y.shape == x.shape and y.dtype == dtype
        ltx2 = ltx2_split_rope(ref.rms_norm(x, w, 1e-6), cos.expand(batch, -1, -1, -1), sin.expand(batch, -1, -1, -1))
        check_norm_rope(y, x, cos, sin, w, 1e-6, False, ltx2, "LTX-2")
        check_norm_rope(y, x, cos, sin, w, 1e-6, False, ref.apply_rope(ref.rms_norm(x, w, 1e-6), cos, sin, False))
        check_norm_rope(lk.rms_norm_split_rope(x, cos, sin), x, cos, sin, None, 1e-6, False)
        # strided tables: LTX-2 builds [B, S, H, d/2] and views it as [B, H, S, d/2]
        cs, sn = tables((tab_batch, seq, heads, d // 2), device, tdt)
        cs, sn = cs.transpose(1, 2), sn.transpose(1, 2)
        check_norm_rope(lk.rms_norm_split_rope(x, cs, sn, w), x, cs, sn, w, 1e-6, False, what="strided tables")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_vs_unfused_kernels(device, dtype):
    """The fused ops against our own two-kernel composition. The composition rounds the
    normalized row n to x's dtype before rotating (u_T |n| on a and b: u_T M on the output,
    which may cancel), so the two are within the fused bound + the composition's: its
    rounded n's error (u_T + (C/2 + 8) u) M, the rotation's 2u M and its own final rounding."""
    x = torch.randn(2, 33, 3 * 64, device=device, dtype=dtype)
    w = torch.randn(3 * 64, device=device, dtype=dtype)
    ut = 2.0**-8 if dtype == torch.bfloat16 else U32
    for inter, (cos, sin) in [(True, tables((1, 33, 3 * 64), device, torch.float32)),
                              (False, tables((2, 3, 33, 32), device, dtype))]:
        fused = (lk.rms_norm_rope if inter else lk.rms_norm_split_rope)(x, cos, sin, w)
        unfused = lk.apply_rope(lk.rms_norm(x, w), cos, sin, inter)
        want = (ref.rms_norm_rope if inter else ref.rms_norm_split_rope)(x, cos, sin, w)
        e32 = norm_rope_e32(x, cos, sin, w, 1e-6, inter)
        m = rot_mag(ref.rms_norm(x, w), cos, sin, inter)
        bound = 2 * ut * want.abs() + 2 * e32 + ut * m * (1 + 2 * ut) + 2.0**-133
        assert_within(fused, unfused, bound, f"interleaved={inter}")


# ---- apply_rope ----------------------------------------------------------------------------------
def per_head_layout_cases(batch, seq, heads, d, tab_batch, device, tdt):
    """(name, x_shape, cos, sin, interleaved, independent oracle(x) -> fp32 in x's shape)."""
    c = heads * d
    cases = []
    cos, sin = tables((tab_batch, seq, c), device, tdt)
    cases.append(("LTX-Video [B,S,C] interleaved, [B|1,S,C]", (batch, seq, c), cos, sin, True,
                  lambda x, cos=cos, sin=sin: diffusers_rope(x, cos, sin)))
    cos, sin = tables((tab_batch, heads, seq, d // 2), device, tdt)
    cases.append(("LTX-2 [B,S,C] split, [B|1,H,S,d/2]", (batch, seq, c), cos, sin, False,
                  lambda x, cos=cos, sin=sin: ltx2_split_rope(x, cos.expand(batch, -1, -1, -1),
                                                              sin.expand(batch, -1, -1, -1))))
    cos, sin = tables((tab_batch, seq, d), device, tdt)
    cases.append(("[B,S,H,d] interleaved, shared [B|1,S,d]", (batch, seq, heads, d), cos, sin, True,
                  lambda x, cos=cos, sin=sin: diffusers_rope(x, cos.unsqueeze(2), sin.unsqueeze(2))))
    cos, sin = tables((tab_batch, heads, seq, d), device, tdt)
    cases.append(("[B,S,H,d] interleaved, per head [B|1,H,S,d]", (batch, seq, heads, d), cos, sin, True,
                  lambda x, cos=cos, sin=sin: diffusers_rope(x, cos.transpose(1, 2), sin.transpose(1, 2))))
    cos, sin = tables((tab_batch, seq, d // 2), device, tdt)
    ex = lambda t: t.unsqueeze(1).expand(batch, heads, -1, -1)  # noqa: E731
    cases.append(("[B,S,H,d] split, shared [B|1,S,d/2]", (batch, seq, heads, d), cos, sin, False,
                  lambda x, cos=cos, sin=sin: ltx2_split_rope(x.flatten(2), ex(cos), ex(sin)).view(x.shape)))
    cases.append(("[B,S,C] split, shared [B|1,S,d/2]", (batch, seq, c), cos, sin, False,
                  lambda x, cos=cos, sin=sin: ltx2_split_rope(x, ex(cos), ex(sin))))
    return cases


@rope_grid(HEADS_D, [1, 83])
def test_apply_rope_layouts(device, dtype, heads, d, seq, batch, tab_batch):
    for tdt in table_dtypes(dtype):
        for name, shape, cos, sin, inter, oracle in per_head_layout_cases(batch, seq, heads, d, tab_batch, device, tdt):
            x = torch.randn(shape, device=device, dtype=dtype)
            y = lk.apply_rope(x, cos, sin, inter)
            assert y.shape == x.shape and y.dtype == dtype, name
            check_rope(y, x, cos, sin, inter, oracle(x), name)
            check_rope(y, x, cos, sin, inter, what=name)
            x2 = x.clone()
            r = lk.apply_rope(x2, cos, sin, inter, out=x2)  # in place
            assert r.data_ptr() == x2.data_ptr()
            check_rope(x2, x, cos, sin, inter, oracle(x), name + " in place")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_apply_rope_strided(device, dtype):
    """q sliced out of a packed qkv [B, S, 3, H, d] (rows with a gap), in place on the slice;
    and a misaligned start (element path)."""
    b, s, h, d = 2, 7, 3, 64
    qkv = torch.randn(b, s, 3, h, d, device=device, dtype=dtype)
    q = qkv[:, :, 0]  # [B, S, H, d], row stride 3*H*d
    cos, sin = tables((1, s, d), device, torch.float32)
    q0 = q.clone()
    check_rope(lk.apply_rope(q, cos, sin, True), q0, cos, sin, True)
    k_before = qkv[:, :, 1].clone()
    lk.apply_rope(q, cos, sin, True, out=q)
    check_rope(q, q0, cos, sin, True, what="in place")
    assert torch.equal(qkv[:, :, 1], k_before)
    flat = torch.randn(b * s * h * d + 1, device=device, dtype=dtype)
    xm = flat[1:].view(b, s, h * d)
    cos, sin = tables((b, h, s, d // 2), device, dtype)
    check_rope(lk.apply_rope(xm, cos, sin, False), xm, cos, sin, False)
    check_norm_rope(lk.rms_norm_split_rope(xm, cos, sin), xm, cos, sin, None, 1e-6, False)


# ---- shared behaviour ----------------------------------------------------------------------------
@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_out_sentinel_and_inplace(device, dtype):
    b, s, h, d = 2, 83, 3, 64
    c = h * d
    x = torch.randn(b, s, c, device=device, dtype=dtype)
    w = torch.randn(c, device=device, dtype=dtype)
    ci, si = tables((1, s, c), device, torch.float32)
    cs, ss = tables((b, h, s, d // 2), device, dtype)
    runs = [
        (lambda o: lk.rms_norm_rope(x, ci, si, w, out=o), lambda y: check_norm_rope(y, x, ci, si, w, 1e-6, True)),
        (lambda o: lk.rms_norm_split_rope(x, cs, ss, w, out=o), lambda y: check_norm_rope(y, x, cs, ss, w, 1e-6, False)),
        (lambda o: lk.apply_rope(x, cs, ss, False, out=o), lambda y: check_rope(y, x, cs, ss, False)),
    ]
    for fn, check in runs:
        big = torch.full((b, s, c + 8), float("nan"), device=device, dtype=dtype)
        out = big[..., :c]
        y = fn(out)
        assert y.data_ptr() == out.data_ptr()
        assert not torch.isnan(out).any()
        assert torch.isnan(big[..., c:]).all()
        check(out)
    x2 = x.clone()
    lk.rms_norm_rope(x2, ci, si, w, out=x2)
    check_norm_rope(x2, x, ci, si, w, 1e-6, True, what="in place")
    x2 = x.clone()
    lk.rms_norm_split_rope(x2, cs, ss, w, out=x2)
    check_norm_rope(x2, x, cs, ss, w, 1e-6, False, what="in place")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_innermost_stride_is_copied(device):
    """cos/sin whose last dim has stride != 1 are accepted (copied once, documented)."""
    x = torch.randn(2, 7, 128, device=device, dtype=torch.bfloat16)
    cb, sb = tables((1, 7, 256), device, torch.float32)
    cos, sin = cb[..., ::2], sb[..., ::2]
    check_norm_rope(lk.rms_norm_rope(x, cos, sin), x, cos, sin, None, 1e-6, True)
    cb, sb = tables((2, 2, 7, 64), device, torch.float32)
    cos, sin = cb[..., ::2], sb[..., ::2]
    check_norm_rope(lk.rms_norm_split_rope(x, cos, sin), x, cos, sin, None, 1e-6, False)
    check_rope(lk.apply_rope(x, cos, sin, False), x, cos, sin, False)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_empty(device):
    dt = torch.bfloat16
    for b, s in [(0, 5), (2, 0)]:
        x = torch.empty(b, s, 64, device=device, dtype=dt)
        ci, si = tables((1, s, 64), device, torch.float32)
        cs, ss = tables((1, 2, s, 16), device, torch.float32)
        assert lk.rms_norm_rope(x, ci, si).shape == x.shape
        assert lk.rms_norm_split_rope(x, cs, ss).shape == x.shape
        assert lk.apply_rope(x, cs, ss, False).shape == x.shape
        assert lk.apply_rope(x.view(b, s, 2, 32), cs, ss, False).shape == (b, s, 2, 32)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_zero_rows_are_finite(device):
    x = torch.zeros(1, 3, 64, device=device, dtype=torch.bfloat16)
    ci, si = tables((1, 3, 64), device, torch.float32)
    assert torch.equal(lk.rms_norm_rope(x, ci, si), torch.zeros_like(x))


def _re(s):
    return re.escape(s)


@pytest.mark.isolated
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_bad_input_errors(device):
    dt = torch.bfloat16
    x = torch.randn(2, 5, 64, device=device, dtype=dt)
    w = torch.randn(64, device=device, dtype=dt)
    ci, si = tables((1, 5, 64), device, torch.float32)
    cs, ss = tables((2, 2, 5, 16), device, torch.float32)
    bad = {
        "rms_norm_rope": [
            (lambda: lk.rms_norm_rope(x.int(), ci, si), "x must be float32, float16 or bfloat16"),
            (lambda: lk.rms_norm_rope(x[0], ci, si), "x must be 3-D [B, S, C]"),
            (lambda: lk.rms_norm_rope(x[..., :63], ci[..., :63], si[..., :63]), "x.shape[-1] must be even"),
            (lambda: lk.rms_norm_rope(x, ci[:, :4], si[:, :4]), "cos/sin must have shape [B or 1, S, C]"),
            (lambda: lk.rms_norm_rope(x, ci[..., :32], si[..., :32]), "cos/sin must have shape [B or 1, S, C]"),
            (lambda: lk.rms_norm_rope(x, ci.expand(3, -1, -1), si.expand(3, -1, -1)), "batch size must be 1 or x.shape[0]"),
            (lambda: lk.rms_norm_rope(x, ci.half(), si.half()), "cos and sin must be float32 or x's dtype"),
            (lambda: lk.rms_norm_rope(x, ci, si.to(dt)), "sin and cos must have the same dtype"),
            (lambda: lk.rms_norm_rope(x, ci, si[:, :, :32].repeat(1, 1, 2)[:, :4]), "cos and sin must have the same shape"),
            (lambda: lk.rms_norm_rope(x, ci, si, w[:32]), "weight must be 1-D with x.shape[-1] = 64"),
            (lambda: lk.rms_norm_rope(x, ci, si, w.float()), "weight and x must have the same dtype"),
            (lambda: lk.rms_norm_rope(x, ci, si, eps=-1.0), "eps must be >= 0"),
            (lambda: lk.rms_norm_rope(x, ci, si, out=torch.empty(2, 5, 62, device=device, dtype=dt)), "out must have the shape of x"),
            (lambda: lk.rms_norm_rope(x, ci, si, out=torch.empty(2, 5, 64, device=device)), "out and x must have the same dtype"),
            (lambda: lk.rms_norm_rope(x, ci, si, out=torch.empty(64, 5, 2, device=device, dtype=dt).permute(2, 1, 0)), "out must have stride 1"),
        ],
        "rms_norm_split_rope": [
            (lambda: lk.rms_norm_split_rope(x, cs[:, :, :, :15], ss[:, :, :, :15]), "cos/sin must have shape [B or 1, heads, S, d/2]"),
            (lambda: lk.rms_norm_split_rope(x, cs[:, :, :4], ss[:, :, :4]), "cos/sin must have shape [B or 1, heads, S, d/2]"),
            (lambda: lk.rms_norm_split_rope(x, ci, si), "cos/sin must have shape [B or 1, heads, S, d/2]"),
            (lambda: lk.rms_norm_split_rope(x, cs[:, :, :, :0], ss[:, :, :, :0]), "cos/sin must have shape"),
        ],
        "apply_rope": [
            (lambda: lk.apply_rope(x.view(2, 5, 8, 8)[..., :5], ci[..., :2], si[..., :2], False), "head dim d must be even"),
            (lambda: lk.apply_rope(x.view(2, 5, 8, 8)[..., :5], ci[..., :5], si[..., :5], True), "head dim d must be even"),
            (lambda: lk.apply_rope(x, ci[..., :6], si[..., :6], True), "the head dim d = 6 must divide C = 64"),
            (lambda: lk.apply_rope(x.view(2, 5, 2, 32), ci[..., :30], si[..., :30], True), "cos/sin must have shape [2 or 1, 5, 32]"),
            (lambda: lk.apply_rope(x, ci[..., :5], si[..., :5], True), "head dim d must be even"),
            (lambda: lk.apply_rope(x.view(2, 5, 2, 32), cs[:, :1], ss[:, :1], False), "per-head cos/sin must have x.shape[2] = 2 heads"),
            (lambda: lk.apply_rope(x.view(2, 5, 2, 32), ci[..., :32], si[..., :32], False), "cos/sin must have shape [2 or 1, 5, 16]"),
            (lambda: lk.apply_rope(x, cs[:, :, :, :8], ss[:, :, :, :8], False), "cos/sin must have shape [2 or 1, 2, 5, 16]"),
            (lambda: lk.apply_rope(x[0, 0], ci, si, True), "x must be [B, S, C] or [B, S, heads, d]"),
            (lambda: lk.apply_rope(x, ci[0], si[0], True), "cos/sin must be [B or 1, S, w]"),
            (lambda: lk.apply_rope(x.view(2, 5, 2, 32), ci[..., :32], si[..., :32], True,
                                   out=torch.empty(2, 5, 4, 32, device=device, dtype=dt)[:, :, ::2]),
             "out's last two dimensions must be contiguous"),
        ],
    }
    big = torch.randn(2 * 6 * 64, device=device, dtype=dt)
    bad["apply_rope"].append((lambda: lk.apply_rope(big[:640].view(2, 5, 64), ci, si, True,
                                                    out=big[64:704].view(2, 5, 64)), "partially overlaps"))
    if HAS_CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        bad["rms_norm_rope"].append((lambda: lk.rms_norm_rope(x, ci.to(other), si), "cos and x must be on the same device"))
        bad["rms_norm_split_rope"].append((lambda: lk.rms_norm_split_rope(x, cs, ss, w.to(other)), "must be on the same device"))
    wide = wide_row(dt, device).view(1, 1, -1)
    # The tables are expanded views (no memory): two real fp32 tables this wide would take 16 GiB
    # of the GPU that the other test workers share.
    wide_table = torch.empty(1, 1, 1, device=device).expand(1, 1, wide.shape[-1])
    bad["apply_rope"].append((lambda: lk.apply_rope(wide, wide_table, wide_table, True),
                              "rows wider than 2^31-1 elements are not supported"))
    for op, cases in bad.items():
        for fn, msg in cases:
            expect_error(op, fn, msg)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(device, dtype):
    x = torch.randn(2, 7, 3 * 6, device=device, dtype=dtype)
    w = torch.randn(18, device=device, dtype=dtype)
    out = torch.empty_like(x)
    ci, si = tables((1, 7, 18), device, torch.float32)
    cs, ss = tables((2, 3, 7, 3), device, dtype)
    torch.library.opcheck(lk.ops.rms_norm_rope.default, (out, x, ci, si, w, 1e-6))
    torch.library.opcheck(lk.ops.rms_norm_rope.default, (out, x, ci.to(dtype), si.to(dtype), None, 1e-5))
    torch.library.opcheck(lk.ops.rms_norm_split_rope.default, (out, x, cs, ss, w, 1e-6))
    torch.library.opcheck(lk.ops.apply_rope.default, (out, x, cs, ss, False))
    torch.library.opcheck(lk.ops.apply_rope.default, (out.view(2, 7, 3, 6), x.view(2, 7, 3, 6), ci[..., :6], si[..., :6], True))


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_compile_fullgraph(device):
    torch._dynamo.reset()
    x = torch.randn(2, 33, 256, device=device, dtype=torch.bfloat16)
    w = torch.randn(256, device=device, dtype=torch.bfloat16)
    ci, si = tables((1, 33, 256), device, torch.float32)
    cs, ss = tables((2, 4, 33, 32), device, torch.bfloat16)

    def f(x, w):
        q = lk.rms_norm_rope(x * 2.0, ci, si, w, eps=1e-5)
        k = lk.rms_norm_split_rope(x, cs, ss, w)
        return q + lk.apply_rope(k, cs, ss, False)

    y = torch.compile(f, fullgraph=True)(x, w)
    # Each op against its oracle on the tensors it is given (eager, the same kernels), then the
    # compiled graph against the eager q + r: eager rounds the sum to bf16 once, and the
    # compiled graph computes the same sum of the same bf16 tensors: within u |q + r| of it.
    q = lk.rms_norm_rope(x * 2.0, ci, si, w, eps=1e-5)
    check_norm_rope(q, x * 2.0, ci, si, w, 1e-5, True, what="rms_norm_rope")
    k = lk.rms_norm_split_rope(x, cs, ss, w)
    check_norm_rope(k, x, cs, ss, w, 1e-6, False, what="rms_norm_split_rope")
    r = lk.apply_rope(k, cs, ss, False)
    check_rope(r, k, cs, ss, False, what="apply_rope")
    s = q.double() + r.double()
    assert_within(y, s, 2.0**-8 * s.abs() + 2.0**-133, "the compiled sum")


# ---- LTX-Video cos/sin helper --------------------------------------------------------------------
def diffusers_ltx_cos_sin(batch, t, h, w, dim, theta=10000.0, patch_size=1, patch_size_t=1,
                          base_t=20, base_h=2048, base_w=2048, scale=None):
    """Direct transcription of diffusers' LTXVideoRotaryPosEmbed math (coords, then freqs)."""
    grid = torch.meshgrid(torch.arange(t, dtype=torch.float32), torch.arange(h, dtype=torch.float32),
                          torch.arange(w, dtype=torch.float32), indexing="ij")
    grid = torch.stack(grid, dim=0).unsqueeze(0).repeat(batch, 1, 1, 1, 1)
    if scale is not None:
        grid[:, 0:1] = grid[:, 0:1] * scale[0] * patch_size_t / base_t
        grid[:, 1:2] = grid[:, 1:2] * scale[1] * patch_size / base_h
        grid[:, 2:3] = grid[:, 2:3] * scale[2] * patch_size / base_w
    grid = grid.flatten(2, 4).transpose(1, 2)
    freqs = theta ** torch.linspace(math.log(1.0, theta), math.log(theta, theta), dim // 6, dtype=torch.float32)
    freqs = freqs * math.pi / 2.0
    freqs = freqs * (grid.unsqueeze(-1) * 2 - 1)
    freqs = freqs.transpose(-1, -2).flatten(2)
    cos = freqs.cos().repeat_interleave(2, dim=-1)
    sin = freqs.sin().repeat_interleave(2, dim=-1)
    if dim % 6 != 0:
        cos = torch.cat([torch.ones_like(cos[:, :, : dim % 6]), cos], dim=-1)
        sin = torch.cat([torch.zeros_like(cos[:, :, : dim % 6]), sin], dim=-1)
    return cos, sin


@pytest.mark.parametrize("dim", [2048, 64, 50])
@pytest.mark.parametrize("scale", [None, (20 / 8, 32.0, 32.0), (torch.tensor(0.5), 8.0, 16.0)])
def test_ltx_video_cos_sin(dim, scale):
    t, h, w = 2, 3, 4
    kw = dict(patch_size=2, patch_size_t=1)
    cos, sin = lk.ltx_video_rope_cos_sin(t, h, w, dim=dim, rope_interpolation_scale=scale, **kw)
    wc, ws = diffusers_ltx_cos_sin(1, t, h, w, dim, scale=scale, **kw)
    assert cos.shape == (1, t * h * w, dim) and sin.shape == cos.shape
    assert cos.dtype == torch.float32 and sin.dtype == torch.float32
    # Both evaluate the same fp32 angles (the same products in the same order) with torch's
    # cos / sin on tensors of the same layout; 1e-6 (16 ulps at 1) leaves room for a one-ulp
    # difference of either function (the vector and scalar paths of a library).
    torch.testing.assert_close(cos, wc, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(sin, ws, rtol=1e-6, atol=1e-6)
    # a few values by hand: token (0, 0, 0) has every coordinate 0, angle -f_k, f_0 = pi/2
    if scale is None and dim % 6 == 0:
        assert cos[0, 0, 0].item() == pytest.approx(math.cos(-math.pi / 2), abs=1e-6)
        assert sin[0, 0, 0].item() == pytest.approx(-1.0, abs=1e-6)
        # token (1, 0, 0), frequency 0, time axis: angle pi/2 * (2*1 - 1)
        assert sin[0, h * w, 0].item() == pytest.approx(1.0, abs=1e-6)
    if dim % 6:
        assert torch.equal(cos[..., : dim % 6], torch.ones_like(cos[..., : dim % 6]))
        assert torch.equal(sin[..., : dim % 6], torch.zeros_like(sin[..., : dim % 6]))
