"""Ops with FP8 E4M3 per-token-group output (out_dtype=torch.float8_e4m3fn) against
ltx_kernels.reference: the op's float64 oracle (from the math) followed by the reference
quantizer (from the format's bit fields). Never the kernel under test as its own oracle.

(1) Exact inputs (y exact in fp32 whatever the evaluation order): codes and scales BIT FOR BIT.
(2) Random inputs: the kernel quantizes its own fp32 y32, within e32 of the exact y (the op's
    bound from tests/bounds.py). Each scale must lie within what amax(|y| +- e32) / 448 allows,
    and each code between the codes of (y - e32) / s and (y + e32) / s for the kernel's own s
    (the encoder is monotone): a deterministic check, no fraction of tolerated mismatches.
"""

import math

import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

from bounds import U, and_mul_e32, gated_e32, gelu_e32, gelu_tanh_e32, modulated, norm_rope_e32, rms_e32, silu_e32
from conftest import ALL_DEVICES, DTYPES, expect_error, skip_cuda_without_kernel, wide_row

FP8 = torch.float8_e4m3fn
OPS = ["rms_norm", "adaln_rms_norm", "gated_residual_adaln_rms_norm", "silu_and_mul",
       "gelu_and_mul", "gelu_and_mul_tanh", "gelu_tanh", "gated_attention", "rms_norm_rope",
       "rms_norm_split_rope"]
KERNEL = {"gelu_and_mul_tanh": "gelu_and_mul_fp8"}


@pytest.fixture(autouse=True)
def _skip_unregistered(request):
    op = getattr(getattr(request.node, "callspec", None), "params", {}).get("op", "rms_norm")
    skip_cuda_without_kernel(request, KERNEL.get(op, op + "_fp8"))


def codes(q):
    return q.view(torch.uint8).cpu()


def pick(vals, shape, device, dtype=torch.float32):
    t = torch.tensor(vals, dtype=torch.float32)
    return t[torch.randint(len(vals), shape)].to(device=device, dtype=dtype)


