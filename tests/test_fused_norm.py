"""Fused norms against the fp32 oracles in ltx_kernels.reference (written from the math) AND
against the composition of unfused reference ops (add / gated residual, then norm, then
modulate). Ops whose intermediate is stored in the dtype (residual_out, h_new) are compared
to references that round the same intermediate once."""

import re

import pytest
import torch
import torch.nn.functional as F

import ltx_kernels as lk
from ltx_kernels import reference as ref

from conftest import ALL_DEVICES, DTYPES, HAS_CUDA, TOL

ROWS = [1, 7, 83]
WIDTHS = [8, 111, 769, 2048, 5125]
# (B, S) leading shapes: 1, 7, 83 rows, plus several samples of several tokens.
LEADS = [(1, 1), (1, 7), (83, 1), (1, 83), (3, 29)]

# Modulated / centred outputs: o = n * (1 + scale) + shift. One rounding of o to the dtype
# (TOL's rtol) plus fp32 differences that scale with the TERMS, not with o (o may cancel to
# ~0): rstd from a C-term fp32 sum in another order (sequential here, pairwise in torch) is off
# by ~sqrt(C) * 2^-24 ~ 4e-6 relative at C = 5125, on terms up to ~10: an absolute 5e-5.
TOLM = {
    torch.float32: dict(rtol=1e-5, atol=5e-5),
    torch.float16: dict(rtol=2.0**-10, atol=1e-4),
    torch.bfloat16: dict(rtol=2.0**-7, atol=1e-4),
}


def close(got, want, dtype, tol=TOL):
    torch.testing.assert_close(got.float(), want.float(), **tol[dtype])


def rand(*shape, device, dtype, scale=1.0, offset=0.0):
    return (torch.randn(*shape, device=device, dtype=torch.float32) * scale + offset).to(dtype)


def tables(B, S, C, form, device, dtype):
    shape = (B, C) if form == "per_sample" else (B, S, C)
    return rand(*shape, device=device, dtype=dtype, scale=0.5)


# ---------------------------------------------------------------------------- add_rms_norm
@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("cols", WIDTHS)
def test_add_rms_norm(device, dtype, rows, cols):
    x = rand(rows, cols, device=device, dtype=dtype, scale=3, offset=0.5)
    r = rand(rows, cols, device=device, dtype=dtype, scale=2)
    w = rand(cols, device=device, dtype=dtype)
    for weight in [w, None]:
        y, ro = lk.add_rms_norm(x, r, weight, eps=1e-6)
        assert y.shape == x.shape and y.dtype == dtype and ro.dtype == dtype
        want_y, want_ro = ref.add_rms_norm(x, r, weight, 1e-6)
        close(ro, want_ro, dtype)
        close(y, want_y, dtype)
        # unfused composition: add (rounded), then the reference RMSNorm
        close(y, ref.rms_norm(ref.add_residual(x, r), weight, 1e-6), dtype)
        # and PyTorch's own ops in fp32 on the rounded residual
        rf = (x.float() + r.float()).to(dtype).float()
        close(y, F.rms_norm(rf, (cols,), None if weight is None else weight.float(), 1e-6), dtype)


# ---------------------------------------------------------------------------- layer_norm
@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("cols", WIDTHS)
def test_layer_norm(device, dtype, rows, cols):
    x = rand(rows, cols, device=device, dtype=dtype, scale=3, offset=0.5)
    w = rand(cols, device=device, dtype=dtype)
    b = rand(cols, device=device, dtype=dtype)
    for weight, bias in [(w, b), (w, None), (None, b), (None, None)]:
        y = lk.layer_norm(x, weight, bias, eps=1e-5)
        assert y.shape == x.shape and y.dtype == dtype
        close(y, ref.layer_norm(x, weight, bias, 1e-5), dtype, TOLM)
        wf = None if weight is None else weight.float()
        bf = None if bias is None else bias.float()
        close(y, F.layer_norm(x.float(), (cols,), wf, bf, 1e-5), dtype, TOLM)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("cols", [111, 2048, 5125])
def test_layer_norm_large_mean_is_two_pass(device, cols):
    """mean 1e4, std 1: E[x^2] - E[x]^2 in fp32 would lose every digit of the variance (E[x^2]
    ~ 1e8 has an fp32 ulp of 8). The two-pass result keeps it; what remains is the fp32 error
    of the mean itself, ~ C * 2^-24 * 1e4 / sqrt(C) in the worst order: up to ~1e-2 here."""
    x = torch.randn(9, cols, device=device, dtype=torch.float64) + 1e4
    x32 = x.float()
    y = lk.layer_norm(x32)
    want = F.layer_norm(x32.double(), (cols,), eps=1e-5)  # fp64 from the same fp32 inputs
    torch.testing.assert_close(y.double(), want, rtol=0, atol=2e-2)
    assert (y.float().std(dim=-1) - 1).abs().max() < 1e-2


