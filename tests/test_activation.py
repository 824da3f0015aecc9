"""Activation family (gelu, gelu_tanh, silu, gelu_and_mul, silu_and_mul, gated_attention)
against the float64 oracles in ltx_kernels.reference (written from the formulas) and against the
composition of the unfused reference ops, under error bounds derived from each formula (below)
and the output dtype (conftest.rounded_bound). The special values are exact."""

import math
import re

import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

from bounds import and_mul_e32 as _and_mul_e32, gated_e32, gelu_e32, gelu_tanh_e32, silu_e32
from conftest import ALL_DEVICES, DTYPES, HAS_CUDA, assert_close_to, assert_within, expect_error, wide_row

SIZES = [1, 7, 83, 111, 769, 5125, 16384]
LEADING = [(), (3,), (2, 5)]


def _re(s):
    return re.escape(s)


# name: (kernel, oracle, fp32 error bound of the kernel's activation, from tests/bounds.py)
ELEMENTWISE = {
    "gelu": (lk.gelu, ref.gelu, gelu_e32),
    "gelu_tanh": (lk.gelu_tanh, ref.gelu_tanh, gelu_tanh_e32),
    "silu": (lk.silu, ref.silu, silu_e32),
}
# name: (kernel(x, act_first), oracle(x, act_first), unfused reference activation, its e32)
GATED = {
    "gelu": (
        lambda x, af, **kw: lk.gelu_and_mul(x, "none", af, **kw),
        lambda x, af: ref.gelu_and_mul(x, "none", af),
        ref.gelu,
        gelu_e32,
    ),
    "gelu_tanh": (
        lambda x, af, **kw: lk.gelu_and_mul(x, "tanh", af, **kw),
        lambda x, af: ref.gelu_and_mul(x, "tanh", af),
        ref.gelu_tanh,
        gelu_tanh_e32,
    ),
    "silu": (
        lambda x, af, **kw: lk.silu_and_mul(x, af, **kw),
        lambda x, af: ref.silu_and_mul(x, af),
        ref.silu,
        silu_e32,
    ),
}
# (heads, head_dim): widths 1, 7, 83, 111, 769, 2048, 5125, 16384
HEAD_SHAPES = [(1, 1), (7, 1), (1, 83), (3, 37), (1, 769), (32, 64), (5, 1025), (128, 128)]


def check_act(y, x, name, what=""):
    _, oracle, e32 = ELEMENTWISE[name]
    assert_close_to(y, oracle(x), y.dtype, e32(x), what or name)


def and_mul_e32(x, name, act_first):
    _, _, act, e32 = GATED[name]
    return _and_mul_e32(x, act, e32, act_first)


def check_and_mul(y, x, name, act_first, what=""):
    _, oracle, _, _ = GATED[name]
    assert_close_to(y, oracle(x, act_first), y.dtype, and_mul_e32(x, name, act_first), what or name)




@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(ELEMENTWISE))
@pytest.mark.parametrize("size", SIZES)
def test_elementwise_matches_reference(device, dtype, name, size):
    fn, _, _ = ELEMENTWISE[name]
    for lead in LEADING:
        x = torch.randn(*lead, size, device=device, dtype=dtype) * 3
        y = fn(x)
        assert y.shape == x.shape and y.dtype == dtype and y.device == x.device
        check_act(y, x, name)


def _every_pattern(dtype):
    return torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise_every_16bit_input_and_an_fp32_sweep(device, name):
    """Every fp16 and bf16 bit pattern (NaN and +-inf included), and a dense sweep of fp32
    values over [-20, 20] (the x << 0 range where 1 + erf and 1 + tanh would cancel)."""
    fn, _, _ = ELEMENTWISE[name]
    for dtype in (torch.float16, torch.bfloat16):
        x = _every_pattern(dtype).to(device)
        check_act(fn(x), x, name, f"{name} {dtype}")
    x = torch.linspace(-20, 20, 400_003, dtype=torch.float64).float().to(device)
    check_act(fn(x), x, name, f"{name} fp32 sweep")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_gelu_x_much_less_than_zero(device):
    """gelu over every 509th fp32 value of [-20, 0] (~2 million, every binade): the range where
    1 + erf(x / sqrt 2) cancels and where the rounding of x / sqrt 2 would cost ~2u^2 ulps
    without the carried low part. Relative bound 11 * 2^-24 (tests/bounds.py: CUDA's erfcf is
    documented to 4 ulps) where erfc(-x / sqrt 2) is a normal fp32 number (x >= -13), absolute
    2^-142 below. The C++ core test runs the same function, host-compiled, 4x denser."""
    lo = torch.tensor(-20.0).view(torch.int32).item() & 0x7FFFFFFF  # |x| bit patterns, 0 .. 20
    x = -(torch.arange(0, lo + 1, 509, dtype=torch.int64).to(torch.int32).view(torch.float32))
    y = lk.gelu(x.to(device))
    check_act(y, x, "gelu", "gelu, x in [-20, 0]")
    # the low part matters: the plain fp32 product loses up to ~2u^2 ulps at x = -10 (u = 7.1)
    xs = x[(x > -13) & (x < -8)]
    plain = 0.5 * xs * torch.special.erfc(-xs * 0.70710677)
    want = ref.gelu(xs)
    assert ((plain.double() - want).abs() / want.abs()).max().item() > 11 * 2.0**-24