# ---- problem builders. Data is drawn on the CPU; make() returns
#   fused(dev) -> the wrapper's result on device `dev` ((q, s) or (h, q, s))
#   oracle()   -> the reference on the CPU data (same structure)
#   oracle_y() -> the reference op's float64 y (before quantization)
#   oracle_e() -> the kernel's fp32 error bound e32 of y (tests/bounds.py)
def make(op, dtype, lead=(2, 7), c=256, exact=False, group_size=128, layout="row"):
    kw = dict(out_dtype=FP8, group_size=group_size, scale_layout=layout)
    B = lead[0]
    cpu = "cpu"
    if op in ("rms_norm", "adaln_rms_norm", "gated_residual_adaln_rms_norm"):
        eps = 0.0 if exact else 1e-6
        if exact:
            # every row is +-a (a per row): mean(x^2) = a^2 exactly, rstd = 1/a exactly (eps 0)
            a = pick([0.5, 1.0, 2.0, 4.0], lead + (1,), cpu)
            x = (a * pick([-1.0, 1.0], lead + (c,), cpu)).to(dtype)
            w = pick([0.25, 0.5, -0.75, 1.0, 1.5, -2.0, 3.0], (c,), cpu, dtype)
            sc = pick([-0.5, 0.0, 0.5, 1.0], (B, c), cpu, dtype)
            sh = pick([-1.0, -0.25, 0.0, 0.5], lead + (c,), cpu, dtype)
        else:
            x = (torch.randn(lead + (c,)) * 2 + 0.3).to(dtype)
            w = torch.randn(c).to(dtype)
            sc = (torch.randn(B, c) * 0.5).to(dtype)
            sh = torch.randn(lead + (c,)).to(dtype)
        if op == "rms_norm":
            args = (x, w)
            f = lambda x, w: lk.rms_norm(x, w, eps, **kw)  # noqa: E731
            r = lambda x, w: ref.rms_norm(x, w, eps)  # noqa: E731
            e = lambda x, w: rms_e32(ref.rms_norm(x, w, eps), c)  # noqa: E731
        elif op == "adaln_rms_norm":
            args = (x, sc, sh, w)
            f = lambda x, sc, sh, w: lk.adaln_rms_norm(x, sc, sh, w, eps, **kw)  # noqa: E731
            r = lambda x, sc, sh, w: ref.adaln_rms_norm(x, sc, sh, w, eps)  # noqa: E731
            e = lambda x, sc, sh, w: _adaln_e(x, sc, sh, w, eps)  # noqa: E731
        else:
            if exact:  # h_new = x exactly: h = x - y * gate with dyadic y, gate
                g = pick([0.5, 1.0], (B, c), cpu, dtype)
                yy = pick([-1.0, -0.5, 0.5, 1.0], lead + (c,), cpu, dtype)
                h = (x.float() - yy.float() * g.float().reshape((B,) + (1,) * (len(lead) - 1) + (c,))).to(dtype)
                assert torch.equal(ref.gated_residual(h, yy, g), x)
            else:
                g = torch.randn(B, c).to(dtype)
                yy = torch.randn(lead + (c,)).to(dtype)
                h = x
            args = (h, yy, g, sc, sh, w)
            f = lambda h, yy, g, sc, sh, w: lk.gated_residual_adaln_rms_norm(h, yy, g, sc, sh, w, eps, **kw)  # noqa: E731
            r = lambda h, yy, g, sc, sh, w: ref.gated_residual_adaln_rms_norm(h, yy, g, sc, sh, w, eps)  # noqa: E731
            e = lambda h, yy, g, sc, sh, w: _adaln_e(ref.gated_residual(h, yy, g), sc, sh, w, eps)  # noqa: E731
    elif op in ("silu_and_mul", "gelu_and_mul", "gelu_and_mul_tanh"):
        act_first = bool(torch.randint(2, ()).item())
        if exact:  # act(a) == a exactly for a >= 17 in fp32 (1 + e^-a rounds to 1; erf, tanh -> 1)
            a = pick([24.0, 32.0, 48.0, 64.0], lead + (c,), cpu)
            b = pick([-3.0, -1.0, -0.5, 0.5, 1.0, 1.5], lead + (c,), cpu)
            x = (torch.cat([a, b], -1) if act_first else torch.cat([b, a], -1)).to(dtype)
        else:
            x = (torch.randn(lead + (2 * c,)) * 2).to(dtype)
        args = (x,)
        if op == "silu_and_mul":
            f = lambda x: lk.silu_and_mul(x, act_first, **kw)  # noqa: E731
            r = lambda x: ref.silu_and_mul(x, act_first)  # noqa: E731
            e = lambda x: and_mul_e32(x, ref.silu, silu_e32, act_first)  # noqa: E731
        else:
            appr = "tanh" if op == "gelu_and_mul_tanh" else "none"
            f = lambda x: lk.gelu_and_mul(x, appr, act_first, **kw)  # noqa: E731
            r = lambda x: ref.gelu_and_mul(x, appr, act_first)  # noqa: E731
            act, act_e = (ref.gelu_tanh, gelu_tanh_e32) if appr == "tanh" else (ref.gelu, gelu_e32)
            e = lambda x: and_mul_e32(x, act, act_e, act_first)  # noqa: E731
    elif op == "gelu_tanh":
        if exact:
            x = pick([8.0, 12.0, 16.0, 32.0, 0.0, 64.0, 100.0], lead + (c,), cpu, dtype)
        else:
            x = (torch.randn(lead + (c,)) * 3).to(dtype)
        args = (x,)
        f = lambda x: lk.gelu_tanh(x, **kw)  # noqa: E731
        r = ref.gelu_tanh
        e = gelu_tanh_e32
    elif op == "gated_attention":
        heads = c // 64
        if exact:  # 2 * sigmoid(100) == 2 and 2 * sigmoid(0) == 1 exactly
            x = pick([-3.0, -1.0, -0.5, 0.25, 1.0, 1.5, 6.0], lead + (c,), cpu, dtype)
            gl = pick([0.0, 100.0], lead + (heads,), cpu, dtype)
        else:
            x = (torch.randn(lead + (c,)) * 2).to(dtype)
            gl = torch.randn(lead + (heads,)).to(dtype)
        args = (x, gl)
        f = lambda x, gl: lk.gated_attention(x, gl, **kw)  # noqa: E731
        r = ref.gated_attention
        e = gated_e32
    elif op in ("rms_norm_rope", "rms_norm_split_rope"):
        split_rope = op == "rms_norm_split_rope"
        S = lead[1]
        d = 64  # split: heads of 64 (c is a multiple of 64 in every case)
        tb = int(torch.randint(2, ()).item()) * (B - 1) + 1  # table batch: 1 (broadcast) or B
        tshape = (tb, c // d, S, d // 2) if split_rope else (tb, S, c)
        eps = 0.0 if exact else 1e-6
        if exact:  # rows +-a: rstd = 1/a exactly; dyadic weights and tables: y exact in fp32
            a = pick([0.5, 1.0, 2.0, 4.0], lead + (1,), cpu)
            x = (a * pick([-1.0, 1.0], lead + (c,), cpu)).to(dtype)
            w = pick([0.25, 0.5, -0.75, 1.0, 1.5, -2.0], (c,), cpu, dtype)
            cs = pick([-1.0, -0.5, 0.0, 0.5, 1.0], tshape, cpu, dtype)
            sn = pick([-1.0, -0.5, 0.0, 0.5, 1.0], tshape, cpu, dtype)
        else:
            x = (torch.randn(lead + (c,)) * 2 + 0.3).to(dtype)
            w = torch.randn(c).to(dtype)
            theta = torch.rand(tshape) * 6.3
            tdt = torch.float32 if bool(torch.randint(2, ()).item()) else dtype
            cs, sn = theta.cos().to(tdt), theta.sin().to(tdt)
        args = (x, cs, sn, w)
        fn_, rf = (lk.rms_norm_split_rope, ref.rms_norm_split_rope) if split_rope else (lk.rms_norm_rope, ref.rms_norm_rope)
        f = lambda x, cs, sn, w: fn_(x, cs, sn, w, eps, **kw)  # noqa: E731
        r = lambda x, cs, sn, w: rf(x, cs, sn, w, eps)  # noqa: E731
        e = lambda x, cs, sn, w: norm_rope_e32(x, cs, sn, w, eps, not split_rope)  # noqa: E731
    else:
        raise AssertionError(op)

    def fused(dev):
        return f(*[t.to(dev) for t in args])

    def oracle_y():
        y = r(*args)
        return y[1] if isinstance(y, tuple) else y

    def oracle_e():
        return e(*args)

    def oracle():
        y = r(*args)
        if isinstance(y, tuple):  # gated residual: (h_new, y)
            return (y[0], *ref.fp8_group_out(y[1], group_size))
        return ref.fp8_group_out(y, group_size)

    return fused, oracle, oracle_y, oracle_e


def _adaln_e(x, sc, sh, w, eps):
    n = ref.rms_norm(x, w, eps)
    return modulated(n, rms_e32(n, x.shape[-1]), x, sc, sh)[1]


def split(res):
    """(h or None, q, s) from a fused / oracle result."""
    return (res[0], res[1], res[2]) if len(res) == 3 else (None, res[0], res[1])


def signed_index(q):
    c = codes(q).to(torch.int32)
    mag = c & 0x7F
    return torch.where(c & 0x80 != 0, -mag, mag)


def assert_codes_within(q, s, y, e32, group_size, what=""):
    """The kernel's (q, s) against the exact y and the bound e32 of its own fp32 y32 (module
    docstring): s = fl(amax|y32| / 448) per group, q = e4m3(fl(y32 / s)) (y32 itself where
    s = 0), the division rounding once (u)."""
    k = q.shape[-1]
    g = k // group_size
    yd = y.detach().double().cpu().reshape(-1, g, group_size)
    ed = torch.as_tensor(e32, dtype=torch.float64).cpu().expand(y.shape).reshape(-1, g, group_size)
    sk = s.detach().cpu().double().reshape(-1, g, 1)
    amax = yd.abs().amax(-1, keepdim=True)
    emax = ed.amax(-1, keepdim=True)
    s_lo = (amax - emax).clamp_min(0) / 448 * (1 - U)
    s_hi = (amax + emax) / 448 * (1 + U)
    bad = ~((sk >= s_lo) & (sk <= s_hi))
    assert not bad.any(), (f"{what}: {int(bad.sum())} scales outside [(amax - e) / 448, (amax + e) / 448], e.g. "
                           f"{sk[bad][:3].tolist()} not in [{s_lo[bad][:3].tolist()}, {s_hi[bad][:3].tolist()}]")
    pos = sk > 0
    sd = torch.where(pos, sk, torch.ones_like(sk))
    lo = torch.where(pos, (yd - ed) / sd - U * (yd.abs() + ed) / sd, yd - ed)
    hi = torch.where(pos, (yd + ed) / sd + U * (yd.abs() + ed) / sd, yd + ed)
    c_lo = signed_index(ref.fp8_encode(lo.float()).view(FP8))
    c_hi = signed_index(ref.fp8_encode(hi.float()).view(FP8))
    c = signed_index(q).reshape(c_lo.shape)
    bad = (c < c_lo) | (c > c_hi)
    if bad.any():
        i = bad.nonzero()[:3].tolist()
        raise AssertionError(f"{what}: {int(bad.sum())} of {c.numel()} codes outside the bound, e.g. at {i}: code "
                             f"{[int(c[tuple(j)]) for j in i]}, allowed [{[int(c_lo[tuple(j)]) for j in i]}, "
                             f"{[int(c_hi[tuple(j)]) for j in i]}], y {[float(yd[tuple(j)]) for j in i]}")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("layout", ["row", "mn_major", "per_token"])
def test_exact_inputs_bit_for_bit(device, dtype, op, layout):
    """Per 128 columns in either scale layout, and one scale per token ("per_token": group_size =
    the output row's width)."""
    gs = 384 if layout == "per_token" else 128
    if device == "cuda" and dtype == torch.float32 and layout == "per_token":
        pytest.skip("one scale per token over 96 fp32 vectors: 16-bit inputs only on CUDA (test_one_scale_per_token)")
    fused, oracle, _, _ = make(op, dtype, lead=(3, 5), c=384, exact=True, group_size=gs,
                               layout="row" if layout == "per_token" else layout)
    h, q, s = split(fused(device))
    wh, wq, ws = split(oracle())
    assert q.dtype == FP8 and q.shape == wq.shape and s.shape == ws.shape and q.device.type == device
    assert torch.equal(codes(q), codes(wq)), int((codes(q) != codes(wq)).sum())
    assert torch.equal(s.cpu(), ws)
    assert bool((ws > 0).all())
    if h is not None:
        assert torch.equal(h.cpu(), wh)
    if layout == "mn_major":
        m = s.shape[0]
        assert s.stride() == (1, (m + 3) // 4 * 4)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("lead,c,group_size", [((2, 7), 256, 128), ((1, 83), 1024, 128), ((3, 5), 512, 64),
                                               ((2, 3), 16384, 128), ((1, 1), 128, 128), ((2, 2), 512, 256)])