# ---------------------------------------------------------------------------- adaln
@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lead", LEADS)
@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("form", ["per_sample", "per_token"])
def test_adaln(device, dtype, lead, cols, form):
    B, S = lead
    x = rand(B, S, cols, device=device, dtype=dtype, scale=2, offset=0.3)
    scale = tables(B, S, cols, form, device, dtype)
    shift = tables(B, S, cols, form, device, dtype)
    w = rand(cols, device=device, dtype=dtype)
    b = rand(cols, device=device, dtype=dtype)
    for weight in [w, None]:
        y = lk.adaln_rms_norm(x, scale, shift, weight, eps=1e-6)
        assert y.shape == x.shape and y.dtype == dtype
        close(y, ref.adaln_rms_norm(x, scale, shift, weight, 1e-6), dtype, TOLM)
        close(y, ref.adaln_modulate(ref.rms_norm(x, weight, 1e-6), scale, shift), dtype, TOLM)
    for weight, bias in [(w, b), (None, None)]:
        y = lk.adaln_layer_norm(x, scale, shift, weight, bias, eps=1e-6)
        close(y, ref.adaln_layer_norm(x, scale, shift, weight, bias, 1e-6), dtype, TOLM)
        close(y, ref.adaln_modulate(ref.layer_norm(x, weight, bias, 1e-6), scale, shift), dtype, TOLM)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaln_ranks_and_mixed_forms(device, dtype):
    C = 264
    x = rand(2, 3, 5, C, device=device, dtype=dtype)
    per_sample = rand(2, C, device=device, dtype=dtype, scale=0.5)
    per_sample_4d = rand(2, 1, 1, C, device=device, dtype=dtype, scale=0.5)
    per_token = rand(2, 3, 5, C, device=device, dtype=dtype, scale=0.5)
    for sc, sh in [(per_sample, per_token), (per_token, per_sample), (per_sample_4d, per_sample)]:
        close(lk.adaln_rms_norm(x, sc, sh), ref.adaln_rms_norm(x, sc, sh), dtype, TOLM)
        close(lk.adaln_layer_norm(x, sc, sh), ref.adaln_layer_norm(x, sc, sh), dtype, TOLM)
    x2 = rand(6, C, device=device, dtype=dtype)  # 2-D x: [B, C] tables are per row
    t2 = rand(6, C, device=device, dtype=dtype, scale=0.5)
    close(lk.adaln_rms_norm(x2, t2, t2), ref.adaln_rms_norm(x2, t2, t2), dtype, TOLM)


# ---------------------------------------------------------------------------- gated residual
@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lead", LEADS)
@pytest.mark.parametrize("cols", WIDTHS)
@pytest.mark.parametrize("form", ["per_sample", "per_token"])
def test_gated_residual_adaln_rms_norm(device, dtype, lead, cols, form):
    B, S = lead
    h = rand(B, S, cols, device=device, dtype=dtype, scale=3, offset=0.2)
    y = rand(B, S, cols, device=device, dtype=dtype, scale=2)
    gate, scale, shift = (tables(B, S, cols, form, device, dtype) for _ in range(3))
    w = rand(cols, device=device, dtype=dtype)
    for weight in [w, None]:
        h_new, out = lk.gated_residual_adaln_rms_norm(h, y, gate, scale, shift, weight, eps=1e-6)
        assert h_new.shape == h.shape and out.shape == h.shape and out.dtype == dtype
        want_h, want_o = ref.gated_residual_adaln_rms_norm(h, y, gate, scale, shift, weight, 1e-6)
        close(h_new, want_h, dtype)
        close(out, want_o, dtype, TOLM)
        # unfused composition: gated add (rounded), reference rms_norm, modulate
        hn = ref.gated_residual(h, y, gate)
        close(out, ref.adaln_modulate(ref.rms_norm(hn, weight, 1e-6), scale, shift), dtype, TOLM)


