"""Neighborhood attention (na1d/na2d/na3d) against ltx_kernels.reference.neighborhood_attention,
a float64 oracle that gathers every query's window explicitly from NATTEN's definition, under
the bound of tests/bounds.py (natten_e32) and one rounding to the output dtype. The reference
itself is checked against a dense attention masked with NATTEN's own mask formula (window
centre clamped into the grid), and the border rule against a closed form."""

import re

import pytest
import torch
import torch.nn.functional as F

import ltx_kernels as lk
from ltx_kernels import reference as ref

from bounds import natten_e32
from conftest import ALL_DEVICES, HAS_CUDA, UNIT, assert_close_to, assert_within, expect_error

NUM_TILES = 6  # natten_heuristics.h kNattenNumTiles: query boxes of the portable mma.sync kernel
NUM_SM90_BOXES = 3  # kNattenSm90Boxes: boxes of the sm_90 TMA kernel, forced as NUM_TILES + i
IS_SM90 = HAS_CUDA and torch.cuda.get_device_capability() == (9, 0)



def dtypes_for(device):
    return [torch.float32, torch.float16, torch.bfloat16] if device == "cpu" else [torch.float16, torch.bfloat16]


def qkv(shape, device, dtype, scale=1.0):
    return [(torch.randn(shape, device=device) * scale).to(dtype) for _ in range(3)]


def na(q, k, v, kernel_size, dilation=1, is_causal=False, scale=None, out=None):
    fn = {4: lk.na1d, 5: lk.na2d, 6: lk.na3d}[q.dim()]
    return fn(q, k, v, kernel_size, dilation=dilation, is_causal=is_causal, scale=scale, out=out)


def check(y, q, k, v, kernel_size, dilation=None, is_causal=None, scale=None, device="cpu", what=""):
    """y against the float64 oracle. On CUDA the kernels round P to the input dtype before the
    tensor-core P V product (as flash kernels do): p_unit = that dtype's unit roundoff."""
    nd = q.dim() - 3
    ks = [kernel_size] * nd if isinstance(kernel_size, int) else list(kernel_size)
    want = ref.neighborhood_attention(q, k, v, ks, dilation, is_causal, scale)
    assert y.shape == q.shape and y.dtype == q.dtype
    p_unit = UNIT[q.dtype] if y.device.type == "cuda" else 0.0
    e32 = natten_e32(q, k, v, ks, dilation, is_causal, scale, p_unit)
    assert_close_to(y, want, q.dtype, e32, what or f"{device} {q.dtype}")


def skip_no_cuda(device):
    if device == "cuda" and not HAS_CUDA:
        pytest.skip("needs a CUDA GPU")


# ---------------------------------------------------------------- the oracle itself