# The special values of the three activations (documented in activation.py and the docs), for
# every dtype: exact results, signs included.
SPECIAL = [  # (x, gelu, gelu_tanh, silu); "tiny" = x / 2 (exact: tiny is a power of two)
    (0.0, 0.0, 0.0, 0.0),
    (-0.0, -0.0, -0.0, -0.0),
    ("tiny", "x/2", "x/2", "x/2"),
    ("-tiny", "x/2", "x/2", "x/2"),
    # the smallest subnormal: x / 2 is a tie, and the exact value rounds up; what comes out (0 or
    # the subnormal, its sign kept) depends on fp32 intermediates: the bound, and the sign
    ("min_sub", "y", "y", "y"),
    ("-min_sub", "y", "y", "y"),
    (6.0, 6.0, 6.0, "y"),  # gelu(x) = x for x > 5.5, gelu_tanh for x > 5.1, silu for x > 17.4
    (20.0, 20.0, 20.0, 20.0),
    (1e4, 1e4, 1e4, 1e4),
    ("max", "max", "max", "max"),
    (-16.0, -0.0, -0.0, "y"),  # -0: gelu for x < -14.85, gelu_tanh for x < -10.0, silu < -87.3
    (-100.0, -0.0, -0.0, -0.0),
    (-1e4, -0.0, -0.0, -0.0),
    ("-max", -0.0, -0.0, -0.0),
    (float("inf"), float("inf"), float("inf"), float("inf")),
    (float("-inf"), -0.0, -0.0, -0.0),
    (float("nan"), float("nan"), float("nan"), float("nan")),
]


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_special_values(device, dtype):
    fi = torch.finfo(dtype)
    tiny = 2.0**-20 if dtype == torch.float16 else 2.0**-100  # act(x) = x / 2 for |x| < 2^-24
    named = {"tiny": tiny, "-tiny": -tiny, "min_sub": fi.smallest_normal * fi.eps,
             "-min_sub": -fi.smallest_normal * fi.eps, "max": fi.max, "-max": -fi.max}
    xs = [named.get(r[0], r[0]) if isinstance(r[0], str) else r[0] for r in SPECIAL]
    x = torch.tensor(xs, dtype=torch.float64).to(dtype)
    assert x.double().tolist()[4] == fi.smallest_normal * fi.eps  # the smallest subnormal
    for col, name in enumerate(ELEMENTWISE, start=1):
        fn, oracle, e32 = ELEMENTWISE[name]
        y = fn(x.to(device)).cpu()
        want = []
        for xi, row in zip(x.double().tolist(), SPECIAL):
            w = row[col]
            want.append(xi / 2 if w == "x/2" else xi if w == "max" else w)
        want = torch.tensor([0.0 if w == "y" else w for w in want], dtype=torch.float64).to(dtype)
        for i, row in enumerate(SPECIAL):
            if row[col] == "y":  # not an exact special value: the bound, and the sign
                assert_close_to(y[i:i + 1], oracle(x[i:i + 1]), dtype, e32(x[i:i + 1]), f"{name}({xs[i]})")
                assert bool(torch.signbit(y[i]) == torch.signbit(x[i])), f"{name}({xs[i]}): sign"
                continue
            if math.isnan(want[i].item()):
                assert torch.isnan(y[i]), f"{name}({xs[i]}) = {y[i].item()}, want NaN"
                continue
            same = y[i:i + 1].view(torch.int16 if dtype != torch.float32 else torch.int32) == \
                want[i:i + 1].view(torch.int16 if dtype != torch.float32 else torch.int32)
            assert bool(same), f"{name}({xs[i]}) = {y[i].item()!r}, want {want[i].item()!r} (bits)"


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_elementwise_strided_inputs(device, dtype):
    base = torch.randn(37, 2 * 1024 + 24, device=device, dtype=dtype) * 3
    cases = {
        "row stride > cols (read in place)": base[:, :1024],
        "odd width, row stride (scalar rows)": base[:, :1001],
        "last-dim stride 2 (copied)": base[:, : 2 * 1024 : 2],
        "transposed leading dims (copied)": torch.randn(5, 4, 1024, device=device, dtype=dtype).transpose(0, 1),
        "misaligned start (scalar flat)": base.view(-1)[1 : 1 + 37 * 1024].view(37, 1024),
        "misaligned rows (scalar rows)": base[:, 1:1025],
        "broadcast rows (stride 0)": base[0, :1024].expand(9, 1024),
    }
    for name, x in cases.items():
        for act, (fn, _, _) in ELEMENTWISE.items():
            y = fn(x)
            assert y.is_contiguous(), name
            check_act(y, x, act, f"{act}: {name}")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_out_sentinel_and_inplace(device, dtype):
    rows, cols = 83, 769
    x = torch.randn(rows, cols, device=device, dtype=dtype) * 3
    for name, (fn, _, _) in ELEMENTWISE.items():
        big = torch.full((rows, cols + 7), float("nan"), device=device, dtype=dtype)
        out = big[:, :cols]
        y = fn(x, out=out)
        assert y.data_ptr() == out.data_ptr()
        assert not torch.isnan(out).any(), name
        assert torch.isnan(big[:, cols:]).all(), name
        check_act(out, x, name)
        # dense sentinel out (flat path, tail elements included)
        out2 = torch.full((rows, cols), float("nan"), device=device, dtype=dtype)
        fn(x, out=out2)
        assert not torch.isnan(out2).any(), name
        x2 = x.clone()
        fn(x2, out=x2)
        check_act(x2, x, name, f"{name} in place")


