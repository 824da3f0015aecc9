"""Fused norms against the float64 oracles in ltx_kernels.reference (written from the math) AND
against the composition of unfused reference ops (add / gated residual, then norm, then
modulate), under the bounds derived below. The intermediates the ops store in the input dtype
(residual_out, h_new) are defined by the fp32 arithmetic of reference.add_residual /
gated_residual and must match them bit for bit."""


import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

from bounds import U, ln_e32, modulated, rms_e32
from conftest import (ALL_DEVICES, DTYPES, HAS_CUDA, assert_bytes, assert_close_to, assert_within, expect_error, grid,
                      wide_row)

ROWS = [1, 7, 83]
WIDTHS = [8, 111, 769, 2048, 5125]
# (B, S) leading shapes: 1, 7, 83 rows, plus several samples of several tokens.
LEADS = [(1, 1), (1, 7), (83, 1), (1, 83), (3, 29)]
ROWS_GRID = grid(("device", ALL_DEVICES), ("dtype", DTYPES), ("rows", ROWS), ("cols", WIDTHS))
# modulated norms: the scale / shift (/ gate) tables per sample or per token
MODULATED_GRID = grid(("device", ALL_DEVICES), ("dtype", DTYPES), ("lead", LEADS), ("cols", WIDTHS),
                      ("form", ["per_sample", "per_token"]))


def check_rms(got, x, weight, eps, scale=None, shift=None, what=""):
    """got = rms_norm(x) * weight [* (1 + scale) + shift] in x's dtype."""
    n = ref.rms_norm(x, weight, eps)
    e = rms_e32(n, x.shape[-1])
    if scale is not None:
        n, e = modulated(n, e, x, scale, shift)
    assert_close_to(got, n, x.dtype, e, what)


def check_ln(got, x, weight, bias, eps, scale=None, shift=None, what=""):
    """got = layer_norm(x) * weight + bias [* (1 + scale) + shift] in x's dtype."""
    n = ref.layer_norm(x, weight, bias, eps)
    e = ln_e32(x, weight, bias, eps)
    if scale is not None:
        n, e = modulated(n, e, x, scale, shift)
    assert_close_to(got, n, x.dtype, e, what)


def check_stored(got, want):
    """A stored intermediate (residual_out, h_new): the fp32 definition, rounded once."""
    assert_bytes(got, want.to(got.device))


def rand(*shape, device, dtype, scale=1.0, offset=0.0):
    return (torch.randn(*shape, device=device, dtype=torch.float32) * scale + offset).to(dtype)


def tables(B, S, C, form, device, dtype):
    shape = (B, C) if form == "per_sample" else (B, S, C)
    return rand(*shape, device=device, dtype=dtype, scale=0.5)


# ---------------------------------------------------------------------------- add_rms_norm
@ROWS_GRID
def test_add_rms_norm(device, dtype, rows, cols):
    x = rand(rows, cols, device=device, dtype=dtype, scale=3, offset=0.5)
    r = rand(rows, cols, device=device, dtype=dtype, scale=2)
    w = rand(cols, device=device, dtype=dtype)
    for weight in [w, None]:
        y, ro = lk.add_rms_norm(x, r, weight, eps=1e-6)
        assert y.shape == x.shape and y.dtype == dtype and ro.dtype == dtype
        want_y, want_ro = ref.add_rms_norm(x, r, weight, 1e-6)
        check_stored(ro, want_ro)
        assert_close_to(y, want_y, dtype, rms_e32(want_y, cols))
        # unfused composition: add (rounded), then the reference RMSNorm
        check_rms(y, ref.add_residual(x, r), weight, 1e-6, what="unfused")


# ---------------------------------------------------------------------------- layer_norm
@ROWS_GRID
def test_layer_norm(device, dtype, rows, cols):
    x = rand(rows, cols, device=device, dtype=dtype, scale=3, offset=0.5)
    w = rand(cols, device=device, dtype=dtype)
    b = rand(cols, device=device, dtype=dtype)
    for weight, bias in [(w, b), (w, None), (None, b), (None, None)]:
        y = lk.layer_norm(x, weight, bias, eps=1e-5)
        assert y.shape == x.shape and y.dtype == dtype
        check_ln(y, x, weight, bias, 1e-5)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("cols", [111, 2048, 5125])
