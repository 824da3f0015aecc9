"""Activation family (gelu, gelu_tanh, silu, gelu_and_mul, silu_and_mul, gated_attention)
against the fp32 oracles in ltx_kernels.reference (written from the formulas), against the
composition of the unfused reference ops, and against PyTorch's own F.gelu / F.silu."""

import re

import pytest
import torch
import torch.nn.functional as F

import ltx_kernels as lk
from ltx_kernels import reference as ref

from conftest import ALL_DEVICES, DTYPES, HAS_CUDA, TOL

SIZES = [1, 7, 83, 111, 769, 5125, 16384]
LEADING = [(), (3,), (2, 5)]
ELEMENTWISE = {
    "gelu": (lk.gelu, ref.gelu, lambda x: F.gelu(x)),
    "gelu_tanh": (lk.gelu_tanh, ref.gelu_tanh, lambda x: F.gelu(x, approximate="tanh")),
    "silu": (lk.silu, ref.silu, F.silu),
}
# (name, kernel(x, act_first), oracle(x, act_first), unfused reference activation, torch act)
GATED = {
    "gelu": (
        lambda x, af, **kw: lk.gelu_and_mul(x, "none", af, **kw),
        lambda x, af: ref.gelu_and_mul(x, "none", af),
        ref.gelu,
        lambda x: F.gelu(x),
    ),
    "gelu_tanh": (
        lambda x, af, **kw: lk.gelu_and_mul(x, "tanh", af, **kw),
        lambda x, af: ref.gelu_and_mul(x, "tanh", af),
        ref.gelu_tanh,
        lambda x: F.gelu(x, approximate="tanh"),
    ),
    "silu": (
        lambda x, af, **kw: lk.silu_and_mul(x, af, **kw),
        lambda x, af: ref.silu_and_mul(x, af),
        ref.silu,
        F.silu,
    ),
}
# (heads, head_dim): widths 1, 7, 83, 111, 769, 2048, 5125, 16384
HEAD_SHAPES = [(1, 1), (7, 1), (1, 83), (3, 37), (1, 769), (32, 64), (5, 1025), (128, 128)]


def close(y, want, dtype, atol_floor=0.0):
    tol = dict(TOL[dtype])
    tol["atol"] = max(tol["atol"], atol_floor)
    torch.testing.assert_close(y.float(), want.float(), **tol)


def and_mul_atol(x):
    """Absolute error floor of act(a) * b: for a < 0, 1 + erf(a / sqrt(2)) (or 1 + tanh(.))
    cancels, and its one-ulp-of-1 error (2^-23 in fp32, in the kernel and in the oracle alike)
    is scaled by 0.5 |a| |b|: at most 2^-23 max|a b| between the two."""
    d = x.shape[-1] // 2
    if x.numel() == 0:
        return 0.0
    return 2.0**-22 * (x[..., :d].float().abs() * x[..., d:].float().abs()).max().item()


def _re(s):
    return re.escape(s)


# ---- elementwise ---------------------------------------------------------------------------------


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(ELEMENTWISE))
@pytest.mark.parametrize("size", SIZES)
def test_elementwise_matches_reference(device, dtype, name, size):
    fn, oracle, _ = ELEMENTWISE[name]
    for lead in LEADING:
        x = torch.randn(*lead, size, device=device, dtype=dtype) * 3
        y = fn(x)
        assert y.shape == x.shape and y.dtype == dtype and y.device == x.device
        close(y, oracle(x), dtype)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise_matches_torch(device, name):
    """Second opinion: PyTorch's own fused op in fp32, and in bf16 (one rounding each)."""
    fn, _, torch_fn = ELEMENTWISE[name]
    x = torch.randn(13, 1000, device=device) * 4
    torch.testing.assert_close(fn(x), torch_fn(x), rtol=1e-5, atol=1e-6)
    xb = x.bfloat16()
    torch.testing.assert_close(fn(xb).float(), torch_fn(xb).float(), rtol=2.0**-7, atol=1e-5)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_elementwise_special_values(device):
    x = torch.tensor([0.0, -0.0, 1e-30, -100.0, 100.0, -1e4, 1e4, float("inf"), float("-inf")],
                     device=device)
    for name, (fn, oracle, torch_fn) in ELEMENTWISE.items():
        y = fn(x)
        torch.testing.assert_close(y, torch_fn(x), rtol=1e-5, atol=1e-6, equal_nan=True, msg=name)
    assert torch.isnan(lk.gelu(torch.tensor([float("nan")], device=device))).all()


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
        for fn, oracle, _ in ELEMENTWISE.values():
            y = fn(x)
            assert y.is_contiguous(), name
            close(y, oracle(x), dtype)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_out_sentinel_and_inplace(device, dtype):
    rows, cols = 83, 769
    x = torch.randn(rows, cols, device=device, dtype=dtype) * 3
    for name, (fn, oracle, _) in ELEMENTWISE.items():
        big = torch.full((rows, cols + 7), float("nan"), device=device, dtype=dtype)
        out = big[:, :cols]
        y = fn(x, out=out)
        assert y.data_ptr() == out.data_ptr()
        assert not torch.isnan(out).any(), name
        assert torch.isnan(big[:, cols:]).all(), name
        close(out, oracle(x), dtype)
        # dense sentinel out (flat path, tail elements included)
        out2 = torch.full((rows, cols), float("nan"), device=device, dtype=dtype)
        fn(x, out=out2)
        assert not torch.isnan(out2).any(), name
        x2 = x.clone()
        fn(x2, out=x2)
        close(x2, oracle(x), dtype)


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
        atol = and_mul_atol(x)
        close(y, oracle(x, act_first), dtype, atol)
        # fused vs the composition of the unfused reference ops
        a, b = x[..., :d], x[..., d:]
        unfused = act(a) * b.float() if act_first else a.float() * act(b)
        close(y, unfused, dtype, atol)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("name", list(GATED))
