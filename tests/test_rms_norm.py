"""rms_norm against the float64 oracle in ltx_kernels.reference (written from the math), under
the bound derived below."""

import pytest
import torch
import torch.nn.functional as F

import ltx_kernels as lk
from ltx_kernels import reference as ref

from bounds import norm_rel
from conftest import ALL_DEVICES, DTYPES, HAS_CUDA, U32, assert_close_to, assert_within, expect_error, wide_row

ROWS = [1, 7, 83, 4096]
WIDTHS = [8, 111, 769, 2048, 5125, 16384]


def check(y, x, w, eps):
    rows = 256  # the float64 oracle a block of rows at a time (4096 x 16384 would take GBs)
    x2, y2 = x.reshape(-1, x.shape[-1]), y.reshape(-1, x.shape[-1])
    for r in range(0, max(x2.shape[0], 1), rows):
        want = ref.rms_norm(x2[r:r + rows], w, eps)
        assert_close_to(y2[r:r + rows], want, x.dtype, norm_rel(x.shape[-1]) * want.abs(), f"rows {r}+")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows", ROWS)
@pytest.mark.parametrize("cols", WIDTHS)
def test_matches_reference(device, dtype, rows, cols):
    if device == "cpu" and rows * cols > 1 << 23:
        # the CPU backend runs the same per-row loop at 83 rows; its 4096-row cases of the widest
        # rows cost a minute of the CPU suite and test nothing more
        pytest.skip("4096 rows x >= 5125 columns: CUDA only")
    x = torch.randn(rows, cols, device=device, dtype=dtype) * 3 + 0.5
    w = torch.randn(cols, device=device, dtype=dtype)
    y = lk.rms_norm(x, w, eps=1e-6)
    assert y.shape == x.shape and y.dtype == dtype
    check(y, x, w, 1e-6)
    check(lk.rms_norm(x, None, eps=1e-5), x, None, 1e-5)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_leading_shapes_and_alias(device, dtype):
    x = torch.randn(2, 3, 5, 64, device=device, dtype=dtype)
    w = torch.randn(64, device=device, dtype=dtype)
    check(lk.rms_norm(x, w), x, w, 1e-6)
    check(lk.rmsnorm(x[0, 1, 2], w), x[0, 1, 2], w, 1e-6)  # 1-D input, the seed's alias


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_strided_inputs(device, dtype):
    base = torch.randn(37, 2 * 1024 + 24, device=device, dtype=dtype)
    w = torch.randn(1024, device=device, dtype=dtype)
    cases = {
        "row stride > cols (read in place)": base[:, :1024],
        "last-dim stride 2 (copied)": base[:, : 2 * 1024 : 2],
        "transposed leading dims (copied)": torch.randn(5, 4, 1024, device=device, dtype=dtype).transpose(0, 1),
        "misaligned start (scalar path)": base.view(-1)[1 : 1 + 37 * 1024].view(37, 1024),
        "broadcast rows (stride 0)": w.expand(9, 1024),
    }
    for name, x in cases.items():
        y = lk.rms_norm(x, w)
        assert y.is_contiguous(), name
        check(y, x, w, 1e-6)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_out_sentinel_strided_and_inplace(device, dtype):
    rows, cols = 83, 769
    x = torch.randn(rows, cols, device=device, dtype=dtype)
    w = torch.randn(cols, device=device, dtype=dtype)
    # sentinel-filled out with a row stride: every element written, the gaps untouched
    big = torch.full((rows, cols + 7), float("nan"), device=device, dtype=dtype)
    out = big[:, :cols]
    y = lk.rms_norm(x, w, out=out)
    assert y.data_ptr() == out.data_ptr()
    assert not torch.isnan(out).any()
    assert torch.isnan(big[:, cols:]).all()
    check(out, x, w, 1e-6)
    # in place
    x2 = x.clone()
    lk.rms_norm(x2, w, out=x2)
    check(x2, x, w, 1e-6)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_empty(device):
    for shape in [(0, 16), (3, 0), (0,), (2, 0, 5)]:
        x = torch.empty(shape, device=device, dtype=torch.bfloat16)
        w = torch.ones(shape[-1], device=device, dtype=torch.bfloat16)
        y = lk.rms_norm(x, w)
        assert y.shape == x.shape


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("cols", WIDTHS)
def test_every_element_enters_the_sum(device, cols):
    """The bound above grows with C; this test does not depend on it. Row r is 1 everywhere but
    at one position p_r (ends, vector and warp boundaries, the middle), which holds sqrt(C): the
    mean of squares is 2 - 1/C, so a kernel that skips p_r (or reads it twice) is off by ~40%
    (~20%) at every element of the row."""
    c = cols
    pos = sorted({p for p in [0, 1, 7, 8, 31, 32, 63, 64, 255, 256, c // 2, c - 9, c - 8, c - 2, c - 1] if 0 <= p < c})
    x = torch.ones(len(pos), c, dtype=torch.float64)
    for r, p in enumerate(pos):
        x[r, p] = c**0.5
    for dtype in (torch.float32, torch.bfloat16):
        xd = x.to(dtype).to(device)
        y = lk.rms_norm(xd, None, eps=0.0)
        want = ref.rms_norm(xd, None, 0.0)
        assert_close_to(y, want, dtype, norm_rel(c) * want.abs(), f"C={c} {dtype}")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_zero_rows_are_finite(device):
    x = torch.zeros(4, 256, device=device, dtype=torch.bfloat16)
    y = lk.rms_norm(x)
    assert torch.equal(y, torch.zeros_like(y))


@pytest.mark.isolated
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_bad_input_errors(device):
    x = torch.randn(4, 64, device=device, dtype=torch.bfloat16)
    w = torch.randn(64, device=device, dtype=torch.bfloat16)
    bad = [
        (lambda: lk.rms_norm(x.int()), "x must be float32, float16 or bfloat16"),
        (lambda: lk.rms_norm(x, w[:63]), "weight must be 1-D with x.shape[-1] = 64"),
        (lambda: lk.rms_norm(x, w.float()), "weight and x must have the same dtype"),
        (lambda: lk.rms_norm(x, w.view(8, 8)), "weight must be 1-D"),
        (lambda: lk.rms_norm(x, w, out=torch.empty(4, 63, device=device, dtype=x.dtype)), "out must have the shape of x"),
        (lambda: lk.rms_norm(x, w, out=torch.empty(4, 64, device=device)), "out and x must have the same dtype"),
        (lambda: lk.rms_norm(x, w, out=torch.empty(64, 4, device=device, dtype=x.dtype).t()), "out must have stride 1"),
        (lambda: lk.rms_norm(x, w, eps=-1.0), "eps must be >= 0"),
        (lambda: lk.rms_norm(torch.tensor(1.0, device=device)), "at least one dimension"),
        # a weight of the wrong width (the message formats both shapes)
        (lambda: lk.rms_norm(torch.randn(4, 2048, device=device, dtype=torch.bfloat16),
                             torch.randn(1024, device=device, dtype=torch.bfloat16)),
         "weight must be 1-D with x.shape[-1] = 2048 elements (got shape [1024])"),
        (lambda: lk.rms_norm(x.double()), "x must be float32, float16 or bfloat16"),
        (lambda: lk.rms_norm(wide_row(torch.bfloat16, device)), "rows wider than 2^31-1 elements are not supported"),
    ]
    big = torch.randn(5 * 64, device=device, dtype=torch.bfloat16)
    bad.append((lambda: lk.rms_norm(big[:256].view(4, 64), out=big[32:288].view(4, 64)), "partially overlaps"))
    if HAS_CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        bad.append((lambda: lk.rms_norm(x, w.to(other)), "must be on the same device"))
    for fn, msg in bad:
        expect_error("rms_norm", fn, msg)


def _re(s):
    import re

    return re.escape(s)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_opcheck(device, dtype):
    x = torch.randn(7, 111, device=device, dtype=dtype)
    w = torch.randn(111, device=device, dtype=dtype)
    out = torch.empty_like(x)
    torch.library.opcheck(lk.ops.rms_norm.default, (out, x, w, 1e-6))
    torch.library.opcheck(lk.ops.rms_norm.default, (out, x, None, 1e-5))


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_compile_fullgraph(device):
    torch._dynamo.reset()
    x = torch.randn(2, 33, 256, device=device, dtype=torch.bfloat16)
    w = torch.randn(256, device=device, dtype=torch.bfloat16)

    def f(x, w):
        return lk.rms_norm(x * 2.0, w, eps=1e-6) + 1.0

    y = torch.compile(f, fullgraph=True)(x, w)
    # the kernel's bf16 output n is within u |n| + e32 of the exact value (u = 2^-8), and the
    # compiled + 1.0 rounds again to bf16: u |n + 1|
    n = ref.rms_norm(x * 2.0, w, 1e-6)
    u = 2.0**-8
    assert_within(y, n + 1.0, (u + norm_rel(256)) * n.abs() * (1 + u) + u * (n + 1.0).abs() + 2.0**-133)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_matches_torch_rms_norm(device):
    """A second opinion on the definition (eps inside the root, the mean over the last dim):
    PyTorch's own op in fp32. Its fp32 evaluation obeys the same bound (any summation order), so
    the two are within twice it (plus the two roundings of the fp32 outputs)."""
    x = torch.randn(9, 300, device=device)
    w = torch.randn(300, device=device)
    want = ref.rms_norm(x, w, 1e-6)
    assert_within(lk.rms_norm(x, w, 1e-6), F.rms_norm(x, (300,), w, 1e-6),
                  2 * (norm_rel(300) + U32) * want.abs() + 2.0**-149)


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_more_than_2_pow_31_elements_cuda():
    rows, cols = 2**20 + 3, 2048  # 2^31 + 6144 elements, 4.3 GB in bf16
    free, _ = torch.cuda.mem_get_info()
    if free < 3 * rows * cols * 2:
        pytest.skip("not enough GPU memory")
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    y = lk.rms_norm(x, w)
    idx = torch.tensor([0, 1, rows // 2, rows - 2, rows - 1], device="cuda")
    check(y[idx], x[idx], w, 1e-6)
    del x, y
    torch.cuda.empty_cache()
