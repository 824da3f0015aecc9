"""Blockwise-scaled FP8 GEMM (and its FP6-weight variant) against ltx_kernels.reference: a float64
GEMM of the exactly dequantized operands, written from the math (docs/semantics.md, "FP8 block
scaling"). The fused epilogues, the forced tile configurations and bf16_gemm: test_gemm_epilogue.py.

Metrics (DeepGEMM's calc_diff, plus an elementwise bound):
  calc_diff(x, y) = 1 - 2<x, y> / (|x|^2 + |y|^2) = |x - y|^2 / (|x|^2 + |y|^2).
  An exact kernel's only large error is the final rounding to bf16: |x_i - y_i| <= 2^-8 |y_i|
  (half an ulp of an 8-bit significand is at most 2^-8 of the value), so calc_diff <= 2^-16 / 2
  ~ 7.6e-6 in the worst case and ~1.3e-6 on random data (uniform rounding error, rms ~2^-8/sqrt(12)
  relative to the binade; fp16: 2^-11); fp32 accumulation inside and across the 128-K blocks
  adds ~K * 2^-24 relative at worst and much less in practice. The bound 1e-5 still fails a
  kernel that drops one K block (calc_diff ~ 1/G >= 1/128) or mis-scales one row.
  Elementwise: |out - ref| <= 2^-7 |ref| (bf16: two worst-case half ulps) + 2^-16 sum_k |a_k b_k|
  (fp32 accumulation of up to 256 terms in the worst case); fp16: 2^-10 |ref| + the same.
CUDA cases run each backend ("auto", "skinny", "sm90", "sm89", "sm90_cutlass", "cublaslt", "torch"); a forced backend
that cannot run on this device or build is skipped with the reason the op gives.
"""


import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

from conftest import HAS_CUDA, device_backends, expect_error, has_cuda_kernel, skip_cuda_without

CUDA = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
DEV_BACKENDS = device_backends("auto", "skinny", "sm90", "sm89", "sm90_cutlass", "cublaslt", "torch")
KERNELS = ("skinny", "sm90", "sm89", "sm90_cutlass", "cublaslt")
ALL_DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]
CALC_DIFF_MAX = 1e-5
REL = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}


def calc_diff(x, y):
    x, y = x.double(), y.double()
    den = (x * x).sum() + (y * y).sum()
    if den == 0:
        return 0.0
    return float(1 - 2 * (x * y).sum() / den)


def _abs_e4m3(q):
    return (q.view(torch.uint8) & 0x7F).view(torch.float8_e4m3fn)


def check(out, a, sa, b, sb, bias=None, what="", backend="auto"):
    """calc_diff and the elementwise bound (module docstring) against the float64 reference."""
    want = ref.fp8_blockwise_gemm(a, sa, b, sb, bias).to(out.device)
    got = out.double()
    d = calc_diff(got, want)
    assert d <= CALC_DIFF_MAX, f"{what}: calc_diff {d:.3g}"
    # sum_k |a_k b_k| of the dequantized operands: the scale of the accumulation error
    absdot = ref.fp8_blockwise_gemm(_abs_e4m3(a), sa.abs(), _abs_e4m3(b), sb.abs()).to(out.device)
    # Hopper's FP8 wgmma accumulates inside a 128-wide K block with fewer than fp32's bits
    # (about 14, DeepSeek-V3 section 3.3.2: why the recipe promotes to fp32 every 128 K); measured
    # on an H200, errors reach ~2^-13 |a||b| on the wgmma kernels (calc_diff still <= 1e-5), so their
    # accumulation term is 2^-12; the mma.sync kernel, the fallback and the CPU keep 2^-16.
    # The few-token kernel runs wgmma too on compute capability 9.0 (unless LTX_KERNELS_SKINNY_WGMMA=0),
    # and so does cuBLASLt's blockwise GEMM there (the same FP8 tensor cores, promoted per 128 K).
    used = lk.fp8_gemm_backend(a, b, sa, sb, bias, out_dtype=out.dtype, backend=backend) if out.is_cuda else backend
    wgmma = used in ("sm90", "sm90_cutlass", "cublaslt") or (used == "skinny" and torch.cuda.get_device_capability(out.device) == (9, 0)
                                and lk.developer_setting("LTX_KERNELS_SKINNY_WGMMA") != "0")
    # The "torch" backend hands the fp32 dequantized operands to torch's matmul, whose summation
    # order is the BLAS's (any order: K u); our kernels add within 128-K blocks then across blocks
    # (<= 128 + K / 128 <= 256 terms for K <= 16384: 2^-16).
    k = a.shape[-1]
    acc = 2.0**-12 if wgmma else (k + 4) * 2.0**-24 if used == "torch" else 2.0**-16
    tol = REL[out.dtype] * want.abs() + acc * absdot
    bad = (got - want).abs() > tol
    assert not bad.any(), (f"{what}: {int(bad.sum())} elements out of bound, e.g. got "
                           f"{got[bad][:4].tolist()} want {want[bad][:4].tolist()}; worst |err| / sum|ab| "
                           f"{float(((got - want).abs() / absdot.clamp_min(1e-30)).max()):.3g}")