# ---- *_and_mul -----------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(GATED))
@pytest.mark.parametrize("d", SIZES)
@pytest.mark.parametrize("act_first", [True, False])
def test_and_mul_matches_reference(device, dtype, name, d, act_first):
    fn, oracle, act, _ = GATED[name]
    for lead in [(), (3,), (2, 5)]:
        x = torch.randn(*lead, 2 * d, device=device, dtype=dtype) * 3
        y = fn(x, act_first)
        assert y.shape == (*lead, d) and y.dtype == dtype
        check_and_mul(y, x, name, act_first)
        # fused vs the composition of the unfused reference ops
        a, b = x[..., :d], x[..., d:]
        unfused = act(a) * b.double() if act_first else a.double() * act(b)
        assert_close_to(y, unfused, dtype, and_mul_e32(x, name, act_first), f"{name} unfused")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("name", list(GATED))
def test_and_mul_conventions(device, name):
    """Both conventions, written the way the model code writes them (with the reference
    activation): vLLM's act(x[..., :d]) * x[..., d:] and diffusers GEGLU's
    value, gate = x.chunk(2, -1); value * act(gate)."""
    fn, _, act, _ = GATED[name]
    x = torch.randn(4, 9, 2 * 300, device=device) * 3
    d = 300
    vllm = act(x[..., :d]) * x[..., d:].double()
    value, gate = x.chunk(2, dim=-1)
    diffusers = value.double() * act(gate)
    assert_close_to(fn(x, True), vllm, torch.float32, and_mul_e32(x, name, True), "vLLM order")
    assert_close_to(fn(x, False), diffusers, torch.float32, and_mul_e32(x, name, False), "diffusers order")
    assert not torch.allclose(vllm, diffusers)  # the test can tell the two apart


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_and_mul_defaults(device):
    x = torch.randn(5, 64, device=device, dtype=torch.bfloat16)
    check_and_mul(lk.gelu_and_mul(x), x, "gelu", True)
    check_and_mul(lk.silu_and_mul(x), x, "silu", True)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_and_mul_strided_and_sentinel(device, dtype):
    d = 512
    base = torch.randn(37, 2 * d + 40, device=device, dtype=dtype) * 3
    cases = {
        "row stride > 2d (read in place)": base[:, : 2 * d],
        "misaligned rows (scalar path)": base[:, 1 : 1 + 2 * d],
        "odd d (scalar path)": base[:, : 2 * 333],
        "last-dim stride 2 (copied)": torch.randn(6, 4 * d, device=device, dtype=dtype)[:, ::2],
        "transposed leading dims (copied)": torch.randn(5, 4, 2 * d, device=device, dtype=dtype).transpose(0, 1),
    }
    for name, x in cases.items():
        h = x.shape[-1] // 2
        for af in [True, False]:
            for act, (fn, _, _, _) in GATED.items():
                y = fn(x, af)
                check_and_mul(y, x, act, af, f"{act}: {name}")
                big = torch.full((*x.shape[:-1], h + 9), float("nan"), device=device, dtype=dtype)
                out = big[..., :h]
                fn(x, af, out=out)
                assert not torch.isnan(out).any(), name
                assert torch.isnan(big[..., h:]).all(), name
                check_and_mul(out, x, act, af, f"{act}: {name}, out")