def test_layer_norm_large_mean_is_two_pass(device, cols):
    """x = 8192 + 4k, k in {-3, -1, 1, 3}: mean ~8192, std ~9. Every partial sum of x is a
    multiple of 4 below 2^26, so the fp32 sums are exact in any order, the mean is off by one
    rounding (2^-11) and x - mean is exact; the two-pass variance is then accurate to the
    squares' roundings ((C + 6) u relative). A one-pass E[x^2] - E[x]^2 would lose the variance
    to the rounding of E[x^2] ~ 6.7e7 (fp32 ulp 4-8, against a variance of ~80): errors of a
    few % of every output, far outside the bound."""
    k = torch.tensor([-3.0, -1.0, 1.0, 3.0])[torch.randint(4, (9, cols))]
    x = (8192 + 4 * k).float().to(device)
    y = lk.layer_norm(x)
    want = ref.layer_norm(x, None, None, 1e-5)
    xd = x.double()
    var = (xd - xd.mean(-1, keepdim=True)).pow(2).mean(-1, keepdim=True)
    # dm = 2u * 8192 (the mean's rounding), e_r = (C + 6) u / 2 + 4u, |n| <= 3.5
    e32 = torch.rsqrt(var + 1e-5) * 2 * U * 8192 + 3.5 * ((cols + 6) * U / 2 + 8 * U)
    assert_close_to(y, want, torch.float32, e32)


# ---------------------------------------------------------------------------- adaln
@MODULATED_GRID
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
        check_rms(y, x, weight, 1e-6, scale, shift)
        # the fused oracle and the composition of the unfused ones are the same float64 numbers
        torch.testing.assert_close(ref.adaln_rms_norm(x, scale, shift, weight, 1e-6),
                                   ref.adaln_modulate(ref.rms_norm(x, weight, 1e-6), scale, shift), rtol=1e-14, atol=1e-14)
    for weight, bias in [(w, b), (None, None)]:
        y = lk.adaln_layer_norm(x, scale, shift, weight, bias, eps=1e-6)
        check_ln(y, x, weight, bias, 1e-6, scale, shift)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_adaln_ranks_and_mixed_forms(device, dtype):
    C = 264
    x = rand(2, 3, 5, C, device=device, dtype=dtype)
    per_sample = rand(2, C, device=device, dtype=dtype, scale=0.5)
    per_sample_4d = rand(2, 1, 1, C, device=device, dtype=dtype, scale=0.5)
    per_token = rand(2, 3, 5, C, device=device, dtype=dtype, scale=0.5)
    for sc, sh in [(per_sample, per_token), (per_token, per_sample), (per_sample_4d, per_sample)]:
        check_rms(lk.adaln_rms_norm(x, sc, sh), x, None, 1e-6, sc, sh)
        check_ln(lk.adaln_layer_norm(x, sc, sh), x, None, None, 1e-6, sc, sh)
    x2 = rand(6, C, device=device, dtype=dtype)  # 2-D x: [B, C] tables are per row
    t2 = rand(6, C, device=device, dtype=dtype, scale=0.5)
    check_rms(lk.adaln_rms_norm(x2, t2, t2), x2, None, 1e-6, t2, t2)