# ---------------------------------------------------------------------------- layouts
@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_strided_inputs(device, dtype):
    B, S, C = 3, 13, 1024
    base = rand(B * S, 2 * C + 24, device=device, dtype=dtype)
    cases = {
        "row stride > cols (read in place)": base[:, :C],
        "last-dim stride 2 (copied)": base[:, : 2 * C : 2],
        "misaligned start (scalar path)": base.view(-1)[1 : 1 + B * S * C].view(B * S, C),
        "transposed (copied)": rand(C, B * S, device=device, dtype=dtype).t(),
    }
    w = rand(C, device=device, dtype=dtype)
    tb = rand(B, 2 * C, device=device, dtype=dtype, scale=0.5)
    scale_ps = tb[:, :C]  # per-sample table with a row stride
    shift_bc = rand(1, C, device=device, dtype=dtype).expand(B, C)  # stride-0 rows (copied)
    for name, x2d in cases.items():
        x = x2d.unflatten(0, (B, S))
        r = cases["misaligned start (scalar path)"].unflatten(0, (B, S))
        yk, rk = lk.add_rms_norm(x, r, w)
        wy, wr = ref.add_rms_norm(x, r, w)
        close(rk, wr, dtype)
        close(yk, wy, dtype)
        close(lk.layer_norm(x, w, w), ref.layer_norm(x, w, w), dtype, TOLM)
        close(lk.adaln_rms_norm(x, scale_ps, shift_bc, w), ref.adaln_rms_norm(x, scale_ps, shift_bc, w), dtype, TOLM)
        close(lk.adaln_layer_norm(x, scale_ps, shift_bc, w), ref.adaln_layer_norm(x, scale_ps, shift_bc, w), dtype, TOLM)
        hn, o = lk.gated_residual_adaln_rms_norm(x, r, scale_ps, shift_bc, x, w)
        wh, wo = ref.gated_residual_adaln_rms_norm(x, r, scale_ps, shift_bc, x, w)
        close(hn, wh, dtype)
        close(o, wo, dtype, TOLM)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sentinel_outputs_and_in_place(device, dtype):
    B, S, C = 2, 41, 769
    nan = float("nan")
    x = rand(B, S, C, device=device, dtype=dtype)
    r = rand(B, S, C, device=device, dtype=dtype)
    w = rand(C, device=device, dtype=dtype)
    sc, sh, g = (rand(B, C, device=device, dtype=dtype, scale=0.5) for _ in range(3))

    def sentinel():
        big = torch.full((B, S, C + 7), nan, device=device, dtype=dtype)
        return big, big[..., :C]

    # every element written, the gaps untouched
    b1, o1 = sentinel()
    b2, o2 = sentinel()
    y, ro = lk.add_rms_norm(x, r, w, out=o1, residual_out=o2)
    assert y.data_ptr() == o1.data_ptr() and ro.data_ptr() == o2.data_ptr()
    for big, o in [(b1, o1), (b2, o2)]:
        assert not torch.isnan(o).any() and torch.isnan(big[..., C:]).all()
    close(ro, ref.add_residual(x, r), dtype)
    close(y, ref.add_rms_norm(x, r, w)[0], dtype)

    b1, o1 = sentinel()
    lk.layer_norm(x, w, w, out=o1)
    assert not torch.isnan(o1).any() and torch.isnan(b1[..., C:]).all()
    b1, o1 = sentinel()
    lk.adaln_rms_norm(x, sc, sh, w, out=o1)
    assert not torch.isnan(o1).any() and torch.isnan(b1[..., C:]).all()
    b1, o1 = sentinel()
    lk.adaln_layer_norm(x, sc, sh, w, w, out=o1)
    assert not torch.isnan(o1).any() and torch.isnan(b1[..., C:]).all()
    b1, o1 = sentinel()
    b2, o2 = sentinel()
    hn, o = lk.gated_residual_adaln_rms_norm(x, r, g, sc, sh, w, out=o1, h_out=o2)
    assert o.data_ptr() == o1.data_ptr() and hn.data_ptr() == o2.data_ptr()
    for big, t in [(b1, o1), (b2, o2)]:
        assert not torch.isnan(t).any() and torch.isnan(big[..., C:]).all()

    # in place: the residual stream updated where it lies, out written over x
    r2 = r.clone()
    y, ro = lk.add_rms_norm(x, r2, w, residual_out=r2)
    assert ro is r2
    close(r2, ref.add_residual(x, r), dtype)
    close(y, ref.add_rms_norm(x, r, w)[0], dtype)
    x2, r3 = x.clone(), r.clone()
    lk.add_rms_norm(x2, r3, w, out=x2, residual_out=r3)
    close(x2, ref.add_rms_norm(x, r, w)[0], dtype)
    h2 = x.clone()
    hn, o = lk.gated_residual_adaln_rms_norm(h2, r, g, sc, sh, w, h_out=h2)
    assert hn is h2
    wh, wo = ref.gated_residual_adaln_rms_norm(x, r, g, sc, sh, w)
    close(h2, wh, dtype)
    close(o, wo, dtype, TOLM)
    x3 = x.clone()
    lk.adaln_layer_norm(x3, sc, sh, w, w, out=x3)
    close(x3, ref.adaln_layer_norm(x, sc, sh, w, w), dtype, TOLM)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_empty(device):
    dt = torch.bfloat16
    for shape in [(0, 16), (3, 0), (2, 0, 5), (0, 4, 8)]:
        x = torch.empty(shape, device=device, dtype=dt)
        C = shape[-1]
        w = torch.ones(C, device=device, dtype=dt)
        y, r = lk.add_rms_norm(x, x, w)
        assert y.shape == x.shape and r.shape == x.shape
        assert lk.layer_norm(x, w, w).shape == x.shape
        t = torch.empty(shape[0], C, device=device, dtype=dt)
        assert lk.adaln_rms_norm(x, t, x).shape == x.shape
        assert lk.adaln_layer_norm(x, x, t, w, w).shape == x.shape
        hn, o = lk.gated_residual_adaln_rms_norm(x, x, t, t, x, w)
        assert hn.shape == x.shape and o.shape == x.shape


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_zero_rows_are_finite(device):
    x = torch.zeros(4, 256, device=device, dtype=torch.bfloat16)
    t = torch.zeros(4, 256, device=device, dtype=torch.bfloat16)
    assert torch.equal(lk.layer_norm(x), x)
    assert torch.equal(lk.adaln_rms_norm(x, t, t), x)
    assert torch.equal(lk.gated_residual_adaln_rms_norm(x, x, t, t, t)[1], x)


