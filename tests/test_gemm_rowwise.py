"""Rowwise-scaled FP8 GEMM (fp8_rowwise_gemm), its quantizer and FP8RowwiseLinear, against the
float64 oracle reference.fp8_rowwise_gemm (docs/semantics.md, "FP8 rowwise scaling"):

  y[m, n] = (A[m, :] . B[n, :]) * sa[m] * sb[n] + bias[n],   then the epilogue and one rounding.

Element-wise bounds, from the formulas and the dtypes. With |A|, |B| the decoded e4m3 magnitudes,
S = sa sb sum_k |A_k B_k| (the scale of every accumulation error) and u = 2^-24:
  E_y, the error of the fp32 value y before the epilogue:
    "sm90" (wgmma, no promotion): the FP8 wgmma adds each k32 step's 32 exact products to the
      running fp32 accumulator with about 14 significant bits (DeepSeek-V3 section 3.3.2; within
      one 128-wide K block test_gemm.py measures <= 2^-13 S on an H200), so step j errs by at most
      ~2^-13 of S_j = sa sb sum_{k < 32 (j + 1)} |A_k B_k|, and the steps add: 2^-13 sum_j S_j,
      taken with a factor 2 of room: 2^-12 sum_j S_j (sum_j S_j = sa sb sum_k (J - k // 32)
      |A_k B_k|, J = ceil(K / 32): about J / 2 times S). Then acc * (sa sb): two fp32 roundings,
      and + bias one: 3u S' (S' = S + |bias|).
    "cpu": 128-wide fp32 block dot products of exact products (<= 2^-16 of their |sum|, as
      test_gemm.py), summed in double, the fp32 scale product (1u): 2^-16 S + 2u S'.
    "torch" (the exact fallback): float64 throughout, one rounding to fp32: 2u S'.
  16-bit out: |out - ref| <= R |ref| + L E_y + 2^-22 |ref|, R = 2^-7 (bf16) / 2^-10 (fp16), L the
    epilogue's slope (1, 1.13 for gelu_tanh, |gate| for the gated residual), as test_gemm_epilogue.py.
  FP8 out: test_gemm_epilogue.check_fp8_out's bound.
  Exact data (small integer codes, power-of-two scales, integer bias): every product and sum is
    exact in fp32 and in the wgmma accumulator (|sums| < 2^13) -> the 16-bit output is the float64
    value rounded once, bit for bit, on every backend.
A mutation (sa scaled by 1.1, a 10% error) must fail these bounds: the short-K shapes there keep
E_y far below 10% of |y|.
CUDA cases need compute capability 9.0 and an sm_90a build for "sm90" (else they skip with the
op's reason); "auto" and "torch" run on any GPU. "cublaslt" (cuBLASLt's outer-vector-scaled GEMM
with fast accumulation: the wgmma accumulation of "sm90", so the same bound) takes plain calls with a
bf16 bias at most and bf16 out; a case it refuses for one of those documented reasons goes on with
the next backend, and test_rowwise_plan checks that "auto" picks it where it can.
"""

import pytest
import torch
from torch import nn

import ltx_kernels as lk
from ltx_kernels import reference as ref

from conftest import HAS_CUDA, expect_error, has_cuda_kernel
from test_gemm_epilogue import R16, SLOPE, check16, check_fp8_out, gated_residual_inputs, gemm_config  # noqa: F401 (fixture)

F8 = torch.float8_e4m3fn
U = 2.0**-24
OP = "fp8_rowwise_gemm"
CUDA = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]
# The compiled sm_90a tiles of the recipe (ltx_kernels/gemm/heuristics.h, kFp8RowwiseTiles); the
# FP8 output needs whole 128-column groups per warpgroup.
TILES = [(128, 128), (128, 192), (128, 256), (256, 128), (64, 256)]
FP8_OUT_TILES = [(128, 128), (128, 256), (256, 128), (64, 256)]
SM90_UNAVAILABLE = ("the sm_90a kernel needs compute capability 9.0", "no kernel compiled for sm_90a in this build")


def need_kernel(device):
    if device == "cuda" and not has_cuda_kernel(OP):
        pytest.skip(f"{OP}: no CUDA kernel registered in this build")


def backends(device):
    return ["auto", "cpu", "torch"] if device == "cpu" else ["auto", "sm90", "torch", "cublaslt"]


def skip_forced(fn, backend=None):
    """fn(); a forced "sm90" that this device or build cannot run skips; a forced "cublaslt" that
    refuses the call (its documented limits) returns None; any other refusal fails."""
    try:
        return fn()
    except RuntimeError as e:
        if "cannot run this call" in str(e) and any(r in str(e) for r in SM90_UNAVAILABLE):
            pytest.skip(str(e)[:300])
        if backend == "cublaslt" and "cannot run this call" in str(e) and "cuBLASLt's rowwise FP8 GEMM" in str(e):
            return None
        raise