# ---- gated_attention -----------------------------------------------------------------------------


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("heads,head_dim", HEAD_SHAPES)
def test_gated_attention_matches_reference(device, dtype, heads, head_dim):
    for lead in [(1,), (7,), (2, 5)]:
        x = torch.randn(*lead, heads * head_dim, device=device, dtype=dtype) * 3
        g = torch.randn(*lead, heads, device=device, dtype=dtype) * 3
        y = lk.gated_attention(x, g)
        assert y.shape == x.shape and y.dtype == dtype
        assert_close_to(y, ref.gated_attention(x, g), dtype, gated_e32(x, g))
        # the composition of unfused ops: per-column gate by repeating each head's value
        gate = 2 * torch.sigmoid(g.double()).repeat_interleave(head_dim, dim=-1)
        assert_close_to(y, x.double() * gate, dtype, gated_e32(x, g), "unfused")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gated_attention_strided_sentinel_inplace(device, dtype):
    heads, hd = 8, 64
    c = heads * hd
    base = torch.randn(21, c + 16, device=device, dtype=dtype)
    gbase = torch.randn(21, heads * 3, device=device, dtype=dtype)
    cases = {
        "strided rows, strided gate rows": (base[:, :c], gbase[:, :heads]),
        "dense rows, strided gate rows (not the flat kernel)": (base[:, :c].contiguous(), gbase[:, :heads]),
        "dense rows and gate, 77 rows (the flat kernel, a partial last CTA)": (
            torch.randn(77, c, device=device, dtype=dtype), torch.randn(77, heads, device=device, dtype=dtype)),
        "misaligned x (scalar path)": (base[:, 1 : c + 1], gbase[:, 1 : heads + 1]),
        "gate last-dim stride 3 (copied)": (base[:, :c], gbase[:, ::3]),
        "transposed gate leading dims": (
            torch.randn(3, 7, c, device=device, dtype=dtype),
            torch.randn(7, 3, heads, device=device, dtype=dtype).transpose(0, 1),
        ),
        "broadcast gate (stride 0)": (base[:, :c], gbase[0, :heads].expand(21, heads)),
    }
    for name, (x, g) in cases.items():
        want, e32 = ref.gated_attention(x, g), gated_e32(x, g)
        assert_close_to(lk.gated_attention(x, g), want, dtype, e32, name)
        big = torch.full((*x.shape[:-1], c + 5), float("nan"), device=device, dtype=dtype)
        out = big[..., :c]
        lk.gated_attention(x, g, out=out)
        assert not torch.isnan(out).any(), name
        assert torch.isnan(big[..., c:]).all(), name
        assert_close_to(out, want, dtype, e32, name)
    x = torch.randn(9, c, device=device, dtype=dtype)
    g = torch.randn(9, heads, device=device, dtype=dtype)
    want, e32 = ref.gated_attention(x, g), gated_e32(x, g)
    lk.gated_attention(x, g, out=x)
    assert_close_to(x, want, dtype, e32, "in place")