def test_and_mul_conventions_vs_torch(device, name):
    """Both conventions against independent formulas written with PyTorch's own activations:
    vLLM's act(x[..., :d]) * x[..., d:] and diffusers GEGLU's value, gate = x.chunk(2, -1)."""
    fn, _, _, torch_act = GATED[name]
    x = torch.randn(4, 9, 2 * 300, device=device) * 3
    d = 300
    vllm = torch_act(x[..., :d]) * x[..., d:]
    value, gate = x.chunk(2, dim=-1)
    diffusers = value * torch_act(gate)
    atol = max(1e-6, and_mul_atol(x))
    torch.testing.assert_close(fn(x, True), vllm, rtol=1e-5, atol=atol)
    torch.testing.assert_close(fn(x, False), diffusers, rtol=1e-5, atol=atol)
    assert not torch.allclose(vllm, diffusers)  # the test can tell the two apart


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_and_mul_defaults(device):
    x = torch.randn(5, 64, device=device, dtype=torch.bfloat16)
    close(lk.gelu_and_mul(x), ref.gelu_and_mul(x, "none", True), torch.bfloat16)
    close(lk.silu_and_mul(x), ref.silu_and_mul(x, True), torch.bfloat16)


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
            for fn, oracle, _, _ in GATED.values():
                y = fn(x, af)
                atol = and_mul_atol(x)
                close(y, oracle(x, af), dtype, atol)
                big = torch.full((*x.shape[:-1], h + 9), float("nan"), device=device, dtype=dtype)
                out = big[..., :h]
                fn(x, af, out=out)
                assert not torch.isnan(out).any(), name
                assert torch.isnan(big[..., h:]).all(), name
                close(out, oracle(x, af), dtype, atol)


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
        close(y, ref.gated_attention(x, g), dtype)
        # the composition of unfused ops: per-column gate by repeating each head's value
        gate = 2 * torch.sigmoid(g.float()).repeat_interleave(head_dim, dim=-1)
        close(y, x.float() * gate, dtype)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gated_attention_strided_sentinel_inplace(device, dtype):
    heads, hd = 8, 64
    c = heads * hd
    base = torch.randn(21, c + 16, device=device, dtype=dtype)
    gbase = torch.randn(21, heads * 3, device=device, dtype=dtype)
    cases = {
        "strided rows, strided gate rows": (base[:, :c], gbase[:, :heads]),
        "misaligned x (scalar path)": (base[:, 1 : c + 1], gbase[:, 1 : heads + 1]),
        "gate last-dim stride 3 (copied)": (base[:, :c], gbase[:, ::3]),
        "transposed gate leading dims": (
            torch.randn(3, 7, c, device=device, dtype=dtype),
            torch.randn(7, 3, heads, device=device, dtype=dtype).transpose(0, 1),
        ),
        "broadcast gate (stride 0)": (base[:, :c], gbase[0, :heads].expand(21, heads)),
    }
    for name, (x, g) in cases.items():
        want = ref.gated_attention(x, g)
        close(lk.gated_attention(x, g), want, dtype)
        big = torch.full((*x.shape[:-1], c + 5), float("nan"), device=device, dtype=dtype)
        out = big[..., :c]
        lk.gated_attention(x, g, out=out)
        assert not torch.isnan(out).any(), name
        assert torch.isnan(big[..., c:]).all(), name
        close(out, want, dtype)
    x = torch.randn(9, c, device=device, dtype=dtype)
    g = torch.randn(9, heads, device=device, dtype=dtype)
    want = ref.gated_attention(x, g)
    lk.gated_attention(x, g, out=x)
    close(x, want, dtype)


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
    for op, fn, msg in bad:
        with pytest.raises(RuntimeError, match=f"ltx_kernels.{op}: .*" + _re(msg)):
            fn()


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
    # the same chain from the oracles, rounding to bf16 where the kernels write bf16 tensors
    h = ref.gelu_and_mul(x * 2.0, "tanh", False).to(bf)
    wants = (ref.gated_attention(h, g).to(bf).float() + ref.silu(h).to(bf).float(),
             ref.silu_and_mul(x + 1.0, True),
             ref.gelu(x).to(bf).float() + ref.gelu_tanh(x).to(bf).float())
    for y, want in zip(ys, wants):
        torch.testing.assert_close(y.float(), want, rtol=2**-6, atol=2**-6)


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
    close(y[idx], ref.gelu_tanh(x[idx]), torch.bfloat16)
    del y
    y = lk.silu_and_mul(x)
    close(y[idx], ref.silu_and_mul(x[idx]), torch.bfloat16, and_mul_atol(x[idx]))
    del y
    g = torch.randn(rows, 16, device="cuda", dtype=torch.bfloat16)
    want = ref.gated_attention(x[idx], g[idx])
    lk.gated_attention(x, g, out=x)  # in place
    close(x[idx], want, torch.bfloat16)
    del x, g
    torch.cuda.empty_cache()