def test_random_inputs(device, dtype, op, lead, c, group_size):
    if device == "cuda" and dtype == torch.float32 and group_size > 128:
        pytest.skip("fp32 on CUDA takes group_size <= 128 (tested as an error below)")
    fused, oracle, oracle_y, oracle_e = make(op, dtype, lead=lead, c=c, group_size=group_size)
    h, q, s = split(fused(device))
    wh, wq, ws = split(oracle())
    y, e32 = oracle_y(), oracle_e()
    if h is not None:
        assert torch.equal(h.cpu(), wh)
    assert q.shape == wq.shape and s.shape == ws.shape
    assert_codes_within(q, s, y, e32, group_size, device)
    if device == "cuda":  # the CPU backend on the same data, the same bound
        _, cq, cs = split(fused("cpu"))
        assert_codes_within(cq, cs, y, e32, group_size, "cpu")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("lead,c", [((3, 5), 512), ((2, 3), 1152), ((2, 5), 2048), ((1, 3), 16384)])
def test_one_scale_per_token(device, dtype, op, lead, c):
    """group_size = the output row's width: one scale per token (what FP8RowwiseLinear reads), on
    CUDA a reduction over the row's warp (rows of <= 128 16-byte vectors) or block, four or
    sixteen chunks per thread; the same bound as per-group scales."""
    out_cols = c  # (the gated activations read 2c columns)
    fused, oracle, oracle_y, oracle_e = make(op, dtype, lead=lead, c=c, group_size=out_cols)
    if device == "cuda" and dtype == torch.float32:  # the per-token kernel takes 16-bit inputs
        expect_error(KERNEL.get(op, op + "_fp8"), lambda: fused(device), "takes a 16-bit input")
        return
    h, q, s = split(fused(device))
    wh, wq, ws = split(oracle())
    y, e32 = oracle_y(), oracle_e()
    if h is not None:
        assert torch.equal(h.cpu(), wh)
    assert q.shape == wq.shape and s.shape == ws.shape == (q.numel() // out_cols, 1)
    assert_codes_within(q, s, y, e32, out_cols, device)
    # a scale 10% too small fails the check: the bound is not vacuous
    with pytest.raises(AssertionError):
        assert_codes_within(q, s * 0.9, y, e32, out_cols, device)


# ---- behaviour around the fp8 path
def _plain_calls(x, w, sc, sh, g, gl, xx):
    return {
        "rms_norm": lambda **k: lk.rms_norm(x, w, **k),
        "adaln_rms_norm": lambda **k: lk.adaln_rms_norm(x, sc, sh, w, **k),
        "gated_residual_adaln_rms_norm": lambda **k: lk.gated_residual_adaln_rms_norm(x, x * 0.5, g, sc, sh, w, **k),
        "silu_and_mul": lambda **k: lk.silu_and_mul(xx, **k),
        "gelu_and_mul": lambda **k: lk.gelu_and_mul(xx, **k),
        "gelu_and_mul_tanh": lambda **k: lk.gelu_and_mul(xx, "tanh", **k),
        "gelu_tanh": lambda **k: lk.gelu_tanh(x, **k),
        "gated_attention": lambda **k: lk.gated_attention(x, gl, **k),
    }


def _inputs(device, dtype, lead=(2, 3), c=256):
    calls = _plain_inputs(device, dtype, lead, c)
    x = torch.randn(lead + (c,), device=device).to(dtype)
    w = torch.randn(c, device=device).to(dtype)
    S = lead[1]
    th = torch.rand(1, S, c, device=device)
    ths = torch.rand(1, c // 64, S, 32, device=device)
    calls["rms_norm_rope"] = lambda **k: lk.rms_norm_rope(x, th.cos(), th.sin(), w, **k)
    calls["rms_norm_split_rope"] = lambda **k: lk.rms_norm_split_rope(x, ths.cos(), ths.sin(), w, **k)
    return calls


def _plain_inputs(device, dtype, lead=(2, 3), c=256):
    x = torch.randn(lead + (c,), device=device).to(dtype)
    w = torch.randn(c, device=device).to(dtype)
    sc = torch.randn(lead[0], c, device=device).to(dtype)
    sh = torch.randn(lead[0], c, device=device).to(dtype)
    g = torch.randn(lead[0], c, device=device).to(dtype)
    gl = torch.randn(lead + (4,), device=device).to(dtype)
    xx = torch.randn(lead + (2 * c,), device=device).to(dtype)
    return _plain_calls(x, w, sc, sh, g, gl, xx)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_out_dtype_none_or_input_dtype_is_the_plain_op(device, op):
    call = _inputs(device, torch.bfloat16)[op]
    plain = call()
    for kw in (dict(out_dtype=None), dict(out_dtype=torch.bfloat16)):
        got = call(**kw)
        if isinstance(plain, tuple):
            assert isinstance(got, tuple) and len(got) == len(plain)
            for a, b in zip(got, plain):
                assert a.dtype == torch.bfloat16 and torch.equal(a, b)
        else:
            assert got.dtype == torch.bfloat16 and torch.equal(got, plain)


@pytest.mark.isolated
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_bad_arguments(device):
    calls = _inputs(device, torch.bfloat16)
    for op in OPS:
        name = op.replace("_tanh", "") if op == "gelu_and_mul_tanh" else op
        call = calls[op]
        expect_error(name, lambda: call(out_dtype=torch.float16), "out_dtype must be", f"{op}: out_dtype=float16")
        expect_error(name, lambda: call(out_dtype=torch.float8_e5m2), "out_dtype must be", f"{op}: out_dtype=e5m2")
        expect_error(name, lambda: call(out_dtype=FP8, group_size=96), "the row width must be a multiple of group_size")
        expect_error(name, lambda: call(out_dtype=FP8, scale_layout="col"), "scale_layout must be 'row' or 'mn_major'")


@pytest.mark.isolated
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_op_level_errors(device):
    x = torch.randn(4, 256, device=device, dtype=torch.bfloat16)
    q = torch.empty(4, 256, device=device, dtype=FP8)
    s = torch.empty(4, 2, device=device)
    o = lk.ops
    expect_error("rms_norm_fp8", lambda: o.rms_norm_fp8(q, torch.empty(4, 3, device=device), x, None, 1e-6, 96),
                 "the row width must be a multiple of group_size")
    expect_error("rms_norm_fp8", lambda: o.rms_norm_fp8(q.view(torch.uint8), s, x, None, 1e-6, 128), "q must be float8_e4m3fn")
    expect_error("rms_norm_fp8", lambda: o.rms_norm_fp8(q, torch.empty(4, 3, device=device), x, None, 1e-6, 128),
                 "scales must have shape [M, C / group_size]")
    expect_error("gelu_and_mul_fp8", lambda: o.gelu_and_mul_fp8(q[:, :128], s[:, :1], x, "fast", True, 128), "approximate must be")
    expect_error("gated_attention_fp8", lambda: o.gated_attention_fp8(q, s, x, torch.randn(4, 3, device=device, dtype=torch.bfloat16), 128),
                 "gate_logits must be")
    wide = wide_row(torch.bfloat16, device)
    expect_error("rms_norm_fp8", lambda: lk.rms_norm(wide, None, out_dtype=FP8), "rows wider than 2^31-1 elements are not supported")
    if device == "cuda":  # fp32 with 256-column groups of a 512-column row: 64 lanes per group (not the
        # whole row, which is one scale per token), not supported on CUDA
        xf = torch.cat([x, x], -1).float()
        expect_error("rms_norm_fp8", lambda: lk.rms_norm(xf, None, out_dtype=FP8, group_size=256), "on CUDA, group_size")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_mn_major_matches_row_and_pads_zero(device, op):
    seed = int(torch.randint(2**30, ()))
    res = {}
    for layout in ("row", "mn_major"):
        torch.manual_seed(seed)  # the same data for both layouts
        fused, _, _, _ = make(op, torch.bfloat16, lead=(1, 7), c=256, layout=layout)  # M = 7 -> M_pad = 8
        res[layout] = split(fused(device))
    (_, qr, sr), (_, qm, sm) = res["row"], res["mn_major"]
    assert torch.equal(codes(qr), codes(qm))
    assert torch.equal(sr.cpu(), sm.cpu())
    assert sr.stride() == (2, 1) and sm.stride() == (1, 8)
    storage = torch.as_strided(sm, (2, 8), (8, 1))  # [groups, M_pad] as stored
    assert bool((storage[:, 7] == 0).all())  # the padding entries stay 0


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_rows_give_zero_scales_and_codes(device, dtype):
    x = torch.randn(5, 512, device=device).to(dtype)
    x[1] = 0
    x[3, 128:256] = 0  # one zero group in an otherwise non-zero row (gelu_tanh(0) = 0)
    for q, s in (lk.rms_norm(x, None, out_dtype=FP8), lk.gelu_tanh(x, out_dtype=FP8)):
        q, s = codes(q), s.cpu()
        assert not torch.isnan(s).any()
        assert bool((s[1] == 0).all()) and bool((q[1] == 0).all())
        assert bool((s[0] > 0).all())
    q, s = lk.gelu_tanh(x, out_dtype=FP8)
    assert float(s[3, 1]) == 0.0 and bool((codes(q)[3, 128:256] == 0).all())
    # all-zero rows of the norm: rstd = 1/sqrt(eps), y = 0
    q, s = lk.adaln_rms_norm(x, torch.zeros(5, 512, device=device, dtype=dtype),
                             torch.zeros(5, 512, device=device, dtype=dtype), out_dtype=FP8)
    assert bool((s.cpu()[1] == 0).all()) and bool((codes(q)[1] == 0).all())


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("op", OPS)
def test_empty_inputs(device, op):
    calls = _inputs(device, torch.bfloat16, lead=(2, 0), c=256)
    res = calls[op](out_dtype=FP8)
    h, q, s = split(res)
    assert q.numel() == 0 and q.dtype == FP8 and s.shape == (0, q.shape[-1] // 128)
    calls = _inputs(device, torch.bfloat16, lead=(2, 0), c=256)
    for layout in ("mn_major",):
        h, q, s = split(calls[op](out_dtype=FP8, scale_layout=layout))
        assert s.shape == (0, 2)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_strided_and_misaligned_inputs(device, dtype):
    c = 512
    base = torch.randn(9, 2 * c + 8, device=device).to(dtype)
    w = torch.randn(c, device=device).to(dtype)
    cases = {
        "row stride > cols": base[:, :c],
        "last-dim stride 2 (copied)": base[:, : 2 * c : 2],
        "misaligned start (copied to aligned on CUDA)": base.view(-1)[1 : 1 + 9 * c].view(9, c),
        "transposed leading dims": torch.randn(3, 4, c, device=device).to(dtype).transpose(0, 1),
    }
    for name, x in cases.items():
        q, s = lk.rms_norm(x, w, out_dtype=FP8)
        y = ref.rms_norm(x.cpu(), w.cpu(), 1e-6)
        assert_codes_within(q, s, y, rms_e32(y, c), 128, name)
        q, s = lk.gelu_tanh(x, out_dtype=FP8)
        assert_codes_within(q, s, ref.gelu_tanh(x.cpu()), gelu_tanh_e32(x.cpu()), 128, name)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gated_residual_h_out_in_place(device, dtype):
    h = torch.randn(2, 5, 256, device=device).to(dtype)
    y = torch.randn(2, 5, 256, device=device).to(dtype)
    g, sc, sh = (torch.randn(2, 256, device=device).to(dtype) for _ in range(3))
    want_h, yref = ref.gated_residual_adaln_rms_norm(h.cpu(), y.cpu(), g.cpu(), sc.cpu(), sh.cpu())
    hh = h.clone()
    hn, q, s = lk.gated_residual_adaln_rms_norm(hh, y, g, sc, sh, h_out=hh, out_dtype=FP8)
    assert hn.data_ptr() == hh.data_ptr()
    assert torch.equal(hh.cpu(), want_h)
    assert_codes_within(q, s, yref, _adaln_e(want_h, sc.cpu(), sh.cpu(), None, 1e-6), 128)


# torch's SchemaCheckMode cannot multiply float8 tensors (see test_fp8.py): skip test_schema.
OPCHECK_UTILS = ("test_faketensor", "test_aot_dispatch_dynamic", "test_autograd_registration")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(device, dtype):
    x = torch.randn(3, 256, device=device).to(dtype)
    xx = torch.randn(3, 512, device=device).to(dtype)
    w = torch.randn(256, device=device).to(dtype)
    t = torch.randn(3, 256, device=device).to(dtype)
    gl = torch.randn(3, 4, device=device).to(dtype)
    q = torch.empty(3, 256, device=device, dtype=FP8)
    s = torch.empty(3, 2, device=device)
    sm = lk.fused_fp8.fp8_outputs("x", (3, 256), device, 128, "mn_major")[1]
    o = lk.ops
    cases = [
        (o.rms_norm_fp8.default, (q, s, x, w, 1e-6, 128)),
        (o.rms_norm_fp8.default, (q, sm, x, None, 1e-6, 128)),
        (o.adaln_rms_norm_fp8.default, (q, s, x, t, t, w, 1e-6, 128)),
        (o.gated_residual_adaln_rms_norm_fp8.default, (q, s, torch.empty_like(x), x, t, t, t, t, None, 1e-6, 128)),
        (o.silu_and_mul_fp8.default, (q, s, xx, True, 128)),
        (o.gelu_and_mul_fp8.default, (q, s, xx, "tanh", False, 128)),
        (o.gelu_tanh_fp8.default, (q, s, x, 128)),
        (o.gated_attention_fp8.default, (q, s, x, gl, 128)),
    ]
    x3, q3 = x.reshape(1, 3, 256), q.reshape(1, 3, 256)
    th = torch.rand(1, 3, 256, device=device)
    ths = torch.rand(1, 4, 3, 32, device=device)
    cases += [
        (o.rms_norm_rope_fp8.default, (q3, s, x3, th.cos(), th.sin(), w, 1e-6, 128)),
        (o.rms_norm_split_rope_fp8.default, (q3, sm, x3, ths.cos().to(dtype), ths.sin().to(dtype), None, 1e-6, 128)),
    ]
    for op, args in cases:
        torch.library.opcheck(op, args, test_utils=OPCHECK_UTILS)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_compile_fullgraph(device):
    torch._dynamo.reset()
    x = torch.randn(2, 9, 512, device=device, dtype=torch.bfloat16)
    w = torch.randn(512, device=device, dtype=torch.bfloat16)
    xx = torch.randn(2, 9, 1024, device=device, dtype=torch.bfloat16)

    def f(x, w, xx):
        q, s = lk.rms_norm(x * 2.0, w, out_dtype=torch.float8_e4m3fn, scale_layout="mn_major")
        q2, s2 = lk.silu_and_mul(xx, out_dtype=torch.float8_e4m3fn)
        return q, s + 1.0, q2, s2

    q, s1, q2, s2 = torch.compile(f, fullgraph=True)(x, w, xx)
    wq, ws = lk.rms_norm(x * 2.0, w, out_dtype=FP8, scale_layout="mn_major")
    assert torch.equal(codes(q), codes(wq)) and torch.equal(s1.cpu(), ws.cpu() + 1.0)
    wq2, ws2 = lk.silu_and_mul(xx, out_dtype=FP8)
    assert torch.equal(codes(q2), codes(wq2)) and torch.equal(s2.cpu(), ws2.cpu())


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("split_rope", [False, True], ids=["interleaved", "split"])
def test_rope_tables_any_layout(device, split_rope):
    """Broadcast, per-batch, strided, misaligned and per-head-shared tables (copied to aligned
    rows on CUDA where needed) give the reference's result."""
    B, S, c, d = 2, 5, 256, 64
    x = (torch.randn(B, S, c) * 2).to(torch.bfloat16)
    w = torch.randn(c).to(torch.bfloat16)
    full = (B, c // d, S, d // 2) if split_rope else (B, S, c)
    n = full[-1]
    big = torch.rand(full[:-1] + (2 * n + 3,)) * 6.3
    views = {  # each a function of the (cos or sin of the) big tensor, applied on the device
        "contiguous": lambda t: t[..., :n].contiguous(),
        "row stride > width": lambda t: t[..., :n],
        "innermost stride 2": lambda t: t[..., : 2 * n : 2],
        "misaligned start": lambda t: t.reshape(-1)[1 : 1 + math.prod(full)].reshape(full),
        "batch broadcast (stride 0)": lambda t: t[:1, ..., :n].expand(full),
    }
    if split_rope:
        views["one table shared by every head (stride 0)"] = lambda t: t[:, :1, :, :n].expand(full)
    fn_ = lk.rms_norm_split_rope if split_rope else lk.rms_norm_rope
    rf = ref.rms_norm_split_rope if split_rope else ref.rms_norm_rope
    bc, bs = big.cos(), big.sin()
    for name, v in views.items():
        q, s = fn_(x.to(device), v(bc.to(device)), v(bs.to(device)), w.to(device), out_dtype=FP8)
        y = rf(x, v(bc), v(bs), w)
        assert_codes_within(q, s, y, norm_rope_e32(x, v(bc), v(bs), w, 1e-6, not split_rope), 128, name)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_split_rope_head_dims(device):
    """Any even head dim on the CPU; on CUDA the FP8 path needs d % 16 == 0 (16-bit x) and
    says so."""
    B, S, heads = 1, 3, 4
    for d in (8, 16, 48, 128):
        c = heads * d
        if c % 32:
            continue
        x = torch.randn(B, S, c).to(torch.bfloat16)
        th = torch.rand(1, heads, S, d // 2) * 6.3
        cs, sn = th.cos(), th.sin()
        gs = 32
        if device == "cuda" and d % 16:
            with pytest.raises(RuntimeError, match="rms_norm_split_rope_fp8: on CUDA, the head dim must be a multiple"):
                lk.rms_norm_split_rope(x.to(device), cs.to(device), sn.to(device), out_dtype=FP8, group_size=gs)
            continue
        q, s = lk.rms_norm_split_rope(x.to(device), cs.to(device), sn.to(device), out_dtype=FP8, group_size=gs)
        y = ref.rms_norm_split_rope(x, cs, sn)
        assert_codes_within(q, s, y, norm_rope_e32(x, cs, sn, None, 1e-6, False), gs, f"d={d}")