def quantized(m, k, n, device, layout="row", leading=None, seed_scale=True):
    """Activations with a per-row magnitude spread and a weight; returns (a, sa, b, sb, x, w)."""
    shape = (m, k) if leading is None else (*leading, k)
    x = torch.randn(shape, device=device)
    if seed_scale:
        x = x * torch.exp2(torch.randint(-4, 5, shape[:-1] + (1,), device=device).float())
    w = torch.randn(n, k, device=device) * 0.05
    a, sa = lk.quantize_fp8_per_token_group(x.to(torch.bfloat16), 128, layout)
    b, sb = lk.quantize_fp8_block(w.to(torch.bfloat16))
    return a, sa, b, sb


def skip_unless_runs(a, b, sa, sb, backend, bias=None, out_dtype=torch.bfloat16):
    """Skip a forced backend that cannot take this call here, with the op's own reason."""
    if a.device.type == "cuda" and not has_cuda_kernel("fp8_blockwise_gemm"):
        pytest.skip("fp8_blockwise_gemm: no CUDA kernel registered in this build")
    if backend in KERNELS:
        try:
            lk.fp8_gemm_backend(a, b, sa, sb, bias, out_dtype=out_dtype, backend=backend)
        except RuntimeError as e:
            if "cannot run this call" in str(e):
                pytest.skip(str(e)[:300])
            raise


M_ALL = [1, 7, 64, 127, 128, 129, 1000, 5376]
NK_ALL = [(8, 128), (24, 384), (136, 256), (1000, 128), (256, 512), (2048, 2048), (8192, 2048), (2048, 8192)]
CPU_NK = {(8, 128), (24, 384), (136, 256), (1000, 128), (256, 512)}


@pytest.mark.parametrize("device,backend", DEV_BACKENDS)
@pytest.mark.parametrize("m", M_ALL)
@pytest.mark.parametrize("nk", NK_ALL, ids=lambda t: f"{t[0]}x{t[1]}")
def test_fp8_gemm_shapes(device, backend, m, nk):
    n, k = nk
    if device == "cpu" and (m == 5376 or nk not in CPU_NK or (m == 1000 and n * k > 1000 * 128)):
        pytest.skip("CUDA only (too slow for the CPU backend in CI)")
    layout = "mn_major" if m % 2 else "row"
    a, sa, b, sb = quantized(m, k, n, device, layout)
    skip_unless_runs(a, b, sa, sb, backend)
    out = lk.fp8_blockwise_gemm(a, sa, b, sb, backend=backend)
    assert out.shape == (m, n) and out.dtype == torch.bfloat16
    check(out, a, sa, b, sb, what=f"{device}/{backend} {m}x{n}x{k} {layout}", backend=backend)