# ---- shared: empty, errors, opcheck, compile -------------------------------------------------------


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_empty(device):
    kw = dict(device=device, dtype=torch.bfloat16)
    for shape in [(0, 16), (3, 0), (0,), (2, 0, 6)]:
        x = torch.empty(shape, **kw)
        for fn, _, _ in ELEMENTWISE.values():
            assert fn(x).shape == x.shape
        half = (*shape[:-1], shape[-1] // 2)
        assert lk.gelu_and_mul(x).shape == half
        assert lk.gelu_and_mul(x, "tanh", False).shape == half
        assert lk.silu_and_mul(x).shape == half
    assert lk.gated_attention(torch.empty(0, 64, **kw), torch.empty(0, 4, **kw)).shape == (0, 64)
    assert lk.gated_attention(torch.empty(3, 0, **kw), torch.empty(3, 0, **kw)).shape == (3, 0)
    assert lk.gated_attention(torch.empty(3, 0, **kw), torch.empty(3, 4, **kw)).shape == (3, 0)


@pytest.mark.isolated
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_bad_input_errors(device):
    kw = dict(device=device, dtype=torch.bfloat16)
    x = torch.randn(4, 64, **kw)
    g = torch.randn(4, 8, **kw)
    bad = [
        ("gelu", lambda: lk.gelu(x.int()), "x must be float32, float16 or bfloat16"),
        ("gelu_tanh", lambda: lk.gelu_tanh(x, out=torch.empty(4, 63, **kw)), "out must have the shape of x"),
        ("silu", lambda: lk.silu(x, out=torch.empty(4, 64, device=device)), "out and x must have the same dtype"),
        ("silu", lambda: lk.silu(torch.tensor(1.0, device=device)), "at least one dimension"),
        ("gelu", lambda: lk.gelu(x, out=torch.empty(64, 4, **kw).t()), "out must have stride 1"),
        ("gelu_and_mul", lambda: lk.gelu_and_mul(x[:, :63]), "x's last dimension must be even"),
        ("gelu_and_mul", lambda: lk.gelu_and_mul(x, "sigmoid"), "approximate must be 'none' or 'tanh'"),
        ("gelu_and_mul", lambda: lk.gelu_and_mul(x, out=torch.empty(4, 64, **kw)),
         "out must have shape x.shape[:-1] + [x.shape[-1] / 2]"),
        ("gelu_and_mul", lambda: lk.gelu_and_mul(x.double()), "x must be float32, float16 or bfloat16"),
        ("silu_and_mul", lambda: lk.silu_and_mul(x[:, :7]), "x's last dimension must be even"),
        ("silu_and_mul", lambda: lk.silu_and_mul(x, out=torch.empty(4, 32, device=device)),
         "out and x must have the same dtype"),
        ("gated_attention", lambda: lk.gated_attention(x, g[:3]), "gate_logits must be [..., heads] with the leading shape of x"),
        ("gated_attention", lambda: lk.gated_attention(x, g[:, :5]), "x's last dimension must be a multiple of the number of heads"),
        ("gated_attention", lambda: lk.gated_attention(x, g.float()), "gate_logits and x must have the same dtype"),
        ("gated_attention", lambda: lk.gated_attention(x, g.view(4, 2, 4)), "gate_logits must be [..., heads]"),
        ("gated_attention", lambda: lk.gated_attention(x, g, out=torch.empty(4, 65, **kw)), "out must have the shape of x"),
        ("gated_attention", lambda: lk.gated_attention(x.half(), g.half(), out=torch.empty(4, 64, **kw)),
         "out and x must have the same dtype"),
    ]
    big = torch.randn(5 * 64, **kw)
    bad.append(("gelu", lambda: lk.gelu(big[:256].view(4, 64), out=big[32:288].view(4, 64)), "partially overlaps"))
    bad.append(("silu_and_mul", lambda: lk.silu_and_mul(big[:256].view(4, 64), out=big[16:144].view(4, 32)),
                "partially overlaps"))
    if HAS_CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        bad.append(("gated_attention", lambda: lk.gated_attention(x, g.to(other)), "must be on the same device"))
        bad.append(("gelu", lambda: lk.gelu(x, out=torch.empty_like(x, device=other)), "must be on the same device"))
    wide = wide_row(torch.bfloat16, device)
    bad.append(("gelu", lambda: lk.gelu(wide), "rows wider than 2^31-1 elements are not supported"))
    bad.append(("silu_and_mul", lambda: lk.silu_and_mul(wide), "rows wider than 2^31-1 elements are not supported"))
    bad.append(("gated_attention", lambda: lk.gated_attention(wide, torch.empty(1, 128, **kw)),
                "rows wider than 2^31-1 elements are not supported"))
    for op, fn, msg in bad:
        expect_error(op, fn, msg)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(device, dtype):
    x = torch.randn(7, 2 * 111, device=device, dtype=dtype)
    out = torch.empty_like(x)
    half = torch.empty(7, 111, device=device, dtype=dtype)
    for name in ["gelu", "gelu_tanh", "silu"]:
        torch.library.opcheck(getattr(lk.ops, name).default, (out, x))
    for approx in ["none", "tanh"]:
        for af in [True, False]:
            torch.library.opcheck(lk.ops.gelu_and_mul.default, (half, x, approx, af))
    torch.library.opcheck(lk.ops.silu_and_mul.default, (half, x, True))
    torch.library.opcheck(lk.ops.silu_and_mul.default, (half, x, False))
    g = torch.randn(7, 6, device=device, dtype=dtype)
    torch.library.opcheck(lk.ops.gated_attention.default, (out, x, g))


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_compile_fullgraph(device):
    torch._dynamo.reset()
    bf = torch.bfloat16
    x = torch.randn(2, 33, 512, device=device, dtype=bf)
    g = torch.randn(2, 33, 4, device=device, dtype=bf)

    def f(x, g):
        h = lk.gelu_and_mul(x * 2.0, approximate="tanh", act_first=False)  # [2, 33, 256]
        return (lk.gated_attention(h, g) + lk.silu(h), lk.silu_and_mul(x + 1.0, act_first=True),
                lk.gelu(x) + lk.gelu_tanh(x))

    ys = torch.compile(f, fullgraph=True)(x, g)
    # The same chain from the oracles, rounding to bf16 where the kernels write bf16 tensors.
    # Bound (u = 2^-8): a kernel's bf16 output is within u |y| + e32 of its exact value, and the
    # oracle's rounded copy within u |y|; e32 is below 2^-12 |y| here, so a final output a or b
    # is within 3u |a| of the reference's, and a bf16 sum a + b adds u (|a| + |b|): 4u (|a| + |b|).
    # The intermediate h (bf16 on both sides) may differ by 3u |h| as well, which the next op
    # passes on times its derivative: the gate 2 sigmoid(g) <= 2, |silu'| <= 1.1: + 10u |h|.
    u = 2.0**-8
    h = ref.gelu_and_mul(x * 2.0, "tanh", False).to(bf)
    a, b = ref.gated_attention(h, g), ref.silu(h)
    assert_within(ys[0], a.to(bf).double() + b.to(bf).double(),
                  4 * u * (a.abs() + b.abs()) + 10 * u * h.double().abs() + 2.0**-133, "gated + silu")
    s = ref.silu_and_mul(x + 1.0, True)
    assert_within(ys[1], s, 4 * u * s.abs() + 2.0**-133, "silu_and_mul")
    a, b = ref.gelu(x), ref.gelu_tanh(x)
    assert_within(ys[2], a.to(bf).double() + b.to(bf).double(), 4 * u * (a.abs() + b.abs()) + 2.0**-133, "gelu + gelu_tanh")


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_more_than_2_pow_31_elements_cuda():
    """64-bit offsets: the flat kernel (gelu_tanh) and the row kernels (silu_and_mul, gated)."""
    rows, cols = 2**20 + 3, 2048  # 2^31 + 6144 elements, 4.3 GB in bf16
    free, _ = torch.cuda.mem_get_info()
    if free < 3 * rows * cols * 2 + (1 << 30):
        pytest.skip("not enough GPU memory")
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    idx = torch.tensor([0, 1, rows // 2, rows - 2, rows - 1], device="cuda")
    y = lk.gelu_tanh(x)
    check_act(y[idx], x[idx], "gelu_tanh")
    del y
    y = lk.silu_and_mul(x)
    check_and_mul(y[idx], x[idx], "silu", True)
    del y
    g = torch.randn(rows, 16, device="cuda", dtype=torch.bfloat16)
    want, e32 = ref.gated_attention(x[idx], g[idx]), gated_e32(x[idx], g[idx])
    lk.gated_attention(x, g, out=x)  # in place
    assert_close_to(x[idx], want, torch.bfloat16, e32, "in place, > 2^31 elements")
    del x, g
    torch.cuda.empty_cache()