# ---------------------------------------------------------------------------- errors
def _raises(op, fn, msg):
    with pytest.raises(RuntimeError, match=f"ltx_kernels.{op}: .*" + re.escape(msg)):
        fn()


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_bad_input_errors(device):
    dt = torch.bfloat16
    B, S, C = 2, 8, 64
    x = torch.randn(B, S, C, device=device, dtype=dt)
    w = torch.randn(C, device=device, dtype=dt)
    t = torch.randn(B, C, device=device, dtype=dt)

    def e(*shape, dtype=dt):
        return torch.empty(*shape, device=device, dtype=dtype)

    cases = [
        ("add_rms_norm", lambda: lk.add_rms_norm(x.int(), x), "x must be float32, float16 or bfloat16"),
        ("add_rms_norm", lambda: lk.add_rms_norm(x, x[:, :4]), "residual must have the shape of x"),
        ("add_rms_norm", lambda: lk.add_rms_norm(x, x.half()), "residual and x must have the same dtype"),
        ("add_rms_norm", lambda: lk.add_rms_norm(x, x, w[:63]), "weight must be 1-D with x.shape[-1] = 64"),
        ("add_rms_norm", lambda: lk.add_rms_norm(x, x, eps=-1.0), "eps must be >= 0"),
        ("add_rms_norm", lambda: lk.add_rms_norm(x, x, out=e(B, S, 63)), "out must have the shape of x"),
        ("add_rms_norm", lambda: lk.add_rms_norm(x, x, residual_out=e(B, S, C, dtype=torch.float32)),
         "residual_out and x must have the same dtype"),
        ("add_rms_norm", lambda: (lambda o: lk.add_rms_norm(x, x, out=o, residual_out=o))(e(B, S, C)),
         "out and residual_out must not overlap"),
        ("add_rms_norm", lambda: lk.add_rms_norm(x, x, out=e(C, S, B).permute(2, 1, 0)), "out must have stride 1"),
        ("layer_norm", lambda: lk.layer_norm(x, w, w.float()), "bias and x must have the same dtype"),
        ("layer_norm", lambda: lk.layer_norm(x, w.view(8, 8)), "weight must be 1-D"),
        ("layer_norm", lambda: lk.layer_norm(torch.tensor(1.0, device=device)), "at least one dimension"),
        ("adaln_rms_norm", lambda: lk.adaln_rms_norm(x, t[:1], t), "scale must be [B, C] (per sample) or [B, S, C]"),
        ("adaln_rms_norm", lambda: lk.adaln_rms_norm(x, t, t[:, :32]), "shift must be [B, C] (per sample) or [B, S, C]"),
        ("adaln_rms_norm", lambda: lk.adaln_rms_norm(x, x[:, :4], t), "scale must be [B, C]"),
        ("adaln_rms_norm", lambda: lk.adaln_rms_norm(x, t.float(), t), "scale and x must have the same dtype"),
        ("adaln_rms_norm", lambda: lk.adaln_rms_norm(x[0, 0], t, t), "x must have at least 2 dimensions"),
        ("adaln_layer_norm", lambda: lk.adaln_layer_norm(x, t, t.view(B, 1, 1, C)), "shift must be [B, C]"),
        ("adaln_layer_norm", lambda: lk.adaln_layer_norm(x, t, t, w, w[:8]), "bias must be 1-D"),
        ("gated_residual_adaln_rms_norm", lambda: lk.gated_residual_adaln_rms_norm(x, x, t[:, :8], t, t),
         "gate must be [B, C] (per sample) or [B, S, C]"),
        ("gated_residual_adaln_rms_norm", lambda: lk.gated_residual_adaln_rms_norm(x, x[:1], t, t, t),
         "y must have the shape of h"),
        ("gated_residual_adaln_rms_norm", lambda: lk.gated_residual_adaln_rms_norm(x, x, t, t, t, h_out=e(B, S, C, dtype=torch.float16)),
         "h_out and h must have the same dtype"),
        ("gated_residual_adaln_rms_norm", lambda: (lambda s: lk.gated_residual_adaln_rms_norm(x, x, t, s, t, h_out=s))(x.clone()),
         "h_out and scale must not overlap"),
    ]
    big = torch.randn(5 * 64, device=device, dtype=dt)
    cases.append(("layer_norm", lambda: lk.layer_norm(big[:256].view(4, 64), out=big[32:288].view(4, 64)), "partially overlaps"))
    if HAS_CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        cases.append(("add_rms_norm", lambda: lk.add_rms_norm(x, x.to(other)), "must be on the same device"))
        cases.append(("adaln_rms_norm", lambda: lk.adaln_rms_norm(x, t.to(other), t), "must be on the same device"))
    for op, fn, msg in cases:
        _raises(op, fn, msg)