@pytest.mark.parametrize("device,backend", DEV_BACKENDS)
@pytest.mark.parametrize("layout", ["row", "mn_major"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("with_bias", [False, "fp32", "out_dtype"])
def test_fp8_gemm_bias_layout_dtype_leading_dims(device, backend, layout, out_dtype, with_bias):
    a, sa, b, sb = quantized(None, 384, 136, device, layout, leading=(3, 43))
    bias = torch.randn(136, device=device) if with_bias else None
    if with_bias == "out_dtype":
        bias = bias.to(out_dtype)
    skip_unless_runs(a, b, sa, sb, backend, bias, out_dtype)
    out = lk.fp8_blockwise_gemm(a, sa, b, sb, bias, out_dtype=out_dtype, backend=backend)
    assert out.shape == (3, 43, 136) and out.dtype == out_dtype
    check(out, a, sa, b, sb, bias, what=f"{layout} {out_dtype} bias={with_bias}", backend=backend)


@pytest.mark.parametrize("device,backend", DEV_BACKENDS)
def test_fp8_gemm_zero_blocks_exact(device, backend):
    m, n, k = 77, 256, 512
    x = torch.randn(m, k, device=device)
    x[0] = 0.0  # a whole row: every group scale 0
    x[1:, 128:256] = 0.0  # one K group of every other row
    w = torch.randn(n, k, device=device)
    w[128:] = 0.0  # the second 128-row block of B: scales 0
    a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
    b, sb = lk.quantize_fp8_block(w)
    assert (sa[0] == 0).all() and (sa[1:, 1] == 0).all() and (sb[1] == 0).all()
    bias = torch.randn(n, device=device)
    skip_unless_runs(a, b, sa, sb, backend, bias)
    out = lk.fp8_blockwise_gemm(a, sa, b, sb, bias, backend=backend)
    bias_bf16 = bias.to(torch.bfloat16)
    assert torch.equal(out[0], bias_bf16), "an all-zero row must give exactly the bias"
    assert torch.equal(out[:, 128:], bias_bf16[128:].expand(m, 128)), "zero weight blocks must contribute exactly 0"
    assert torch.isfinite(out.float()).all()
    check(out, a, sa, b, sb, bias, what="zero blocks", backend=backend)
    # a K group whose scale is 0 contributes exactly nothing, whatever its codes: fill the zero
    # group of rows 1.. with arbitrary finite codes (the scale stays 0), same result bit for bit
    a2 = a.clone()
    codes = torch.randint(0, 0x7F, (m - 1, 128), device=device, dtype=torch.uint8)  # 0x7F is NaN
    codes |= torch.randint(0, 2, codes.shape, device=device, dtype=torch.uint8) << 7
    a2.view(torch.uint8)[1:, 128:256] = codes
    assert not torch.equal(a2.view(torch.uint8), a.view(torch.uint8))
    out2 = lk.fp8_blockwise_gemm(a2, sa, b, sb, bias, backend=backend)
    assert torch.equal(out, out2)


@pytest.mark.parametrize("device,backend", DEV_BACKENDS)
def test_fp8_gemm_sentinel_and_strided(device, backend):
    m, n, k = 65, 136, 384
    a, sa, b, sb = quantized(m, k, n, device, "row")
    skip_unless_runs(a, b, sa, sb, backend)
    want = lk.fp8_blockwise_gemm(a, sa, b, sb, backend=backend)
    check(want, a, sa, b, sb, what="plain", backend=backend)
    # sentinel-filled, row-padded out: every element written, the gap untouched
    big = torch.full((m, n + 24), float("nan"), device=device, dtype=torch.bfloat16)
    lk.fp8_blockwise_gemm(a, sa, b, sb, out=big[:, :n], backend=backend)
    assert torch.equal(big[:, :n], want) and torch.isnan(big[:, n:].float()).all()
    # row-padded a and b (16-byte aligned rows: the kernels may take them) and padded scales
    abuf = torch.zeros(m, k + 128, device=device, dtype=torch.uint8)
    abuf[:, :k] = a.view(torch.uint8)
    bbuf = torch.zeros(n, k + 64, device=device, dtype=torch.uint8)
    bbuf[:, :k] = b.view(torch.uint8)
    ap, bp = abuf.view(torch.float8_e4m3fn)[:, :k], bbuf.view(torch.float8_e4m3fn)[:, :k]
    sbbuf = torch.zeros(sb.shape[0], sb.shape[1] + 3, device=device)
    sbbuf[:, : sb.shape[1]] = sb
    out = lk.fp8_blockwise_gemm(ap, sa, bp, sbbuf[:, : sb.shape[1]], backend="auto" if backend in KERNELS else backend)
    assert torch.equal(out, want) or calc_diff(out.double(), want.double()) < 1e-6
    # misaligned a (1-byte offset rows): "auto" must still be right (it falls back if needed)
    flat = torch.zeros(m * k + 1, device=device, dtype=torch.uint8)
    flat[1:] = a.view(torch.uint8).reshape(-1)
    amis = flat[1:].view(m, k).view(torch.float8_e4m3fn)
    out = lk.fp8_blockwise_gemm(amis, sa, b, sb, backend="auto" if backend in KERNELS else backend)
    check(out, a, sa, b, sb, what="misaligned a")
    # a transposed view is copied once (not row-addressable)
    at = a.view(torch.uint8).t().contiguous().t().view(torch.float8_e4m3fn)
    out = lk.fp8_blockwise_gemm(at, sa, b, sb, backend=backend if backend == "torch" else "auto")
    check(out, a, sa, b, sb, what="column-major a")


SKINNY_M = [1, 2, 7, 8, 9, 16, 17, 31, 33, 63, 64]
# N, K: ragged row tiles (N % 64 != 0, N % 16 == 8), one K block, split-K (few row tiles, long K),
# no split (many row tiles), LTX / LLM decode shapes.
SKINNY_NK = [(8, 128), (24, 384), (136, 1024), (1000, 2048), (2048, 2048), (4096, 4096), (16384, 512),
             (4104, 8192)]


@CUDA
@pytest.mark.parametrize("m", SKINNY_M)
@pytest.mark.parametrize("nk", SKINNY_NK, ids=lambda t: f"{t[0]}x{t[1]}")
def test_fp8_gemm_skinny(m, nk):
    """The few-token kernel (M <= 64): every n8-tile count (M_pad 8, 16, 32, 64), ragged N,
    split-K and not, into a NaN-filled row-padded output (every element written, the gap
    untouched), with bias, both scale layouts (odd M: M-major, even: row-major)."""
    n, k = nk
    layout = "mn_major" if m % 2 else "row"
    a, sa, b, sb = quantized(m, k, n, "cuda", layout)
    bias = torch.randn(n, device="cuda") if m % 3 else None
    skip_unless_runs(a, b, sa, sb, "skinny", bias)
    # auto: the few-token kernel for M <= 32; above, the sm90 kernel where its tiles fill the GPU
    picked = lk.fp8_gemm_backend(a, b, sa, sb, bias)
    assert picked == "skinny" if m <= 32 else picked in ("skinny", "sm90"), picked
    big = torch.full((m, n + 40), float("nan"), device="cuda", dtype=torch.bfloat16)
    lk.fp8_blockwise_gemm(a, sa, b, sb, bias, out=big[:, :n], backend="skinny")
    assert torch.isnan(big[:, n:].float()).all(), "wrote past N"
    check(big[:, :n], a, sa, b, sb, bias, what=f"skinny {m}x{n}x{k} {layout}")
    # deterministic: the split-K partials are summed in split order
    again = lk.fp8_blockwise_gemm(a, sa, b, sb, bias, backend="skinny")
    assert torch.equal(again, big[:, :n])


@CUDA
def test_fp8_gemm_skinny_fp16_zero_blocks_strided():
    m, n, k = 33, 264, 1024
    x = torch.randn(m, k, device="cuda")
    x[0] = 0.0
    x[1:, 256:384] = 0.0
    w = torch.randn(n, k, device="cuda")
    w[128:256] = 0.0
    a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
    b, sb = lk.quantize_fp8_block(w)
    bias = torch.randn(n, device="cuda")
    skip_unless_runs(a, b, sa, sb, "skinny", bias, torch.float16)
    out = lk.fp8_blockwise_gemm(a, sa, b, sb, bias, out_dtype=torch.float16, backend="skinny")
    assert torch.equal(out[0], bias.half()), "an all-zero row must give exactly the bias"
    assert torch.equal(out[:, 128:256], bias.half()[128:256].expand(m, 128))
    check(out, a, sa, b, sb, bias, what="skinny fp16 zero blocks")
    # padded rows of a and b, strided (non-contiguous) scales
    abuf = torch.zeros(m, k + 32, device="cuda", dtype=torch.uint8)
    abuf[:, :k] = a.view(torch.uint8)
    bbuf = torch.zeros(n, k + 16, device="cuda", dtype=torch.uint8)
    bbuf[:, :k] = b.view(torch.uint8)
    sbbuf = torch.zeros(sb.shape[0], sb.shape[1] + 5, device="cuda")
    sbbuf[:, : sb.shape[1]] = sb
    out2 = lk.fp8_blockwise_gemm(abuf.view(torch.float8_e4m3fn)[:, :k], sa, bbuf.view(torch.float8_e4m3fn)[:, :k],
                                 sbbuf[:, : sb.shape[1]], bias, out_dtype=torch.float16, backend="skinny")
    assert torch.equal(out2, out)


@CUDA
def test_fp8_gemm_skinny_refuses_large_m():
    a, sa, b, sb = quantized(65, 256, 64, "cuda")
    if not has_cuda_kernel("fp8_blockwise_gemm"):
        pytest.skip("no CUDA kernel")
    with pytest.raises(RuntimeError, match="backend 'skinny' cannot run this call"):
        lk.fp8_blockwise_gemm(a, sa, b, sb, backend="skinny")
    assert lk.fp8_gemm_backend(a, b, sa, sb) != "skinny"


CUBLASLT_M = [4, 64, 68, 128, 1000, 5376]
CUBLASLT_NK = [(128, 512), (144, 1024), (2064, 2048), (2048, 8192)]


@CUDA
@pytest.mark.parametrize("m", CUBLASLT_M)
@pytest.mark.parametrize("nk", CUBLASLT_NK, ids=lambda t: f"{t[0]}x{t[1]}")
@pytest.mark.parametrize("bias_dtype", [None, torch.bfloat16])
def test_fp8_gemm_cublaslt(m, nk, bias_dtype):
    """cuBLASLt's blockwise GEMM on the layouts it is given (M-major scales with stride (1, M): M %
    4 == 0 from the quantizer; K % 512 == 0; N % 16 == 0, ragged against 128), with and without a
    bf16 bias, into a NaN-filled out: every element written, within the wgmma bound of the fp64
    reference. "auto" runs it for more than 64 rows without a bias (with one only for large
    weights, none here) and runs something else, still right, where it cannot: an fp32 bias,
    fp16 out, M-major scales padded past M, K % 512 != 0."""
    n, k = nk
    a, sa, b, sb = quantized(m, k, n, "cuda", "mn_major")
    bias = None if bias_dtype is None else torch.randn(n, device="cuda").to(bias_dtype)
    skip_unless_runs(a, b, sa, sb, "cublaslt", bias)
    out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    lk.fp8_blockwise_gemm(a, sa, b, sb, bias, out=out, backend="cublaslt")
    check(out, a, sa, b, sb, bias, what=f"cublaslt {m}x{n}x{k} bias={bias_dtype}", backend="cublaslt")
    auto = lk.fp8_gemm_backend(a, b, sa, sb, bias)
    if m > 64 and bias is None:
        assert auto == "cublaslt", auto
    else:  # few tokens: the few-token kernel; a bf16 bias on a small weight: our kernels (fp32 bias widened)
        assert auto in (("skinny", "sm90") if m <= 64 else ("sm90_cutlass", "sm90")), auto
    # what cuBLASLt cannot take goes elsewhere, still right
    h = None if bias is None else bias.to(torch.float16)
    for bias_, dt, what in ((torch.randn(n, device="cuda"), torch.bfloat16, "fp32 bias"), (h, torch.float16, "fp16 out")):
        assert lk.fp8_gemm_backend(a, b, sa, sb, bias_, out_dtype=dt) != "cublaslt"
        check(lk.fp8_blockwise_gemm(a, sa, b, sb, bias_, out_dtype=dt), a, sa, b, sb, bias_, what=f"auto, {what}")
    if m > 1:  # one row fewer: the quantizer pads the M-major scales to a multiple of 4
        a1, sa1 = a[: m - 1], lk.mn_major_scales(m - 1, k // 128, "cuda")
        sa1.copy_(sa[: m - 1])
        assert sa1.stride(1) != m - 1
        with pytest.raises(RuntimeError, match="a_scales M-major with strides"):
            lk.fp8_blockwise_gemm(a1, sa1, b, sb, bias, backend="cublaslt")
        check(lk.fp8_blockwise_gemm(a1, sa1, b, sb, bias), a1, sa1, b, sb, bias, what="auto, padded scales")
    # K / 128 not a multiple of 4 (cuBLASLt answered wrongly there): refused, "auto" elsewhere
    a3, sa3, b3, sb3 = quantized(m, 384, n, "cuda", "mn_major")
    with pytest.raises(RuntimeError, match="K % 512 == 0"):
        lk.fp8_blockwise_gemm(a3, sa3, b3, sb3, backend="cublaslt")
    assert lk.fp8_gemm_backend(a3, b3, sa3, sb3) != "cublaslt"
    check(lk.fp8_blockwise_gemm(a3, sa3, b3, sb3), a3, sa3, b3, sb3, what="auto, K 384")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_fp8_gemm_empty(device):
    a, sa, b, sb = quantized(5, 256, 16, device)
    skip_cuda_without(device, "fp8_blockwise_gemm")
    e = a[:0]
    out = lk.fp8_blockwise_gemm(e, sa[:0], b, sb)
    assert out.shape == (0, 16)
    e3 = a.view(torch.uint8)[:0].reshape(2, 0, 256).view(torch.float8_e4m3fn)
    assert lk.fp8_blockwise_gemm(e3, sa[:0], b, sb).shape == (2, 0, 16)
    out = lk.fp8_blockwise_gemm(e, sa[:0], b[:0], sb[:0])
    assert out.shape == (0, 0)


@pytest.mark.isolated
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_fp8_gemm_errors(device):
    skip_cuda_without(device, "fp8_blockwise_gemm")
    a, sa, b, sb = quantized(4, 256, 16, device)
    op = "fp8_blockwise_gemm"
    f = lk.fp8_blockwise_gemm
    bad = [
        (lambda: f(a.view(torch.uint8), sa, b, sb), "a must be float8_e4m3fn"),
        (lambda: f(a, sa, b.view(torch.uint8), sb), "b must be float8_e4m3fn"),
        (lambda: f(a[:, :200], sa, b, sb), "K = a.shape[-1] must be a multiple of 128"),
        (lambda: f(a, sa, b[:, :128], sb), "b must have shape [N, K] with K = 256"),
        (lambda: f(a, sa, b[:12], sb), "N = b.shape[0] must be a multiple of 8"),
        (lambda: f(a, sa[:, :1], b, sb), "a_scales must have shape [M, K / 128] = [4, 2]"),
        (lambda: f(a, torch.ones(4, 3, device=device), b, sb), "a_scales must have shape [M, K / 128] = [4, 2] (got [4, 3])"),
        (lambda: f(a, sa.double(), b, sb), "a_scales must be float32"),
        (lambda: f(a, torch.empty_strided((4, 2), (2, 3), device=device), b, sb),
         "a_scales must be row-major"),
        (lambda: f(a, sa, b, sb[:, :1]), "b_scales must have shape [ceil(N / 128), K / 128] = [1, 2]"),
        (lambda: f(a, sa, b, sb, torch.ones(16, device=device, dtype=torch.float16)), "bias must be float32 or out's dtype"),
        (lambda: f(a, sa, b, sb, torch.ones(8, device=device)), "bias must have shape [N] = [16]"),
        (lambda: f(a, sa, b, sb, out_dtype=torch.float32), "out_dtype must be torch.bfloat16 or torch.float16 or torch.float8_e4m3fn"),
        (lambda: f(a, sa, b, sb, out=torch.empty(4, 16, device=device)), "out must be bfloat16 or float16"),
        (lambda: f(a, sa, b, sb, out=torch.empty(4, 8, device=device, dtype=torch.bfloat16)), "out must have shape a.shape[:-1] + [N] = [4, 16]"),
        (lambda: f(a, sa, b, sb, out=torch.empty(16, 4, device=device, dtype=torch.bfloat16).t()), "out must have stride 1"),
        (lambda: f(a, sa, b, sb, backend="cutlass"),
         "backend must be 'auto', 'sm90', 'skinny', 'sm89', 'sm90_cutlass', 'cublaslt', 'torch' or 'cpu'"),
    ]
    if device == "cpu":
        bad.append((lambda: f(a, sa, b, sb, backend="sm90"), "backend 'sm90' cannot run this call (the tensors are on the CPU)"))
        bad.append((lambda: f(a, sa, b, sb, backend="sm89"), "backend 'sm89' cannot run this call (the tensors are on the CPU)"))
        bad.append((lambda: f(a, sa, b, sb, backend="cublaslt"),
                    "backend 'cublaslt' cannot run this call (the tensors are on the CPU)"))
    else:
        bad.append((lambda: f(a, sa, b, sb, backend="cpu"), "backend 'cpu' cannot run this call"))
    if HAS_CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        bad.append((lambda: f(a, sa.to(other), b, sb), "a_scales and a must be on the same device"))
    for fn, msg in bad:
        expect_error(op, fn, msg)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_fp8_gemm_backend_report(device):
    skip_cuda_without(device, "fp8_blockwise_gemm")
    a, sa, b, sb = quantized(64, 256, 128, device, "mn_major")
    got = lk.fp8_gemm_backend(a, b, sa)
    if device == "cpu":
        assert got == "cpu"
        assert lk.fp8_gemm_backend(a, b, sa, backend="torch") == "torch"
    else:
        assert got in KERNELS + ("torch",)
        cc = torch.cuda.get_device_capability()
        print(f"auto picks {got} on compute capability {cc}")
        if got == "sm90":
            assert cc == (9, 0)
        if got in ("sm89", "skinny"):
            assert cc >= (8, 9)


# torch's SchemaCheckMode (opcheck's test_schema) cannot multiply float8 tensors; the other
# utilities run (see tests/test_fp8.py). The mutation contract is covered by the sentinel test.
OPCHECK_UTILS = ("test_faketensor", "test_aot_dispatch_dynamic", "test_autograd_registration")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_opcheck(device):
    skip_cuda_without(device, "fp8_blockwise_gemm")
    a, sa, b, sb = quantized(7, 256, 16, device, "mn_major")
    out = torch.empty(7, 16, device=device, dtype=torch.bfloat16)
    bias = torch.randn(16, device=device)
    torch.library.opcheck(lk.ops.fp8_blockwise_gemm.default, (out, None, a, sa, b, sb, bias, "none", None, None, "auto"),
                          test_utils=OPCHECK_UTILS)
    torch.library.opcheck(lk.ops.fp8_blockwise_gemm.default, (out, None, a, sa, b, sb, None, "gelu_tanh", None, None, "torch"),
                          test_utils=OPCHECK_UTILS)
    w = torch.randn(16, 256, device=device)
    bp, sbp = lk.quantize_fp6_block(w.cpu())
    bp, sbp = bp.to(device), sbp.to(device)
    torch.library.opcheck(lk.ops.fp6_blockwise_gemm.default, (out, a, sa, bp, sbp, bias, "auto"), test_utils=OPCHECK_UTILS)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_compile_fullgraph(device):
    skip_cuda_without(device, "fp8_blockwise_gemm")
    torch._dynamo.reset()
    x = torch.randn(2, 33, 256, device=device, dtype=torch.bfloat16)
    w = torch.randn(24, 256, device=device, dtype=torch.bfloat16)
    bias = torch.randn(24, device=device)
    b, sb = lk.quantize_fp8_block(w)

    def f(x):
        a, sa = lk.quantize_fp8_per_token_group(x * 2.0, 128, "mn_major")
        return lk.fp8_blockwise_gemm(a, sa, b, sb, bias) + 1.0

    y = torch.compile(f, fullgraph=True)(x)
    a, sa = lk.quantize_fp8_per_token_group(x * 2.0, 128, "mn_major")
    want = lk.fp8_blockwise_gemm(a, sa, b, sb, bias) + 1.0
    assert y.shape == (2, 33, 24)
    assert torch.equal(y, want)


# ---- FP6 weights (LTX-2 packed): B = e4m3(unpack(b_packed)) * scale
FP6_DEV_BACKENDS = device_backends("auto", "sm89", "torch")


@pytest.mark.parametrize("device,backend", FP6_DEV_BACKENDS)
@pytest.mark.parametrize("m", [1, 7, 129, 1000])
@pytest.mark.parametrize("nk", [(8, 128), (136, 384), (2048, 2048)], ids=lambda t: f"{t[0]}x{t[1]}")
@pytest.mark.parametrize("with_bias", [False, True])
def test_fp6_gemm(device, backend, m, nk, with_bias):
    n, k = nk
    if device == "cpu" and n * k > 136 * 384:
        pytest.skip("CUDA only (too slow for the CPU backend in CI)")
    skip_cuda_without(device, "fp6_blockwise_gemm")
    x = torch.randn(m, k, device=device) * 3
    w = torch.randn(n, k) * 0.02
    w[:, :128] *= 10  # different block scales along K
    bp, sbp = lk.quantize_fp6_block(w)  # CPU quantizer (bit-exact, tested in test_lowbit)
    bp, sbp = bp.to(device), sbp.to(device)
    a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major" if m % 2 else "row")
    bias = torch.randn(n, device=device) if with_bias else None
    if backend == "sm89":
        try:
            lk.fp6_blockwise_gemm(a[:1], sa[:1], bp, sbp, bias, backend="sm89")
        except RuntimeError as e:
            if "cannot run this call" in str(e):
                pytest.skip(str(e)[:300])
            raise
    out = lk.fp6_blockwise_gemm(a, sa, bp, sbp, bias, backend=backend)
    assert out.shape == (m, n)
    b8 = ref.fp6_unpack(bp.cpu(), k).to(device)
    want = ref.fp6_blockwise_gemm(a, sa, bp, sbp, bias).to(device)
    assert calc_diff(out.double(), want) <= CALC_DIFF_MAX
    check(out, a, sa, b8, sbp, bias, what=f"fp6 {device}/{backend}")


@pytest.mark.isolated
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_fp6_gemm_errors_and_empty(device):
    skip_cuda_without(device, "fp6_blockwise_gemm")
    a, sa, _, _ = quantized(4, 256, 16, device)
    bp, sbp = lk.quantize_fp6_block(torch.randn(16, 256))
    bp, sbp = bp.to(device), sbp.to(device)
    op = "fp6_blockwise_gemm"
    bad = [
        (lambda: lk.fp6_blockwise_gemm(a, sa, bp.view(torch.int8), sbp), "b_packed must be uint8"),
        (lambda: lk.fp6_blockwise_gemm(a, sa, bp[:, :96], sbp), "b_packed must have shape [N, 3K/4] with 3K/4 = 192"),
        (lambda: lk.fp6_blockwise_gemm(a, sa, bp, sbp, backend="sm90"), "backend must be 'auto', 'sm89', 'torch' or 'cpu'"),
    ]
    for fn, msg in bad:
        expect_error(op, fn, msg)
    assert lk.fp6_blockwise_gemm(a[:0], sa[:0], bp, sbp).shape == (0, 16)


def test_cpu_backend_rounds_once():
    """One rounding of the exact sum: a result that double rounding (fp32 then bf16) would get
    wrong. The exact value 1 + 2^-8 + 2^-30 lies just above the tie between the bf16 neighbours
    1 and 1 + 2^-7; through fp32 it would become the tie 1 + 2^-8 and round (to even) to 1.
    The third term sits in a second K block scaled by 2^-15 * 2^-15. (CPU backend only: the
    kernels add the block sums in fp32, as DeepGEMM does.)"""
    k = 256
    a = torch.zeros(1, k)
    b = torch.zeros(8, k)
    a[0, 0], b[0, 0] = 1.0, 1.0
    a[0, 1], b[0, 1] = 2.0**-4, 2.0**-4
    a[0, 128], b[0, 128] = 1.0, 1.0  # second block, scaled down to 2^-30 below
    aq = a.to(torch.float8_e4m3fn)
    bq = b.to(torch.float8_e4m3fn)
    sa = torch.tensor([[1.0, 2.0**-15]])
    sb = torch.tensor([[1.0, 2.0**-15]])
    out = lk.fp8_blockwise_gemm(aq, sa, bq, sb)
    exact = 1 + 2.0**-8 + 2.0**-30
    assert ref.fp8_blockwise_gemm(aq, sa, bq, sb)[0, 0].item() == exact
    # bf16 neighbours of 1 + 2^-8 are 1 and 1 + 2^-7; the exact value is above the tie
    assert out[0, 0].item() == 1 + 2.0**-7


# ---- NVFP4 (operands from quantize_nvfp4; alpha = s_a * s_w on the device)
NVFP4_DEV_BACKENDS = device_backends("auto", "cublaslt", "torch")


def nvfp4_operands(m, n, k, device, leading=None):
    shape = (m, k) if leading is None else (*leading, k)
    x = torch.randn(shape) * 2
    w = torch.randn(n, k) * 0.1
    sx, sw = lk.nvfp4_per_tensor_scale(x), lk.nvfp4_per_tensor_scale(w)
    qa, ba = lk.quantize_nvfp4(x, sx)  # CPU quantizer: bit-exact (tests/test_lowbit.py)
    qb, bb = lk.quantize_nvfp4(w, sw)
    alpha = (sx * sw).float()
    return [t.to(device) for t in (qa, qb, ba, bb, alpha)]


@pytest.mark.parametrize("device,backend", NVFP4_DEV_BACKENDS)
@pytest.mark.parametrize("m", [1, 7, 129])
@pytest.mark.parametrize("nk", [(8, 64), (136, 256), (256, 1024)], ids=lambda t: f"{t[0]}x{t[1]}")
@pytest.mark.parametrize("with_bias", [False, True])
def test_scaled_mm_nvfp4(device, backend, m, nk, with_bias):
    n, k = nk
    skip_cuda_without(device, "scaled_mm_nvfp4")
    qa, qb, ba, bb, alpha = nvfp4_operands(m, n, k, device)
    bias = torch.randn(n, device=device) if with_bias else None
    if backend == "cublaslt":
        try:
            lk.scaled_mm_nvfp4(qa, qb, ba, bb, alpha, bias, backend="cublaslt")
        except RuntimeError as e:
            if "cannot run this call" in str(e):
                pytest.skip(str(e)[:300])
            raise
    out = lk.scaled_mm_nvfp4(qa, qb, ba, bb, alpha, bias, backend=backend)
    assert out.shape == (m, n) and out.dtype == torch.bfloat16
    want = ref.scaled_mm_nvfp4(qa.cpu(), qb.cpu(), ba.cpu(), bb.cpu(), alpha.cpu(), k, bias)
    got = out.double().cpu()
    assert calc_diff(got, want) <= CALC_DIFF_MAX
    one = torch.ones(())
    da = ref.dequantize_nvfp4(qa.cpu(), ba.cpu(), one, k, torch.float32).double().abs()
    db = ref.dequantize_nvfp4(qb.cpu(), bb.cpu(), one, k, torch.float32).double().abs()
    absdot = (da @ db.t()) * alpha.cpu().double()
    # cuBLASLt adds a bias rounded to bf16 (its bias type for a bf16 output): one more 2^-8 |bias|.
    # The "torch" path (what "auto" is without cuBLASLt's FP4) is an fp32 matmul of the
    # dequantized operands in the BLAS's order: (K + 4) u of sum |a b|; cuBLASLt's 2^-16.
    acc = 2.0**-16 if backend == "cublaslt" else (k + 4) * 2.0**-24
    tol = 2.0**-7 * want.abs() + acc * absdot + (2.0**-8 * bias.cpu().double().abs() if with_bias else 0)
    assert ((got - want).abs() <= tol).all()


@pytest.mark.isolated
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_scaled_mm_nvfp4_errors_leading_empty(device):
    skip_cuda_without(device, "scaled_mm_nvfp4")
    qa, qb, ba, bb, alpha = nvfp4_operands(None, 16, 64, device, leading=(2, 3))
    out = lk.scaled_mm_nvfp4(qa, qb, ba, bb, alpha, out_dtype=torch.float16)
    assert out.shape == (2, 3, 16) and out.dtype == torch.float16
    want = ref.scaled_mm_nvfp4(qa.cpu(), qb.cpu(), ba.cpu(), bb.cpu(), alpha.cpu(), 64)
    assert calc_diff(out.double().cpu(), want) <= CALC_DIFF_MAX
    op = "scaled_mm_nvfp4"
    f = lk.scaled_mm_nvfp4
    bad = [
        (lambda: f(qa.view(torch.int8), qb, ba, bb, alpha), "a_packed and b_packed must be uint8"),
        (lambda: f(qa, qb[:, :16], ba, bb, alpha), "b_packed must have shape [N, K/2] = [N, 32]"),
        (lambda: f(qa, qb[:12], ba, bb, alpha), "N = b_packed.shape[0] must be a multiple of 8"),
        (lambda: f(qa, qb, ba[:, :2], bb, alpha), "block_a must be uint8 [roundup(M, 128), roundup(K/16, 4)] = [128, 4]"),
        (lambda: f(qa, qb, ba, bb, alpha.double()), "alpha must be a one-element float32 tensor"),
        (lambda: f(qa, qb, ba, bb, alpha, torch.ones(8, device=device)), "bias must be float32 [N] = [16]"),
        (lambda: f(qa, qb, ba, bb, alpha, backend="cutlass"), "backend must be 'auto', 'cublaslt', 'torch' or 'cpu'"),
    ]
    if device == "cpu":
        bad.append((lambda: f(qa, qb, ba, bb, alpha, backend="cublaslt"), "backend 'cublaslt' cannot run this call"))
    for fn, msg in bad:
        expect_error(op, fn, msg)
    e = qa.reshape(6, 32)[:0]
    assert f(e, qb, ba[:0], bb, alpha).shape == (0, 16)