def operands(m, n, k, device, leading=None, seed=0):
    """Activations with a per-token magnitude spread and a weight, each quantized per row over
    all of K (quantize_fp8_per_token_group with group_size = K): (a, sa [M, 1], b, sb [N, 1])."""
    g = torch.Generator().manual_seed(seed)
    shape = (m, k) if leading is None else (*leading, k)
    x = torch.randn(shape, generator=g) * torch.exp2(torch.randint(-3, 4, shape[:-1] + (1,), generator=g).float())
    w = torch.randn(n, k, generator=g) * 0.05 * torch.exp2(torch.randint(-2, 3, (n, 1), generator=g).float())
    a, sa = lk.quantize_fp8_per_token_group(x.to(device), k, "row")
    b, sb = lk.quantize_fp8_per_token_group(w.to(device), k, "row")
    return a, sa, b, sb


def e_y(a, sa, b, sb, bias, backend):
    """The bound on the fp32 value's error (module docstring), float64 [M, N] on a's device."""
    k = a.shape[-1]
    dev = a.device
    table = ref.fp8_decode_table(F8).to(dev)
    aa = table[(a.view(torch.uint8) & 0x7F).long()].reshape(-1, k)
    bb = table[(b.view(torch.uint8) & 0x7F).long()].reshape(-1, k)
    scale = sa.double().abs().reshape(-1, 1).to(dev) * sb.double().abs().reshape(1, -1).to(dev)
    s = (aa @ bb.t()) * scale
    s1 = s + (0 if bias is None else bias.double().abs().to(dev))
    if backend in ("sm90", "cublaslt"):
        steps = -(-k // 32)
        weight = (steps - torch.arange(k, device=dev) // 32).double()
        return 2.0**-12 * ((aa * weight) @ bb.t()) * scale + 3 * U * s1
    if backend == "cpu":
        return 2.0**-16 * s + 2 * U * s1
    return 2 * U * s1


def used_backend(device, a, sa, b, sb, bias, **kw):
    if device == "cpu":
        return "torch" if kw.get("backend") == "torch" else "cpu"
    return lk.gemm_config(OP, a, b, sa, sb, bias=bias, **kw)["backend"]


def run_checked(device, m, n, k, backend, bias_kind=None, epilogue="none", out_dtype=torch.bfloat16, leading=None):
    a, sa, b, sb = operands(m, n, k, device, leading)
    bias = None
    if bias_kind:
        bias = torch.randn(n, device=device).to(torch.float32 if bias_kind == "fp32" else out_dtype)
    kw = dict(out_dtype=out_dtype, backend=backend, epilogue=epilogue)
    out = skip_forced(lambda: lk.fp8_rowwise_gemm(a, sa, b, sb, bias, **kw), backend)
    if out is None:
        return None, None
    used = used_backend(device, a, sa, b, sb, bias, **kw)
    y = ref.fp8_rowwise_gemm(a, sa, b, sb, bias)
    assert out.shape == (*a.shape[:-1], n) and out.dtype == out_dtype
    check16(out.reshape(-1, n), ref.gemm_epilogue(y, epilogue).reshape(-1, n), e_y(a, sa, b, sb, bias, used),
            SLOPE[epilogue], f"rowwise {device}/{backend}->{used} {m}x{n}x{k} {epilogue}", {})
    return out, used


# =============================================================================================
# The quantizer: one scale per row over all of K is the per-token-group rule with group_size = K
# =============================================================================================
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("k", [16, 48, 400, 4096])
def test_per_row_quantizer_matches_reference(device, dtype, k):
    if device == "cuda" and not has_cuda_kernel("quantize_fp8_per_token_group"):
        pytest.skip("quantize_fp8_per_token_group: no CUDA kernel registered in this build")
    g = torch.Generator().manual_seed(k)
    x = torch.randn(37, k, generator=g) * torch.exp2(torch.randint(-6, 7, (37, 1), generator=g).float())
    x[3] = 0.0  # an all-zero row: scale 0, zero codes
    x = x.to(dtype)
    q, s = lk.quantize_fp8_per_token_group(x.to(device), k, "row")
    q_ref, s_ref = ref.quantize_fp8_per_token_group(x, k)
    assert s.shape == (37, 1) and q.shape == x.shape
    assert torch.equal(s.cpu(), s_ref), "scales"
    assert torch.equal(q.cpu().view(torch.uint8), q_ref.view(torch.uint8)), "codes"
    assert s[3].item() == 0.0 and (q[3].view(torch.uint8) == 0).all()
    # the traced form FP8RowwiseLinear gives Inductor (eager here): the same bits
    qc, sc = lk.fp8._quantize_fp8_per_token_group_composed(x, k, "row")
    assert torch.equal(sc, s_ref) and torch.equal(qc.view(torch.uint8), q_ref.view(torch.uint8))


# =============================================================================================
# The GEMM on every backend
# =============================================================================================
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("m", [1, 77, 128, 300])
@pytest.mark.parametrize("nk", [(8, 16), (136, 48), (256, 400), (520, 1152)], ids=lambda t: f"{t[0]}x{t[1]}")
def test_rowwise_shapes(device, m, nk):
    """M not a multiple of any tile, N ragged against 128 / 192 / 256, K = 16 * odd (the last K stage
    of the kernel is partly past K: zero-filled)."""
    need_kernel(device)
    n, k = nk
    if device == "cpu" and m * n * k > 300 * 256 * 400:
        pytest.skip("CPU: the large shapes run on CUDA")
    for backend in backends(device):
        run_checked(device, m, n, k, backend)


@CUDA
@pytest.mark.parametrize("m", [1, 300, 2048])
@pytest.mark.parametrize("nk", [(2048, 2048), (4096, 4096), (1024, 8192)], ids=lambda t: f"{t[0]}x{t[1]}")
def test_rowwise_large(m, nk):
    """Long K (the accumulator runs over all of it) and many tiles (persistent scheduling)."""
    need_kernel("cuda")
    for backend in ("auto", "sm90", "cublaslt"):
        run_checked("cuda", m, nk[0], nk[1], backend)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("epilogue", ["none", "gelu_tanh"])
@pytest.mark.parametrize("bias_kind", [None, "fp32", "out"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16])
def test_rowwise_epilogue_activation(device, epilogue, bias_kind, out_dtype):
    need_kernel(device)
    m, n, k = (77, 136, 384) if device == "cpu" else (333, 520, 1168)
    for backend in backends(device):
        run_checked(device, m, n, k, backend, bias_kind, epilogue, out_dtype, leading=None)
    # leading dimensions
    run_checked(device, None, 136, 256, "auto", bias_kind, epilogue, out_dtype, leading=(2, 33))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("gate_kind", ["sample", "sample3d", "token"])
@pytest.mark.parametrize("tokens", [300, 5])
def test_rowwise_gated_residual(device, gate_kind, tokens):
    """out = h + gate * y with per-sample gates (samples straddling tiles, or many per tile) and
    per-token gates; then in place (out is h)."""
    need_kernel(device)
    B = 3
    n, k = (136, 256) if device == "cpu" else (392, 784)
    if device == "cpu":
        tokens = min(tokens, 40)
    bias, h, gate = gated_residual_inputs(device, gate_kind, B, tokens, n)
    a, sa, b, sb = operands(None, n, k, device, leading=(B, tokens))
    y = ref.fp8_rowwise_gemm(a, sa, b, sb, bias)
    want = ref.gemm_epilogue(y, "gated_residual", h, gate)
    gabs = gate.abs().double().reshape(B, -1, n).expand(B, tokens, n).reshape(-1, n)
    for backend in backends(device):
        kw = dict(backend=backend, epilogue="gated_residual", residual=h, gate=gate)
        out = skip_forced(lambda: lk.fp8_rowwise_gemm(a, sa, b, sb, bias, **kw), backend)
        if out is None:
            continue
        used = used_backend(device, a, sa, b, sb, bias, **kw)
        check16(out.reshape(-1, n), want.reshape(-1, n), e_y(a, sa, b, sb, bias, used) * gabs.to(out.device), 1.0,
                f"gated {device}/{backend}->{used} {gate_kind} {tokens}", {})
        h2 = h.clone()
        got = lk.fp8_rowwise_gemm(a, sa, b, sb, bias, out=h2, **dict(kw, residual=h2))
        assert got.data_ptr() == h2.data_ptr()
        assert torch.equal(h2, out), f"in place differs from out of place ({device}/{backend})"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("epilogue", ["none", "gelu_tanh"])
@pytest.mark.parametrize("layout", ["row", "mn_major"])
def test_rowwise_fp8_output(device, epilogue, layout):
    """The epilogue's fp32 value quantized per token per 128 columns: (q, scales)."""
    need_kernel(device)
    m, n, k = (45, 256, 272) if device == "cpu" else (333, 640, 1040)
    a, sa, b, sb = operands(m, n, k, device)
    bias = torch.randn(n, device=device)
    if layout == "mn_major":
        bias = bias.to(torch.bfloat16)
    y = ref.fp8_rowwise_gemm(a, sa, b, sb, bias)
    for backend in backends(device):
        kw = dict(out_dtype=F8, backend=backend, epilogue=epilogue, scale_layout=layout)
        res = skip_forced(lambda: lk.fp8_rowwise_gemm(a, sa, b, sb, bias, **kw), backend)
        if res is None:
            continue
        q, s = res
        used = used_backend(device, a, sa, b, sb, bias, out_dtype=F8, backend=backend, epilogue=epilogue)
        assert q.dtype == F8 and q.shape == (m, n) and s.shape == (m, n // 128)
        assert (s.stride() == (n // 128, 1)) if layout == "row" else (s.stride(0) == 1)
        check_fp8_out(q, s, ref.gemm_epilogue(y, epilogue), e_y(a, sa, b, sb, bias, used), SLOPE[epilogue],
                      f"rowwise fp8 out {device}/{backend}->{used}", {})


def exact_operands(m, n, k, device):
    """Codes in {-3..3}, power-of-two scales in [1/4, 2], an integer bias: |sums| <= 9 K < 2^13
    for K <= 800, so every value is exact in fp32 and in the wgmma accumulator."""
    g = torch.Generator().manual_seed(11)
    a = torch.randint(-3, 4, (m, k), generator=g).float().to(F8)
    b = torch.randint(-3, 4, (n, k), generator=g).float().to(F8)
    sa = torch.exp2(torch.randint(-2, 2, (m, 1), generator=g).float())
    sb = torch.exp2(torch.randint(-2, 2, (n,), generator=g).float())
    bias = torch.randint(-8, 9, (n,), generator=g).float()
    return a.to(device), sa.to(device), b.to(device), sb.to(device), bias.to(device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16])
def test_rowwise_exact_data_bit_identical(device, out_dtype):
    need_kernel(device)
    m, n, k = 77, 264, 784
    a, sa, b, sb, bias = exact_operands(m, n, k, device)
    want = ref.fp8_rowwise_gemm(a, sa, b, sb, bias).float().to(out_dtype)
    for backend in backends(device):
        bias_b = bias.to(out_dtype) if backend == "cublaslt" else bias  # (cuBLASLt: a bias of out's dtype; exact)
        out = skip_forced(lambda: lk.fp8_rowwise_gemm(a, sa, b, sb, bias_b, out_dtype=out_dtype, backend=backend),
                          backend)
        if out is None:
            continue
        bad = out.view(torch.int16) != want.view(torch.int16)
        assert not bad.any(), f"{device}/{backend}: {int(bad.sum())} elements differ, e.g. {out[bad][:4].tolist()} " \
                              f"want {want[bad][:4].tolist()}"


@pytest.mark.parametrize("device", DEVICES)
def test_rowwise_mutation_fails_the_bound(device):
    """The bound must catch a 10% error of one operand's scales (sa * 1.1): the check is not vacuous."""
    need_kernel(device)
    m, n, k = 130, 144, 256
    a, sa, b, sb = operands(m, n, k, device)
    want = ref.fp8_rowwise_gemm(a, sa, b, sb)
    for backend in backends(device):
        out = skip_forced(lambda: lk.fp8_rowwise_gemm(a, sa * 1.1, b, sb, backend=backend), backend)
        used = used_backend(device, a, sa, b, sb, None, backend=backend)
        tol = (R16[torch.bfloat16] + 2.0**-22) * want.abs() + e_y(a, sa, b, sb, None, used)
        bad = (out.double() - want.to(out.device)).abs() > tol.to(out.device)
        assert bad.float().mean() > 0.5, f"{device}/{backend}: a 10% scale error passes the bound"


@pytest.mark.parametrize("device", DEVICES)
def test_rowwise_zero_rows_and_scales(device):
    """An all-zero token (scale 0) gives exactly the bias; a zero weight row exactly its bias; a
    zero-scale row contributes nothing whatever its codes."""
    need_kernel(device)
    m, n, k = 77, 256, 512
    x = torch.randn(m, k, device=device)
    x[0] = 0.0
    w = torch.randn(n, k, device=device)
    w[130:140] = 0.0
    a, sa = lk.quantize_fp8_per_token_group(x, k, "row")
    b, sb = lk.quantize_fp8_per_token_group(w, k, "row")
    assert sa[0].item() == 0 and (sb[130:140] == 0).all()
    bias = torch.randn(n, device=device)
    bias_bf16 = bias.to(torch.bfloat16)
    for backend in backends(device):
        bias_b = bias_bf16 if backend == "cublaslt" else bias  # (cuBLASLt: a bias of out's dtype)
        out = skip_forced(lambda: lk.fp8_rowwise_gemm(a, sa, b, sb, bias_b, backend=backend), backend)
        if out is None:
            continue
        assert torch.equal(out[0], bias_bf16), "an all-zero row must give exactly the bias"
        assert torch.equal(out[:, 130:140], bias_bf16[130:140].expand(m, 10)), "zero weight rows give the bias"
        a2 = a.clone()
        a2.view(torch.uint8)[0] = torch.randint(0, 0x7F, (k,), device=device, dtype=torch.uint8)  # finite codes
        assert torch.equal(lk.fp8_rowwise_gemm(a2, sa, b, sb, bias_b, backend=backend), out)


@pytest.mark.parametrize("device", DEVICES)
def test_rowwise_sentinel_and_strided(device):
    """A sentinel-filled, row-padded out (every element written, the gap untouched); row-padded a and
    b (16-byte aligned rows); strided and misaligned scale vectors ([M, 2][:, 0], an offset view);
    a misaligned a ("auto" must still be right); a column-major a (copied)."""
    need_kernel(device)
    m, n, k = 65, 136, 400
    a, sa, b, sb = operands(m, n, k, device)
    want = lk.fp8_rowwise_gemm(a, sa, b, sb)
    check16(want, ref.fp8_rowwise_gemm(a, sa, b, sb), e_y(a, sa, b, sb, None, used_backend(device, a, sa, b, sb, None)),
            1.0, "plain", {})
    for backend in backends(device):
        big = torch.full((m, n + 24), float("nan"), device=device, dtype=torch.bfloat16)
        got = skip_forced(lambda: lk.fp8_rowwise_gemm(a, sa, b, sb, out=big[:, :n], backend=backend), backend)
        if got is None:  # cuBLASLt writes contiguous rows only
            continue
        assert got.data_ptr() == big.data_ptr()
        ref_b = lk.fp8_rowwise_gemm(a, sa, b, sb, backend=backend)
        assert torch.equal(big[:, :n], ref_b) and torch.isnan(big[:, n:].float()).all()
        abuf = torch.zeros(m, k + 32, device=device, dtype=torch.uint8)
        abuf[:, :k] = a.view(torch.uint8)
        bbuf = torch.zeros(n, k + 16, device=device, dtype=torch.uint8)
        bbuf[:, :k] = b.view(torch.uint8)
        ap, bp = abuf.view(F8)[:, :k], bbuf.view(F8)[:, :k]
        sa2 = torch.zeros(m, 2, device=device)
        sa2[:, 0] = sa[:, 0]
        sb2 = torch.zeros(n, 2, device=device)
        sb2[:, 0] = sb[:, 0]
        sboff = torch.zeros(n + 1, device=device)
        sboff[1:] = sb[:, 0]
        for sa_v, sb_v, what in ((sa2[:, 0], sb2[:, 0], "strided scales"), (sa[:, 0], sboff[1:], "offset sb"),
                                 (sa2[:, :1], sb2[:, :1], "[M, 1] views")):
            got = lk.fp8_rowwise_gemm(ap, sa_v, bp, sb_v, backend=backend)
            assert torch.equal(got, ref_b), f"{device}/{backend}: {what}"
    flat = torch.zeros(m * k + 1, device=device, dtype=torch.uint8)
    flat[1:] = a.view(torch.uint8).reshape(-1)
    amis = flat[1:].view(m, k).view(F8)
    out = lk.fp8_rowwise_gemm(amis, sa, b, sb)
    used = used_backend(device, amis, sa, b, sb, None)
    check16(out, ref.fp8_rowwise_gemm(a, sa, b, sb), e_y(a, sa, b, sb, None, used), 1.0, "misaligned a", {})
    at = a.view(torch.uint8).t().contiguous().t().view(F8)
    assert torch.equal(lk.fp8_rowwise_gemm(at, sa, b, sb), want)


@CUDA
@pytest.mark.parametrize("tile", TILES, ids=lambda t: f"{t[0]}x{t[1]}")
def test_rowwise_every_tile(tile, gemm_config):
    """Each compiled tile forced through LTX_KERNELS_GEMM_CONFIG: ragged M, N and K, every epilogue
    (the gated residual with a per-sample gate: the per-token gate's staging tile does not fit
    beside 2 pipeline stages at 128x256 / 256x128, and "auto" then takes another tile), and the FP8
    output where the tile has whole 128-column groups; single CTAs and the 2-CTA cluster."""
    need_kernel("cuda")
    bm, bn = tile
    B, tokens, n, k = 3, 111, 520, 592
    m = B * tokens
    for cluster in (1, 2):
        gemm_config(f"{bm}x{bn}:c{cluster}")
        a, sa, b, sb = operands(m, n, k, "cuda")
        bias = torch.randn(n, device="cuda")
        cfg = skip_forced(lambda: lk.gemm_config(OP, a, b, sa, sb, bias=bias, backend="sm90"))
        assert (cfg["bm"], cfg["bn"], cfg["cluster"]) == (bm, bn, cluster), cfg
        y = ref.fp8_rowwise_gemm(a, sa, b, sb, bias)
        e = e_y(a, sa, b, sb, bias, "sm90")
        for epilogue in ("none", "gelu_tanh"):
            out = lk.fp8_rowwise_gemm(a, sa, b, sb, bias, backend="sm90", epilogue=epilogue)
            check16(out, ref.gemm_epilogue(y, epilogue), e, SLOPE[epilogue], f"tile {tile} c{cluster} {epilogue}", cfg)
        a3 = a.reshape(B, tokens, k)
        h = torch.randn(B, tokens, n, device="cuda").to(torch.bfloat16)
        gate = torch.randn(B, n, device="cuda").to(torch.bfloat16)
        out = lk.fp8_rowwise_gemm(a3, sa, b, sb, bias, backend="sm90", epilogue="gated_residual", residual=h,
                                  gate=gate)
        want = ref.gemm_epilogue(y.reshape(B, tokens, n), "gated_residual", h, gate).reshape(m, n)
        gabs = gate.abs().double()[:, None, :].expand(B, tokens, n).reshape(m, n)
        check16(out.reshape(m, n), want, e * gabs, 1.0, f"tile {tile} c{cluster} gated", cfg)
        if tile in FP8_OUT_TILES:
            m8, n8 = 333, 640
            a8, sa8, b8, sb8 = operands(m8, n8, k, "cuda", seed=1)
            q, s = lk.fp8_rowwise_gemm(a8, sa8, b8, sb8, backend="sm90", out_dtype=F8)
            check_fp8_out(q, s, ref.fp8_rowwise_gemm(a8, sa8, b8, sb8), e_y(a8, sa8, b8, sb8, None, "sm90"), 1.0,
                          f"tile {tile} c{cluster} fp8 out", cfg)


# =============================================================================================
# Plans, errors, empty problems, the op contract
# =============================================================================================
@pytest.mark.parametrize("device", DEVICES)
def test_rowwise_plan(device):
    need_kernel(device)
    a, sa, b, sb = operands(300, 2048, 1024, device)
    cfg = lk.gemm_config(OP, a, b, sa)  # b_scales None: ones of the right shape
    if device == "cpu":
        assert cfg["backend"] == "cpu"
        assert lk.gemm_config(OP, a, b, sa, sb, backend="torch")["backend"] == "torch"
        return
    if torch.cuda.get_device_capability() == (9, 0):
        # a plain call with bf16 out: cuBLASLt (CUDA >= 12.9); a fused epilogue or fp16 out: ours
        assert cfg["backend"] == "cublaslt", cfg
        for kw in (dict(epilogue="gelu_tanh"), dict(out_dtype=torch.float16)):
            cfg = lk.gemm_config(OP, a, b, sa, sb, **kw)
            if cfg["backend"] == "sm90":
                assert (cfg["bm"], cfg["bn"]) in TILES and cfg["cluster"] == 1
            else:  # no sm_90a kernel in this build: the exact fallback
                assert cfg["backend"] == "torch", cfg
    else:  # no kernel for this device: the exact fallback
        assert cfg["backend"] == "torch", cfg


@pytest.mark.parametrize("device", DEVICES)
def test_rowwise_empty(device):
    need_kernel(device)
    a, sa, b, sb = operands(4, 16, 32, device)
    out = lk.fp8_rowwise_gemm(a[:0], sa[:0], b, sb)
    assert out.shape == (0, 16)
    # K = 0: out = bias exactly
    bias = torch.randn(16, device=device)
    e = torch.empty(4, 0, device=device, dtype=F8)
    out = lk.fp8_rowwise_gemm(e, sa, b[:, :0], sb, bias)
    assert torch.equal(out, bias.to(torch.bfloat16).expand(4, 16))


@pytest.mark.isolated
@pytest.mark.parametrize("device", DEVICES)
def test_rowwise_errors(device):
    need_kernel(device)
    a, sa, b, sb = operands(4, 16, 48, device)
    f = lk.fp8_rowwise_gemm
    bad = [
        (lambda: f(a.view(torch.uint8), sa, b, sb), "a must be float8_e4m3fn"),
        (lambda: f(a, sa, b.view(torch.uint8), sb), "b must be float8_e4m3fn"),
        (lambda: f(a[:, :40], sa, b[:, :40], sb), "K = a.shape[-1] must be a multiple of 16"),
        (lambda: f(a, sa, b[:, :32], sb), "b must have shape [N, K] with K = 48"),
        (lambda: f(a, sa, b[:12], sb[:12]), "N = b.shape[0] must be a multiple of 8"),
        (lambda: f(a, sa[:3], b, sb), "a_scales must have shape [4] or [4, 1] (one scale per row of a (token))"),
        (lambda: f(a, torch.ones(4, 3, device=device), b, sb), "a_scales must have shape [4] or [4, 1]"),
        (lambda: f(a, sa.double(), b, sb), "a_scales must be float32"),
        (lambda: f(a, sa, b, sb[:8]), "b_scales must have shape [16] or [16, 1] (one scale per row of b"),
        (lambda: f(a, sa, b, torch.ones(1, 3, device=device)), "b_scales must have shape [16] or [16, 1]"),
        (lambda: f(a, sa, b, sb.half()), "b_scales must be float32"),
        (lambda: f(a, sa, b, sb, torch.ones(16, device=device, dtype=torch.float16)), "bias must be float32 or out's dtype"),
        (lambda: f(a, sa, b, sb, torch.ones(8, device=device)), "bias must have shape [N] = [16]"),
        (lambda: f(a, sa, b, sb, out_dtype=torch.float32),
         "out_dtype must be torch.bfloat16 or torch.float16 or torch.float8_e4m3fn"),
        (lambda: f(a, sa, b, sb, out=torch.empty(4, 16, device=device)), "out must be bfloat16 or float16"),
        (lambda: f(a, sa, b, sb, out_dtype=F8), "the FP8 output quantizes groups of 128 columns"),
        (lambda: f(a, sa, b, sb, epilogue="relu"), "epilogue must be 'none', 'gelu_tanh' or 'gated_residual'"),
        (lambda: f(a, sa, b, sb, epilogue="gated_residual"), "epilogue 'gated_residual' needs residual and gate"),
        (lambda: f(a, sa, b, sb, backend="skinny"),
         "backend must be 'auto', 'sm90', 'cublaslt', 'torch' or 'cpu' (got 'skinny')"),
    ]
    if device == "cpu":
        bad.append((lambda: f(a, sa, b, sb, backend="sm90"), "backend 'sm90' cannot run this call (the tensors are on the CPU)"))
    else:
        bad.append((lambda: f(a, sa, b, sb, backend="cpu"), "backend 'cpu' cannot run this call"))
    if HAS_CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        bad.append((lambda: f(a, sa.to(other), b, sb), "a_scales and a must be on the same device"))
        bad.append((lambda: f(a, sa, b, sb.to(other)), "b_scales and a must be on the same device"))
    for fn, msg in bad:
        expect_error(OP, fn, msg)
    expect_error("gemm_plan", lambda: lk.ops.gemm_plan("fp8_columnwise_gemm", torch.empty(4, 16, device=device,
                 dtype=torch.bfloat16), None, a, sa, b, sb, None, "none", None, None, "auto"),
                 "op must be 'fp8_blockwise_gemm', 'fp8_rowwise_gemm' or 'bf16_gemm'")


OPCHECK_UTILS = ("test_faketensor", "test_aot_dispatch_dynamic", "test_autograd_registration")


@pytest.mark.parametrize("device", DEVICES)
def test_rowwise_opcheck_and_compile(device):
    need_kernel(device)
    a, sa, b, sb = operands(7, 16, 64, device)
    out = torch.empty(7, 16, device=device, dtype=torch.bfloat16)
    bias = torch.randn(16, device=device)
    torch.library.opcheck(lk.ops.fp8_rowwise_gemm.default, (out, None, a, sa, b, sb, bias, "none", None, None, "auto"),
                          test_utils=OPCHECK_UTILS)
    torch.library.opcheck(lk.ops.fp8_rowwise_gemm.default,
                          (out, None, a, sa, b, sb, None, "gelu_tanh", None, None, "torch"), test_utils=OPCHECK_UTILS)
    torch._dynamo.reset()
    x = torch.randn(2, 33, 64, device=device, dtype=torch.bfloat16)

    def fn(x):
        q, s = lk.quantize_fp8_per_token_group(x * 2.0, 64, "row")
        return lk.fp8_rowwise_gemm(q, s, b, sb, bias) + 1.0

    y = torch.compile(fn, fullgraph=True)(x)
    assert y.shape == (2, 33, 16)
    assert torch.equal(y, fn(x))


# =============================================================================================
# FP8RowwiseLinear and quantize_linears(model, "fp8_rowwise")
# =============================================================================================
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("with_bias", [False, True])
def test_fp8_rowwise_linear(device, dtype, with_bias):
    need_kernel(device)
    torch.manual_seed(0)
    lin = nn.Linear(400, 136, bias=with_bias).to(device, dtype)
    layer = lk.FP8RowwiseLinear.from_linear(lin)
    wq, ws = ref.quantize_fp8_per_token_group(lin.weight.detach().cpu(), 400)
    assert torch.equal(layer.weight_q.cpu().view(torch.uint8), wq.view(torch.uint8))
    assert torch.equal(layer.weight_scales.cpu(), ws)
    x = torch.randn(2, 9, 400, device=device, dtype=dtype)
    y = layer(x)
    assert y.shape == (2, 9, 136) and y.dtype == dtype
    xq, xs = ref.quantize_fp8_per_token_group(x.cpu(), 400)
    bias = None if lin.bias is None else lin.bias.detach().float()
    want = ref.fp8_rowwise_gemm(xq, xs, wq, ws, bias)
    used = used_backend(device, xq.to(device), xs.to(device), layer.weight_q, layer.weight_scales, layer.bias)
    e = e_y(xq, xs, wq, ws, bias, used).reshape(want.shape)
    tol = (2.0**-7 + 2.0**-22) * want.abs() + e
    assert ((y.double().cpu() - want).abs() <= tol).all()
    # pre-quantized input; the epilogues
    assert torch.equal(layer((xq.to(device), xs.to(device))), y)
    layer.set_epilogue("gelu_tanh")
    yg = layer(x)
    tol_g = (2.0**-7 + 2.0**-22) * ref.gelu_tanh(want).abs() + 1.13 * e
    assert ((yg.double().cpu() - ref.gemm_epilogue(want, "gelu_tanh")).abs() <= tol_g).all()
    layer.set_epilogue("none")
    h = torch.randn(2, 9, 136, device=device, dtype=dtype)
    g = torch.randn(2, 136, device=device, dtype=dtype)
    if dtype == torch.bfloat16:
        yr = layer(x, residual=h, gate=g)
        want_r = ref.gemm_epilogue(want, "gated_residual", h.cpu(), g.cpu())
        tol_r = 2.0**-7 * want_r.abs() + e * g.abs().double().cpu()[:, None, :]
        assert ((yr.double().cpu() - want_r).abs() <= tol_r + 2.0**-22 * want_r.abs()).all()
    with pytest.raises(ValueError, match="no fp8_output"):
        layer.set_epilogue("none", fp8_output=True)
    assert not isinstance(layer, lk.FP8BlockwiseLinear)  # the fused norms' per-128 FP8 output never feeds it
    if with_bias:  # a bf16 model's bias stays bf16 (exact): "auto" can hand the plain call to cuBLASLt
        assert layer.bias.dtype == dtype  # (an fp32 model: the fp32 buffer; its GEMM writes bf16)
        assert torch.equal(layer.bias.float().cpu(), lin.bias.detach().float().cpu())
        if device == "cuda" and dtype == torch.bfloat16 and torch.cuda.get_device_capability() == (9, 0):
            # N = 136 is no multiple of 16 (cuBLASLt's rule): our kernel; N = 144: cuBLASLt
            assert used == "sm90", used
            wide = lk.FP8RowwiseLinear.from_linear(nn.Linear(400, 144, bias=True).to(device, dtype))
            xq8, xs8 = xq.to(device), xs.to(device)
            assert used_backend(device, xq8, xs8, wide.weight_q, wide.weight_scales, wide.bias) == "cublaslt"


@pytest.mark.parametrize("device", DEVICES)
def test_quantize_linears_fp8_rowwise(device):
    need_kernel(device)
    torch.manual_seed(0)
    model = nn.Module()
    model.blocks = nn.ModuleList([nn.Sequential(nn.Linear(144, 256), nn.GELU(), nn.Linear(256, 144)),
                                  nn.Sequential(nn.Linear(144, 12))])  # out_features % 8 != 0: kept
    model.proj_out = nn.Linear(144, 16)  # excluded by the default policy
    model = model.to(device)
    x = torch.randn(5, 144, device=device)
    with torch.no_grad():
        y0 = model.blocks[0](x)
    names = lk.quantize_linears(model, "fp8_rowwise")
    assert sorted(names) == ["blocks.0.0", "blocks.0.2"]
    assert all(type(model.get_submodule(n)) is lk.FP8RowwiseLinear for n in names)
    assert type(model.blocks[1][0]) is nn.Linear and type(model.proj_out) is nn.Linear
    with torch.no_grad():
        y1 = model.blocks[0](x)
    # FP8's 3-bit significand per operand: a few percent per element; a wrong scale gives ~1
    rel = float((y1.double() - y0.double()).norm() / y0.double().norm())
    assert rel <= 0.1, rel