# ---------------------------------------------------------------------------- op contract
@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(device, dtype):
    B, S, C = 2, 7, 111
    x = rand(B, S, C, device=device, dtype=dtype)
    r = rand(B, S, C, device=device, dtype=dtype)
    w = rand(C, device=device, dtype=dtype)
    ps = rand(B, C, device=device, dtype=dtype)
    pt = rand(B, S, C, device=device, dtype=dtype)
    o1, o2 = torch.empty_like(x), torch.empty_like(x)
    ops = lk.ops
    torch.library.opcheck(ops.add_rms_norm.default, (o1, o2, x, r, w, 1e-6))
    torch.library.opcheck(ops.add_rms_norm.default, (o1, o2, x, r, None, 1e-6))
    torch.library.opcheck(ops.layer_norm.default, (o1, x, w, w, 1e-5))
    torch.library.opcheck(ops.layer_norm.default, (o1, x, None, None, 1e-5))
    torch.library.opcheck(ops.adaln_rms_norm.default, (o1, x, ps, pt, w, 1e-6))
    torch.library.opcheck(ops.adaln_layer_norm.default, (o1, x, pt, ps, w, None, 1e-6))
    torch.library.opcheck(ops.gated_residual_adaln_rms_norm.default, (o1, o2, x, r, ps, pt, ps, w, 1e-6))


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_compile_fullgraph(device):
    torch._dynamo.reset()
    dt = torch.bfloat16
    B, S, C = 2, 33, 256
    h = rand(B, S, C, device=device, dtype=dt)
    y = rand(B, S, C, device=device, dtype=dt)
    g, sc, sh = (rand(B, C, device=device, dtype=dt, scale=0.5) for _ in range(3))
    w = rand(C, device=device, dtype=dt)

    def f(h, y, g, sc, sh, w):
        hn, o = lk.gated_residual_adaln_rms_norm(h, y * 2.0, g, sc, sh, w)
        z, r = lk.add_rms_norm(o, hn, w)
        return lk.adaln_layer_norm(z, sc, sh) + lk.layer_norm(r, w, w) + lk.adaln_rms_norm(r, sc, sh)

    got = torch.compile(f, fullgraph=True)(h, y, g, sc, sh, w)
    want = f(h, y, g, sc, sh, w)  # eager: same kernels, same inputs
    torch.testing.assert_close(got.float(), want.float(), rtol=2**-6, atol=2**-6)
    hn, o = ref.gated_residual_adaln_rms_norm(h, y * 2.0, g, sc, sh, w)
    z, r = ref.add_rms_norm(o.to(dt), hn, w)
    want_ref = (ref.adaln_layer_norm(z.to(dt), sc, sh).to(dt) + ref.layer_norm(r, w, w).to(dt)
                + ref.adaln_rms_norm(r, sc, sh).to(dt))
    torch.testing.assert_close(got.float(), want_ref.float(), rtol=2**-5, atol=2**-4)