def _flex_style_mask(sizes, kernel, dilation, causal):
    """NATTEN's flex mask_mod as a dense [S, S] bool mask (a second formula for the same rule)."""
    coords = torch.stack(torch.meshgrid(*[torch.arange(n) for n in sizes], indexing="ij"), -1).reshape(-1, len(sizes))
    qc, kc = coords[:, None, :], coords[None, :, :]
    mask = torch.ones(coords.shape[0], coords.shape[0], dtype=torch.bool)
    for a, n in enumerate(sizes):
        kd = kernel[a] * dilation[a]
        same = (qc[..., a] % dilation[a]) == (kc[..., a] % dilation[a])
        if causal[a]:
            m = (qc[..., a] - kc[..., a] >= 0) & (qc[..., a] - kc[..., a] < kd) & same
        else:
            # NATTEN's centre clamp, per residue group (group length n_g)
            g = qc[..., a] % dilation[a]
            n_g = (n - g + dilation[a] - 1) // dilation[a]
            centre = (qc[..., a] // dilation[a]).clamp(min=kernel[a] // 2)
            centre = torch.minimum(centre, n_g - 1 - kernel[a] // 2)
            m = ((centre - kc[..., a] // dilation[a]).abs() <= kernel[a] // 2) & same
        mask &= m
    return mask


@pytest.mark.parametrize(
    "sizes,kernel,dilation,causal",
    [
        ((5, 9, 11), (3, 5, 5), (1, 1, 1), (False, False, False)),
        ((3, 7, 7), (3, 7, 7), (1, 1, 1), (False, False, False)),
        ((6, 8, 9), (3, 3, 3), (1, 2, 3), (False, False, False)),
        ((6, 8, 9), (3, 3, 3), (1, 2, 1), (True, False, False)),
        ((13,), (5,), (2,), (True,)),
        ((7, 10), (3, 5), (2, 1), (False, False)),
    ],
)
def test_reference_matches_dense_masked_attention(sizes, kernel, dilation, causal):
    B, heads, d = 2, 2, 16
    shape = (B, *sizes, heads, d)
    q, k, v = qkv(shape, "cpu", torch.float64)
    got = ref.neighborhood_attention(q, k, v, kernel, list(dilation), list(causal))
    S = q[0, ..., 0, 0].numel()
    mask = _flex_style_mask(sizes, kernel, dilation, causal)
    assert mask.sum(-1).min() >= 1
    if not any(causal):
        assert (mask.sum(-1) == torch.tensor(kernel).prod()).all()  # full windows everywhere
    qs, ks_, vs = (t.reshape(B, S, heads, d).transpose(1, 2) for t in (q, k, v))
    want = F.scaled_dot_product_attention(qs, ks_, vs, attn_mask=mask).transpose(1, 2).reshape(shape)
    # both in float64: scores of d = 16 terms and sums of <= S terms of values ~4, any order:
    # far below (S + d) 2^-53 * 64 < 1e-11
    torch.testing.assert_close(got, want, rtol=0, atol=1e-11)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_border_rule_closed_form(device):
    """q = k = 0 gives uniform weights over the window, so with v = the key's position the output
    is the window's mean position: shifted-inward windows (NATTEN) give clamp(i, k//2, n-1-k//2),
    truncated ones would not."""
    skip_no_cuda(device)
    dtype = torch.float32 if device == "cpu" else torch.float16
    T, H, W, kernel = 4, 9, 12, (3, 7, 5)
    B, heads, d = 1, 1, 32
    q = torch.zeros(B, T, H, W, heads, d, device=device, dtype=dtype)
    v = torch.zeros_like(q)
    grid = torch.meshgrid(torch.arange(T), torch.arange(H), torch.arange(W), indexing="ij")
    for a in range(3):
        v[0, ..., 0, a] = grid[a].to(device=device, dtype=dtype)
    y = lk.na3d(q, q, v, kernel)
    # every score is 0, so every weight is exactly 1: the output is the mean of <= 105 integers
    # <= 11 (fp32 sums exact), rounded once to fp16 (<= 2^-11 * 11 < 1e-2); a window placed one
    # position off moves the mean by >= 1 / 7
    for a, (n, kk) in enumerate(zip((T, H, W), kernel)):
        want = grid[a].clamp(kk // 2, n - 1 - kk // 2).float().to(device)
        torch.testing.assert_close(y[0, ..., 0, a].float(), want, rtol=0, atol=1e-2)
    # causal time axis: mean of [max(t - 2, 0), t]
    y = lk.na3d(q, q, v, kernel, is_causal=(True, False, False))
    t = grid[0].float()
    want_t = (torch.clamp(t - 2, min=0) + t) / 2
    torch.testing.assert_close(y[0, ..., 0, 0].float(), want_t.to(device), rtol=0, atol=1e-2)


# ---------------------------------------------------------------- the kernels

CASES_3D = [
    # (B, T, H, W, heads, d), kernel
    ((1, 3, 5, 5, 1, 32), (3, 5, 5)),    # grid exactly the kernel
    ((2, 5, 9, 11, 2, 64), (3, 5, 5)),   # ragged, batch > 1
    ((1, 4, 13, 10, 3, 64), (3, 7, 7)),
    ((1, 3, 7, 7, 2, 64), (3, 7, 7)),    # grid exactly the kernel
    ((2, 2, 6, 19, 1, 32), (1, 3, 3)),
    ((1, 6, 7, 9, 2, 128), (5, 5, 5)),
]


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("shape,kernel", CASES_3D)
def test_na3d_matches_reference(device, shape, kernel):
    skip_no_cuda(device)
    for dtype in dtypes_for(device):
        q, k, v = qkv(shape, device, dtype)
        check(lk.na3d(q, k, v, kernel), q, k, v, kernel, device=device)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_na1d_na2d(device):
    skip_no_cuda(device)
    for dtype in dtypes_for(device):
        q, k, v = qkv((2, 37, 3, 32), device, dtype)
        check(lk.na1d(q, k, v, 7), q, k, v, 7, device=device)
        q, k, v = qkv((1, 11, 14, 2, 64), device, dtype)
        check(lk.na2d(q, k, v, (5, 7)), q, k, v, (5, 7), device=device)
        check(lk.na2d(q, k, v, 3, scale=0.3), q, k, v, (3, 3), scale=0.3, device=device)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_causal(device):
    skip_no_cuda(device)
    for dtype in dtypes_for(device):
        q, k, v = qkv((1, 5, 8, 9, 2, 64), device, dtype)
        for causal in [(True, False, False), (True, True, False), (False, False, True)]:
            y = lk.na3d(q, k, v, (3, 5, 5), is_causal=causal)
            check(y, q, k, v, (3, 5, 5), is_causal=list(causal), device=device)
        q, k, v = qkv((2, 20, 1, 32), device, dtype)
        check(lk.na1d(q, k, v, 5, is_causal=True), q, k, v, 5, is_causal=[True], device=device)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_dilation(device):
    skip_no_cuda(device)
    for dtype in dtypes_for(device):
        q, k, v = qkv((1, 6, 11, 13, 2, 32), device, dtype)
        for dil, causal in [((1, 2, 3), (False,) * 3), ((2, 1, 2), (True, False, False))]:
            y = lk.na3d(q, k, v, (3, 3, 3), dilation=dil, is_causal=causal)
            check(y, q, k, v, (3, 3, 3), list(dil), list(causal), device=device)
        q, k, v = qkv((1, 23, 2, 32), device, dtype)
        check(lk.na1d(q, k, v, 5, dilation=4), q, k, v, 5, [4], device=device)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_strided_inputs_and_out(device):
    skip_no_cuda(device)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    B, T, H, W, heads, d = 1, 3, 9, 10, 2, 64
    fused = torch.randn(B, T, H, W, heads, 3 * d, device=device).to(dtype)  # q | k | v per head
    q, k, v = fused[..., :d], fused[..., d : 2 * d], fused[..., 2 * d :]
    check(lk.na3d(q, k, v, (3, 5, 5)), q, k, v, (3, 5, 5), device=device)
    # permuted storage ([B, heads, T, H, W, d] viewed as [B, T, H, W, heads, d]); misaligned start
    qp = torch.randn(B, heads, T, H, W, d, device=device).to(dtype).permute(0, 2, 3, 4, 1, 5)
    flat = torch.randn(B * T * H * W * heads * d + 1, device=device).to(dtype)
    km = flat[1:].view(B, T, H, W, heads, d)
    vt = torch.randn(B, T, H, W, heads, 2 * d, device=device).to(dtype)[..., ::2]  # last stride 2
    check(lk.na3d(qp, km, vt, (3, 5, 5)), qp, km, vt, (3, 5, 5), device=device)
    # sentinel-filled strided out: every element written, the gaps untouched
    big = torch.full((B, T, H, W, heads, d + 8), float("nan"), device=device, dtype=dtype)
    out = big[..., :d]
    y = lk.na3d(q, k, v, (3, 5, 5), out=out)
    assert y.data_ptr() == out.data_ptr()
    assert not torch.isnan(out).any() and torch.isnan(big[..., d:]).all()
    check(out, q, k, v, (3, 5, 5), device=device)


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@pytest.mark.parametrize("tile", range(NUM_TILES + NUM_SM90_BOXES))
@pytest.mark.parametrize("d", [32, 64, 128])
def test_cuda_every_tile(tile, d, dev_settings):
    """Each query-box configuration the dispatcher can pick, forced through LTX_KERNELS_NATTEN_TILE, on
    3-D, 2-D and 1-D grids with partial boxes, borders and causal/dilated axes. Tiles >= NUM_TILES
    are the sm_90 TMA kernel (head dim 64; forcing it elsewhere is an error, tested below)."""
    if tile >= NUM_TILES and not (IS_SM90 and d == 64):
        pytest.skip("the sm_90 kernel takes head dim 64 on an sm_90 GPU")
    dev_settings.setenv("LTX_KERNELS_NATTEN_TILE", str(tile))
    dtype = torch.bfloat16 if d != 64 else torch.float16
    cases = [
        ((2, 5, 13, 17, 2, d), dict(kernel_size=(3, 7, 7))),
        ((1, 9, 6, 70, 1, d), dict(kernel_size=(5, 5, 5))),
        ((1, 3, 7, 7, 3, d), dict(kernel_size=(3, 7, 7))),
        ((1, 6, 9, 12, 2, d), dict(kernel_size=(3, 5, 5), is_causal=(True, False, False))),
        ((1, 6, 11, 12, 1, d), dict(kernel_size=(3, 3, 3), dilation=(2, 2, 1))),
        ((2, 19, 33, 2, d), dict(kernel_size=(3, 9))),
        ((2, 150, 3, d), dict(kernel_size=(13,))),
    ]
    for shape, kw in cases:
        q, k, v = qkv(shape, "cuda", dtype)
        y = na(q, k, v, **kw)
        nd = q.dim() - 3
        dil = list(kw.get("dilation", [1] * nd))
        causal = list(kw.get("is_causal", [False] * nd))
        check(y, q, k, v, kw["kernel_size"], dil, causal, device="cuda")


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@pytest.mark.parametrize("kernel", [(3, 7, 7), (3, 5, 5)])
def test_cuda_ltx2_stage_shape(kernel):
    """A slice of an LTX-2 decoder stage (d = 64), against the oracle and the CPU backend."""
    q, k, v = qkv((1, 4, 32, 48, 4, 64), "cuda", torch.bfloat16)
    y = lk.na3d(q, k, v, kernel)
    check(y, q, k, v, kernel, device="cuda")
    y_cpu = lk.na3d(q.cpu(), k.cpu(), v.cpu(), kernel)
    check(y_cpu, q.cpu(), k.cpu(), v.cpu(), kernel, device="cpu")


@pytest.mark.skipif(not IS_SM90, reason="needs an sm_90 GPU")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_sm90_kernel(dtype, dev_settings):
    """The sm_90 TMA kernel (forced, and as the automatic choice for head dim 64 and w windows
    <= 9) on windows that take both staged row widths (16: w window <= 9; 32: <= 25), batch 2,
    heads > 1, grids just at the window and ragged ones, a causal time axis, a large scale
    (softmax far from uniform), and permuted storage (head-major, a stride order that TMA may or
    may not accept: whichever kernel takes it must be right). Each against the oracle, and the
    sm_90 kernel against the portable one."""
    cases = [
        ((2, 5, 13, 17, 3, 64), (3, 7, 7), {}),
        ((1, 3, 7, 7, 2, 64), (3, 7, 7), {}),
        ((1, 7, 9, 30, 2, 64), (5, 5, 5), dict(is_causal=(True, False, False))),
        ((1, 11, 12, 23, 1, 64), (11, 11, 11), {}),
        ((1, 4, 18, 9, 2, 64), (1, 3, 9), dict(scale=0.6)),
        ((2, 1, 40, 33, 2, 64), (1, 9, 21), {}),
    ]
    for shape, kernel, kw in cases:
        q, k, v = qkv(shape, "cuda", dtype)
        y = lk.na3d(q, k, v, kernel, **kw)  # automatic choice (the portable kernel for w windows > 9)
        check(y, q, k, v, kernel, None, kw.get("is_causal"), kw.get("scale"), device="cuda")
        dev_settings.setenv("LTX_KERNELS_NATTEN_TILE", str(NUM_TILES))  # the sm_90 kernel, box 0
        y_sm90 = lk.na3d(q, k, v, kernel, **kw)
        dev_settings.delenv("LTX_KERNELS_NATTEN_TILE")
        check(y_sm90, q, k, v, kernel, None, kw.get("is_causal"), kw.get("scale"), device="cuda")
        dev_settings.setenv("LTX_KERNELS_NATTEN_SM90", "0")
        y_portable = lk.na3d(q, k, v, kernel, **kw)
        dev_settings.delenv("LTX_KERNELS_NATTEN_SM90")
        check(y_portable, q, k, v, kernel, None, kw.get("is_causal"), kw.get("scale"), device="cuda", what="portable")
    B, T, H, W, heads, d = 1, 4, 10, 12, 3, 64
    qp, kp, vp = (torch.randn(B, heads, T, H, W, d, device="cuda").to(dtype).permute(0, 2, 3, 4, 1, 5)
                  for _ in range(3))
    check(lk.na3d(qp, kp, vp, (3, 5, 5)), qp, kp, vp, (3, 5, 5), device="cuda")


@pytest.mark.skipif(not IS_SM90, reason="needs an sm_90 GPU")
def test_cuda_sm90_forced_outside_envelope(dev_settings):
    """Forcing the sm_90 kernel on a problem it does not take is a clear error, not a fallback."""
    dev_settings.setenv("LTX_KERNELS_NATTEN_TILE", str(NUM_TILES))
    q, k, v = qkv((1, 3, 8, 8, 1, 32), "cuda", torch.bfloat16)
    with pytest.raises(RuntimeError, match="forces the sm_90 kernel"):
        lk.na3d(q, k, v, (3, 5, 5))
    q, k, v = qkv((1, 1, 4, 40, 1, 64), "cuda", torch.bfloat16)  # w window 27 > 25
    with pytest.raises(RuntimeError, match="forces the sm_90 kernel"):
        lk.na3d(q, k, v, (1, 3, 27))
    q, k, v = qkv((1, 3, 8, 8, 1, 64), "cuda", torch.bfloat16)  # it tracks maxima of raw scores
    with pytest.raises(RuntimeError, match="forces the sm_90 kernel"):
        lk.na3d(q, k, v, (3, 5, 5), scale=-0.125)
    dev_settings.delenv("LTX_KERNELS_NATTEN_TILE")
    check(lk.na3d(q, k, v, (3, 5, 5), scale=-0.125), q, k, v, (3, 5, 5), scale=-0.125, device="cuda")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_empty(device):
    skip_no_cuda(device)
    dtype = torch.bfloat16
    for shape in [(0, 3, 5, 5, 2, 32), (1, 3, 5, 5, 0, 32)]:
        q = torch.empty(shape, device=device, dtype=dtype)
        assert lk.na3d(q, q, q, (3, 5, 5)).shape == q.shape
    q = torch.empty(2, 0, 4, 32, device=device, dtype=dtype)
    assert lk.na1d(q, q, q, 3).shape == q.shape


def _re(s):
    return re.escape(s)


@pytest.mark.isolated
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_bad_input_errors(device):
    skip_no_cuda(device)
    q, k, v = qkv((1, 3, 7, 7, 2, 32), device, torch.bfloat16)
    bad = [
        (lambda: lk.na3d(q.int(), k, v, 3), "q must be float32, float16 or bfloat16"),
        (lambda: lk.na3d(q, k[:, :2], v, 3), "q, k and v must have the same shape"),
        (lambda: lk.na3d(q, k.half(), v, 3), "k and q must have the same dtype"),
        (lambda: lk.na3d(q, k, v, (3, 4, 3)), "kernel_size must be odd"),
        (lambda: lk.na3d(q, k, v, (3, 9, 3)), "every spatial extent must be >= kernel_size * dilation"),
        (lambda: lk.na3d(q, k, v, 3, dilation=(1, 3, 1)), "every spatial extent must be >= kernel_size * dilation"),
        (lambda: lk.na3d(q, k, v, 3, dilation=0), "dilation must be >= 1"),
        (lambda: lk.na3d(q, k, v, 3, out=torch.empty(1, 3, 7, 7, 2, 31, device=device, dtype=q.dtype)),
         "out must have the shape of q"),
        (lambda: lk.na3d(q, k, v, 3, out=k), "out must not overlap q, k or v"),
        (lambda: lk.ops.natten_forward(torch.empty_like(q), q, k, v, [3, 3], [1, 1, 1], [False] * 3, 1.0),
         "one entry per spatial dim"),
        (lambda: lk.ops.natten_forward(q[0, 0, 0], q[0, 0, 0], q[0, 0, 0], q[0, 0, 0], [], [], [], 1.0),
         "q must be [B, L, heads, d]"),
    ]
    if device == "cuda":
        bad.append((lambda: lk.na3d(q.float(), k.float(), v.float(), 3), "the CUDA kernel takes float16 or bfloat16"))
        q48 = torch.randn(1, 3, 7, 7, 2, 48, device=device, dtype=torch.bfloat16)
        bad.append((lambda: lk.na3d(q48, q48, q48, 3), "the CUDA kernel takes head dim 32, 64 or 128"))
    if HAS_CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        bad.append((lambda: lk.na3d(q, k.to(other), v, 3), "must be on the same device"))
    for fn, msg in bad:
        expect_error("natten_forward", fn, msg)
    expect_error("na3d", lambda: lk.na3d(q, k, v, (3, 3)), "")
    expect_error("na2d", lambda: lk.na2d(q, k, v, 3), "q must have 5 dims")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_opcheck(device):
    skip_no_cuda(device)
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    q, k, v = qkv((1, 3, 6, 7, 2, 32), device, dtype)
    out = torch.empty_like(q)
    torch.library.opcheck(lk.ops.natten_forward.default, (out, q, k, v, [3, 5, 5], [1, 1, 1], [False] * 3, 0.2))
    q, k, v = qkv((2, 12, 1, 32), device, dtype)
    torch.library.opcheck(lk.ops.natten_forward.default, (torch.empty_like(q), q, k, v, [3], [2], [True], 0.2))


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_compile_fullgraph(device):
    skip_no_cuda(device)
    torch._dynamo.reset()
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    q, k, v = qkv((1, 3, 6, 7, 2, 32), device, dtype)

    def f(q, k, v):
        return lk.na3d(q * 2.0, k, v, (3, 5, 5)) + 1.0

    y = torch.compile(f, fullgraph=True)(q, k, v)
    # the kernel's output o (within its bound), then + 1.0 rounded once more to the dtype
    o = ref.neighborhood_attention(q * 2.0, k, v, [3, 5, 5])
    ut = UNIT[dtype]
    e = natten_e32(q * 2.0, k, v, [3, 5, 5], p_unit=ut if device == "cuda" else 0.0)
    assert_within(y, o + 1.0, (ut * o.abs() + (1 + ut) * e) * (1 + ut) + ut * (o + 1.0).abs() + 2.0**-133)


# ---------------------------------------------------------------- diffusers processor

def _diffusers_decoder_module():
    """diffusers' LTX-2 diffusion decoder module; skips only where diffusers (an optional test
    dependency) or that module is not installed. Its FlexAttention path, the reference below, runs
    on the CPU and on CUDA (eagerly, unfused): an error there fails the test."""
    try:
        from diffusers.models.autoencoders import ltx2_diffusion_decoder as m
    except ImportError as e:
        pytest.skip(f"diffusers' LTX-2 diffusion decoder not importable: {e}")
    return m


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("kernel,head_dim", [((3, 5, 5), 32), ((3, 7, 7), 64), ((1, 3, 3), 16)])
def test_diffusers_processor_matches_module(device, kernel, head_dim):
    """Our processor (fused norm + scale + RoPE pre-pass, na3d) against the module's own default
    (FlexAttention) output, fp32 on CPU and bf16 on CUDA."""
    skip_no_cuda(device)
    if device == "cuda" and head_dim not in (32, 64, 128):
        pytest.skip("the CUDA kernel takes head dim 32, 64 or 128")
    m = _diffusers_decoder_module()
    from ltx_kernels.integrations.diffusers.vae import LtxKernelsNeighborhoodAttnProcessor

    torch.manual_seed(0)
    # the CUDA kernel takes fp16/bf16: bf16 there (both sides), fp32 on the CPU backend
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    attn = m.LTX2VideoVaeNeighborhoodAttention(2 * head_dim, kernel, head_dim=head_dim).to(device, dtype)
    with torch.no_grad():
        for norm in (attn.norm_q, attn.norm_k):
            norm.weight.uniform_(0.5, 1.5)
    x = torch.randn(2, max(3, kernel[0]), 9, 8, 2 * head_dim, device=device, dtype=dtype)
    with torch.no_grad():
        want = attn(x, attn.build_block_mask(x))
        attn.set_processor(LtxKernelsNeighborhoodAttnProcessor())
        assert attn.build_block_mask(x) is None  # no flex mask is built for our processor
        got = attn(x)
    tol = 3e-2 if dtype == torch.bfloat16 else 1e-4  # bf16: a few output roundings apart
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


def test_diffusers_decoder_end_to_end_cpu():
    """A tiny LTX-2 diffusion decoder, every neighborhood-attention module switched to ours."""
    m = _diffusers_decoder_module()
    from ltx_kernels.integrations.diffusers.vae import apply_to

    torch.manual_seed(0)
    cfg = dict(
        in_channels=8, out_channels=3, patch_size=2, head_dim=16, stage_channels=(32, 16, 16, 16, 16),
        stage_depths=(1, 1, 1, 1, 1), upsample_channel_reductions=(2, 1, 1, 1),
        stage_kernels=((1, 3, 3),) * 4, stage5_kernel=(1, 3, 3), t_emb_dim=32,
    )
    dec = m.LTX2VideoDiffusionDecoder3d(**cfg).eval()
    latent = torch.randn(1, 8, 1, 3, 3)  # grids 1x3x3 .. 1x24x24 (flex on CPU is slow)
    with torch.no_grad():
        torch.manual_seed(1)
        want = dec(latent)
        assert apply_to(dec) >= 5
        torch.manual_seed(1)
        got = dec(latent)
    want = getattr(want, "sample", want)
    got = getattr(got, "sample", got)
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)