# ---------------------------------------------------------------------------- gated residual
@MODULATED_GRID
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
        check_stored(h_new, want_h)
        # unfused composition: gated add (rounded), reference rms_norm, modulate
        check_rms(out, ref.gated_residual(h, y, gate), weight, 1e-6, scale, shift)


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
        check_stored(rk, ref.add_residual(x, r))
        check_rms(yk, ref.add_residual(x, r), w, 1e-6, what=name)
        check_ln(lk.layer_norm(x, w, w), x, w, w, 1e-5, what=name)
        check_rms(lk.adaln_rms_norm(x, scale_ps, shift_bc, w), x, w, 1e-6, scale_ps, shift_bc, name)
        check_ln(lk.adaln_layer_norm(x, scale_ps, shift_bc, w), x, w, None, 1e-6, scale_ps, shift_bc, name)
        hn, o = lk.gated_residual_adaln_rms_norm(x, r, scale_ps, shift_bc, x, w)
        check_stored(hn, ref.gated_residual(x, r, scale_ps))
        check_rms(o, ref.gated_residual(x, r, scale_ps), w, 1e-6, shift_bc, x, name)


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
    check_stored(ro, ref.add_residual(x, r))
    check_rms(y, ref.add_residual(x, r), w, 1e-6)

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
    check_stored(r2, ref.add_residual(x, r))
    check_rms(y, ref.add_residual(x, r), w, 1e-6)
    x2, r3 = x.clone(), r.clone()
    lk.add_rms_norm(x2, r3, w, out=x2, residual_out=r3)
    check_rms(x2, ref.add_residual(x, r), w, 1e-6)
    h2 = x.clone()
    hn, o = lk.gated_residual_adaln_rms_norm(h2, r, g, sc, sh, w, h_out=h2)
    assert hn is h2
    check_stored(h2, ref.gated_residual(x, r, g))
    check_rms(o, ref.gated_residual(x, r, g), w, 1e-6, sc, sh)
    x3 = x.clone()
    lk.adaln_layer_norm(x3, sc, sh, w, w, out=x3)
    check_ln(x3, x, w, w, 1e-6, sc, sh)


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


# ---------------------------------------------------------------------------- launch shapes
# Every launch shape of the row-norm kernels (common/rowwise_launch.h), forced through
# LTX_KERNELS_NORM_SHAPE: each runs the rows it can (the same results as the heuristic's pick,
# within the same bounds) and refuses the others with an error naming the variable.
NORM_SHAPES = ["w1", "w2", "w4", "w8", "w1p", "w2p", "b1", "b2", "b4", "b8", "b16", "b1p", "b2p", "b4p", "loop"]


def norm_shape_runs(shape, cols, dtype):
    """Python twin of norm_shape_runs (rowwise_launch.h) for fresh, contiguous rows."""
    per16 = 128 // torch.finfo(dtype).bits
    vec = cols % per16 == 0
    nvec = cols // per16 if vec else cols
    if shape == "loop":
        return True
    kind, pre = shape[0], shape.endswith("p")
    nv = int(shape[1:].rstrip("p"))
    if kind == "w":
        return nv <= 8 and nvec <= 32 * nv and (not pre or (vec and nv <= 2))
    threads = ((nvec + nv - 1) // nv + 31) // 32 * 32
    return (threads <= (512 if nv <= 2 else 256) and (vec or nv >= 4) and (not pre or (vec and nv <= 4)))


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@grid(("shape", NORM_SHAPES), ("dtype", [torch.float32, torch.bfloat16]), ("cols", [128, 264, 769, 2048, 4096]))
def test_every_launch_shape(dev_settings, shape, dtype, cols):
    B, S, dev = 3, 29, "cuda"
    x = rand(B, S, cols, device=dev, dtype=dtype, scale=2, offset=0.3)
    y = rand(B, S, cols, device=dev, dtype=dtype, scale=2)
    w = rand(cols, device=dev, dtype=dtype)
    b = rand(cols, device=dev, dtype=dtype)
    dev_settings.setenv("LTX_KERNELS_NORM_SHAPE", shape)
    runs = norm_shape_runs(shape, cols, dtype)
    calls = {
        "rms_norm": lambda: lk.rms_norm(x, w, 1e-6),
        "add_rms_norm": lambda: lk.add_rms_norm(x, y, w, eps=1e-6),
        "layer_norm": lambda: lk.layer_norm(x, w, b, eps=1e-5),
    }
    for form in ["per_sample", "per_token"]:
        t = [tables(B, S, cols, form, dev, dtype) for _ in range(3)]
        calls[f"adaln_rms_norm {form}"] = lambda t=t: (lk.adaln_rms_norm(x, t[0], t[1], w, eps=1e-6), t)
        calls[f"adaln_layer_norm {form}"] = lambda t=t: (lk.adaln_layer_norm(x, t[0], t[1], w, b, eps=1e-6), t)
        calls[f"gated_residual {form}"] = lambda t=t: (lk.gated_residual_adaln_rms_norm(x, y, *t, w, eps=1e-6), t)
    for name, call in calls.items():
        op = name.split()[0].replace("gated_residual", "gated_residual_adaln_rms_norm")
        if not runs:
            expect_error(op, call, "LTX_KERNELS_NORM_SHAPE=" + shape, f"{name} {shape}")
            continue
        got = call()
        what = f"{name} {shape}"
        if op == "rms_norm":
            check_rms(got, x, w, 1e-6, what=what)
        elif op == "add_rms_norm":
            check_stored(got[1], ref.add_residual(x, y))
            check_rms(got[0], ref.add_residual(x, y), w, 1e-6, what=what)
        elif op == "layer_norm":
            check_ln(got, x, w, b, 1e-5, what=what)
        elif op == "adaln_rms_norm":
            check_rms(got[0], x, w, 1e-6, got[1][0], got[1][1], what=what)
        elif op == "adaln_layer_norm":
            check_ln(got[0], x, w, b, 1e-6, got[1][0], got[1][1], what=what)
        else:
            (h_new, out), t = got
            check_stored(h_new, ref.gated_residual(x, y, t[0]))
            check_rms(out, ref.gated_residual(x, y, t[0]), w, 1e-6, t[1], t[2], what=what)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_bad_norm_shape_variable(dev_settings, device):
    x = torch.randn(4, 64, device=device)
    for bad in ["x4", "w3", "b", "w4q", "b32"]:
        dev_settings.setenv("LTX_KERNELS_NORM_SHAPE", bad)
        expect_error("rms_norm", lambda: lk.rms_norm(x), "LTX_KERNELS_NORM_SHAPE must be", bad)
        expect_error("add_rms_norm", lambda: lk.add_rms_norm(x, x), "LTX_KERNELS_NORM_SHAPE must be", bad)
    dev_settings.setenv("LTX_KERNELS_NORM_SHAPE", "auto")
    check_rms(lk.rms_norm(x), x, None, 1e-6)


# ---------------------------------------------------------------------------- errors
@pytest.mark.isolated
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
    wide = wide_row(dt, device)
    cases.append(("layer_norm", lambda: lk.layer_norm(wide), "rows wider than 2^31-1 elements are not supported"))
    cases.append(("add_rms_norm", lambda: lk.add_rms_norm(wide, wide), "rows wider than 2^31-1 elements are not supported"))
    if HAS_CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        cases.append(("add_rms_norm", lambda: lk.add_rms_norm(x, x.to(other)), "must be on the same device"))
        cases.append(("adaln_rms_norm", lambda: lk.adaln_rms_norm(x, t.to(other), t), "must be on the same device"))
    for op, fn, msg in cases:
        expect_error(op, fn, msg)


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
    # Eager runs the same kernels on the same inputs; each op is checked against its oracle on
    # the intermediates it was given, then the sum: eager rounds a + b and then + c to bf16,
    # the compiled graph may add the three in fp32 and round once: within 2u (|a| + |b| + |c|).
    hn, o = lk.gated_residual_adaln_rms_norm(h, y * 2.0, g, sc, sh, w)
    check_stored(hn, ref.gated_residual(h, y * 2.0, g))
    check_rms(o, hn, w, 1e-6, sc, sh, "gated_residual_adaln_rms_norm")
    z, r = lk.add_rms_norm(o, hn, w)
    check_stored(r, ref.add_residual(o, hn))
    check_rms(z, r, w, 1e-6, what="add_rms_norm")
    a, b, c = lk.adaln_layer_norm(z, sc, sh), lk.layer_norm(r, w, w), lk.adaln_rms_norm(r, sc, sh)
    check_ln(a, z, None, None, 1e-6, sc, sh, "adaln_layer_norm")
    check_ln(b, r, w, w, 1e-5, what="layer_norm")
    check_rms(c, r, None, 1e-6, sc, sh, "adaln_rms_norm")
    ad, bd, cd = a.double(), b.double(), c.double()
    assert_within(got, ad + bd + cd, 2 * 2.0**-8 * (ad.abs() + bd.abs() + cd.abs()) + 2.0**-133, "the compiled sum")
