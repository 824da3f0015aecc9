"""Fused GEMM epilogues, the FP8 output, every forced sm_90a tile configuration, and bf16_gemm, against
the float64 references of ltx_kernels.reference (fp8_blockwise_gemm / bf16_gemm, then gemm_epilogue).

Element-wise bounds, from the formulas and the dtypes. S = sum_k |a_k b_k| over the (dequantized)
operands: the scale of every accumulation error.
  E_y, the error of y = acc + bias (before the epilogue):
    FP8, wgmma kernels ("sm90", "sm90_cutlass", "skinny" on Hopper): 2^-12 S. Hopper's FP8 wgmma keeps
      about 14 bits while it sums inside a 128-wide K block (why the recipe promotes to fp32 per block);
      errors up to ~2^-13 S were measured on an H200 (test_gemm.py).
    FP8, other backends: each 128-term block sum in fp32 (exact products, <= 128 roundings of 2^-24
      relative to S) -> 2^-16 S.
    bf16, wgmma kernel: fp32 accumulation along K in k16 steps: a chain of at most K/16 additions plus
      the ~log2(16) inside one step, each rounding <= 2^-24 of the running |sum| <= S -> (K/16 + 8) 2^-24 S.
    bf16, CPU: fp32 dot products of 128 terms (8 lanes of 16: at most 16 + 3 roundings), blocks summed
      in double -> 20 * 2^-24 S.
    bf16, torch: an fp32 matmul of unknown summation order: the worst-case recursive bound K 2^-24 S.
  16-bit out: |out - ref| <= R |ref| + L E_y + 2^-22 |ref|, with R = 2^-7 for bf16 (two half-ulps of an
    8-bit significand: the final rounding, and room for the fp32 epilogue arithmetic), 2^-10 for fp16, and
    L the epilogue's slope in y: 1 (none), 1.13 (gelu_tanh: max |gelu_tanh'| = 1.129), |gate| (gated).
  FP8 out: decode(q) * s against the reference value v: |err| <= 2^-4 (|v| + L E_y) (half an ulp of
    e4m3's 3-bit significand, relative) + 2^-10 s (half the subnormal spacing 2^-9 s) + L E_y; and the
    scales: |s - s_ref| <= max over the group of L E_y / 448 + 2^-23 s_ref.
  Exact data (small integers, power-of-two scales, so that every product and sum is exact in fp32):
    no error at all -> bit-identical 16-bit outputs, and q / scales bit-identical to our quantizer
    (reference.quantize_fp8_per_token_group) applied to the float64 -> float32 reference.
On a mismatch the message localizes it: which tiles of the configuration, which rows / columns.
"""

import math
import os
import re

import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

from conftest import HAS_CUDA, has_cuda_kernel

F8 = torch.float8_e4m3fn
CUDA = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]
R16 = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}
SLOPE = {"none": 1.0, "gelu_tanh": 1.13}

# The compiled sm_90a tile configurations (ltx_kernels/gemm/heuristics.h, kFp8Tiles / kBf16Tiles).
FP8_TILES = [(128, 128), (128, 144), (128, 160), (128, 192), (256, 128), (64, 128), (64, 256)]
BF16_TILES = [(128, 128), (128, 192), (128, 256), (256, 128), (64, 256)]
# tiles whose warpgroups own whole 128-column groups (the FP8 output needs them)
FP8_OUT_TILES = {"fp8": [(128, 128), (256, 128), (64, 256)], "bf16": [(128, 128), (128, 256), (256, 128), (64, 256)]}


@pytest.fixture
def gemm_config():
    """Sets the developer setting LTX_KERNELS_GEMM_CONFIG (read by the library from the environment
    once, at load) for one test; the value before it is restored after."""
    before = lk.developer_setting("LTX_KERNELS_GEMM_CONFIG")
    yield lambda value: lk.set_developer_setting("LTX_KERNELS_GEMM_CONFIG", value)
    lk.set_developer_setting("LTX_KERNELS_GEMM_CONFIG", before)


def skip_without_kernel(device, op):
    if device == "cuda" and not has_cuda_kernel(op):
        pytest.skip(f"{op}: no CUDA kernel registered in this build")


# The one reason a forced "sm90" plan of a plain 128x128x128 bf16 GEMM on a compute capability
# 9.0 device may be refused (csrc/cuda/gemm/gemm_entry.cu, why_not): a build without the sm_90a
# kernels. Any other refusal or error is a bug and fails the test.
SM90_NOT_BUILT = "no kernel compiled for sm_90a in this build"


def need_sm90(op="fp8_blockwise_gemm"):
    """Skip unless the sm_90a kernel runs here (compute capability 9.0, sm_90a build)."""
    skip_without_kernel("cuda", op)
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the sm_90a kernel needs compute capability 9.0")
    a = torch.zeros(128, 128, device="cuda", dtype=torch.bfloat16)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("LTX_KERNELS_GEMM_CONFIG", raising=False)  # the probe asks about the default plan
        try:
            lk.bf16_gemm_backend(a, a, backend="sm90")
        except RuntimeError as e:
            if SM90_NOT_BUILT not in str(e):
                raise
            pytest.skip(str(e)[:300])


# ---- operands -------------------------------------------------------------------------------
def fp8_operands(m, n, k, device, layout="mn_major", leading=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = (m, k) if leading is None else (*leading, k)
    x = torch.randn(shape, generator=g) * torch.exp2(torch.randint(-3, 4, shape[:-1] + (1,), generator=g).float())
    w = torch.randn(n, k, generator=g) * 0.05
    a, sa = lk.quantize_fp8_per_token_group(x.to(device), 128, layout)
    b, sb = lk.quantize_fp8_block(w.to(device))
    return a, sa, b, sb


def bf16_operands(m, n, k, device, leading=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    shape = (m, k) if leading is None else (*leading, k)
    a = torch.randn(shape, generator=g).to(torch.bfloat16).to(device)
    b = (torch.randn(n, k, generator=g) * 0.05).to(torch.bfloat16).to(device)
    return a, b


def exact_fp8_operands(m, n, k, device):
    """Small-integer e4m3 codes and power-of-two scales in [1/4, 2]: every product and every sum
    (at most 20 significant bits here) is exact in fp32 and in Hopper's FP8 accumulator."""
    g = torch.Generator().manual_seed(7)
    a = torch.randint(-3, 4, (m, k), generator=g).float().to(F8)
    b = torch.randint(-3, 4, (n, k), generator=g).float().to(F8)
    sa = torch.exp2(torch.randint(-2, 2, (m, k // 128), generator=g).float())
    sb = torch.exp2(torch.randint(-2, 2, (-(-n // 128), k // 128), generator=g).float())
    sa_mn = lk.mn_major_scales(m, k // 128, device)
    sa_mn.copy_(sa.to(device))
    return a.to(device), sa_mn, b.to(device), sb.to(device)


def absdot_fp8(a, sa, b, sb):
    ab = (a.view(torch.uint8) & 0x7F).view(F8)
    bb = (b.view(torch.uint8) & 0x7F).view(F8)
    return ref.fp8_blockwise_gemm(ab, sa.abs(), bb, sb.abs())


def acc_bound(op, backend_used, absdot, k):
    if op == "fp8":
        return (2.0**-12 if backend_used in ("sm90", "sm90_cutlass", "skinny") else 2.0**-16) * absdot
    if backend_used == "sm90":
        return (k / 16 + 8) * 2.0**-24 * absdot
    if backend_used == "cpu":
        return 20 * 2.0**-24 * absdot
    return k * 2.0**-24 * absdot


# ---- failure localization ---------------------------------------------------------------------
def localize(bad, cfg):
    """Where the bad elements are, in units of the tile configuration that ran."""
    bad = bad.reshape(-1, bad.shape[-1]).cpu()
    idx = bad.nonzero()
    if idx.numel() == 0:
        return "no bad elements"
    msg = [f"{int(bad.sum())} / {bad.numel()} bad; rows {int(idx[:, 0].min())}..{int(idx[:, 0].max())}, "
           f"cols {int(idx[:, 1].min())}..{int(idx[:, 1].max())}"]
    bm, bn = cfg.get("bm", 0), cfg.get("bn", 0)
    if bm and bn:
        tiles = sorted({(int(r) // bm, int(c) // bn) for r, c in idx.tolist()})
        mt, nt = -(-bad.shape[0] // bm), -(-bad.shape[1] // bn)
        msg.append(f"config {cfg}: {len(tiles)} of {mt * nt} tiles bad, e.g. {tiles[:6]}")
        rin = sorted({int(r) % bm for r, _ in idx.tolist()})
        cin = sorted({int(c) % bn for _, c in idx.tolist()})
        msg.append(f"rows within tile {rin[0]}..{rin[-1]} ({len(rin)} distinct), cols within tile "
                   f"{cin[0]}..{cin[-1]} ({len(cin)} distinct)")
        if bm >= 128:
            msg.append(f"warpgroup row slices hit: {sorted({r // 64 for r in rin})}")
        cabs = sorted({int(c) // 128 for _, c in idx.tolist()})
        msg.append(f"128-column scale blocks hit: {cabs[:8]}")
    return "; ".join(msg)


def plan(op, device, a, b, sa=None, sb=None, **kw):
    if device == "cpu":
        return {"backend": "cpu"}
    return lk.gemm_config(op, a, b, sa, sb, **kw)


# ---- the checks -------------------------------------------------------------------------------
def check16(out, want, e_y, slope, what, cfg):
    got = out.double()
    want = want.to(got.device)
    tol = (R16[out.dtype] + 2.0**-22) * want.abs() + slope * e_y.to(got.device)
    bad = (got - want).abs() > tol
    assert not bad.any(), f"{what}: {localize(bad, cfg)}; e.g. got {got[bad][:4].tolist()} want {want[bad][:4].tolist()}"


def check_fp8_out(q, s, v_ref, e_y, slope, what, cfg):
    """q e4m3 [M, N], s [M, N/128] against the float64 reference value v_ref [M, N]."""
    m, n = v_ref.shape
    dev = q.device
    v_ref = v_ref.to(dev)
    le = slope * e_y.to(dev)
    s_rows = s.repeat_interleave(128, 1)
    deq = ref.fp8_decode(q).to(dev).double() * s_rows.double()
    tol = 2.0**-4 * (v_ref.abs() + le) + 2.0**-10 * s_rows.double() + le
    bad = (deq - v_ref).abs() > tol
    assert not bad.any(), f"{what}: FP8 values {localize(bad, cfg)}"
    s_ref = v_ref.abs().reshape(m, n // 128, 128).amax(-1) / 448.0
    s_tol = le.reshape(m, n // 128, 128).amax(-1) / 448.0 + 2.0**-23 * s_ref
    bad_s = (s.double() - s_ref).abs() > s_tol
    assert not bad_s.any(), f"{what}: FP8 scales {localize(bad_s.repeat_interleave(128, 1), cfg)}"


def dev_backends(device):
    return ["auto", "cpu", "torch"] if device == "cpu" else ["auto", "sm90", "torch"]


# Why a forced "sm90" may refuse the calls of these tests (all of them 16-byte aligned, N a
# multiple of 8 (of 128 for the FP8 output), K of 128 for FP8, shapes some compiled tile takes):
# the device is not compute capability 9.0, or the build has no sm_90a kernels. Any other refusal
# of a call the kernel documents as its own is a bug and fails the test.
SM90_UNAVAILABLE = ("the sm_90a kernel needs compute capability 9.0", SM90_NOT_BUILT)


def skip_forced(fn):
    try:
        return fn()
    except RuntimeError as e:
        if "cannot run this call" in str(e) and any(r in str(e) for r in SM90_UNAVAILABLE):
            pytest.skip(str(e)[:300])
        raise


def run_gemm(op, device, m, n, k, bias, backend, epilogue, out_dtype, **call_kw):
    """One `op` GEMM ("fp8" or "bf16") of fresh [m, k] x [n, k] operands with `epilogue` on `backend`
    (a forced "sm90" where no sm_90a kernel can run skips the test); `call_kw` go to the GEMM call only.
    Returns (its result, the plan it ran, the float64 reference A B^T + bias, the bound on the
    kernel's accumulation error)."""
    kw = dict(out_dtype=out_dtype, backend=backend, epilogue=epilogue)
    if op == "fp8":
        a, sa, b, sb = fp8_operands(m, n, k, device)
        got = skip_forced(lambda: lk.fp8_blockwise_gemm(a, sa, b, sb, bias, **kw, **call_kw))
        used = plan("fp8_blockwise_gemm", device, a, b, sa, sb, bias=bias, **kw)
        y = ref.fp8_blockwise_gemm(a, sa, b, sb, bias)
        return got, used, y, acc_bound("fp8", used["backend"], absdot_fp8(a, sa, b, sb), k)
    a, b = bf16_operands(m, n, k, device)
    got = skip_forced(lambda: lk.bf16_gemm(a, b, bias, **kw, **call_kw))
    used = plan("bf16_gemm", device, a, b, bias=bias, **kw)
    return got, used, ref.bf16_gemm(a, b, bias), acc_bound("bf16", used["backend"], ref.bf16_gemm(a.abs(), b.abs()), k)

# =============================================================================================
# Epilogues on every backend
# =============================================================================================
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["fp8", "bf16"])
@pytest.mark.parametrize("epilogue", ["none", "gelu_tanh"])
@pytest.mark.parametrize("bias_kind", [None, "fp32", "out"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16])
def test_epilogue_activation(device, op, epilogue, bias_kind, out_dtype):
    skip_without_kernel(device, "fp8_blockwise_gemm" if op == "fp8" else "bf16_gemm")
    m, n, k = (77, 136, 384) if device == "cpu" else (333, 520, 1152)
    bias = None
    if bias_kind:
        bias = torch.randn(n, device=device).to(torch.float32 if bias_kind == "fp32" else out_dtype)
    for backend in dev_backends(device):
        out, used, y, e_y = run_gemm(op, device, m, n, k, bias, backend, epilogue, out_dtype)
        assert out.shape == (m, n) and out.dtype == out_dtype
        check16(out, ref.gemm_epilogue(y, epilogue), e_y, SLOPE[epilogue], f"{op} {device}/{backend} {epilogue}", used)


def gated_residual_inputs(device, gate_kind, B, tokens, n):
    """The gated residual's operands: bias fp32 [n], h bf16 [B, tokens, n] and the gate in bf16 by
    kind: one per sample ("sample" [B, n], "sample3d" [B, 1, n]) or per token ([B, tokens, n])."""
    bias = torch.randn(n, device=device)
    h = torch.randn(B, tokens, n, device=device).to(torch.bfloat16)
    gate = {"sample": torch.randn(B, n), "sample3d": torch.randn(B, 1, n), "token": torch.randn(B, tokens, n)}[gate_kind]
    return bias, h, gate.to(device).to(torch.bfloat16)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["fp8", "bf16"])
@pytest.mark.parametrize("gate_kind", ["sample", "sample3d", "token"])
@pytest.mark.parametrize("tokens", [300, 5])
def test_epilogue_gated_residual(device, op, gate_kind, tokens):
    """out = h + gate * (acc + bias): per-sample gates whose samples straddle tiles (300 tokens) or
    fill a tile with many samples (5 tokens), per-token gates; then in place (out is h)."""
    skip_without_kernel(device, "fp8_blockwise_gemm" if op == "fp8" else "bf16_gemm")
    B = 3
    n, k = (136, 256) if device == "cpu" else (392, 768)
    if device == "cpu":
        tokens = min(tokens, 40)
    bias, h, gate = gated_residual_inputs(device, gate_kind, B, tokens, n)
    for backend in dev_backends(device):
        if op == "fp8":
            a, sa, b, sb = fp8_operands(None, n, k, device, leading=(B, tokens))
            run = lambda out=None: lk.fp8_blockwise_gemm(a, sa, b, sb, bias, out=out, backend=backend,
                                                         epilogue="gated_residual", residual=h, gate=gate)
            used = plan("fp8_blockwise_gemm", device, a, b, sa, sb, bias=bias, backend=backend,
                        epilogue="gated_residual", residual=h, gate=gate)
            y = ref.fp8_blockwise_gemm(a, sa, b, sb, bias)
            e_y = acc_bound("fp8", used["backend"], absdot_fp8(a, sa, b, sb), k)
        else:
            a, b = bf16_operands(None, n, k, device, leading=(B, tokens))
            run = lambda out=None: lk.bf16_gemm(a, b, bias, out=out, backend=backend, epilogue="gated_residual",
                                                residual=h, gate=gate)
            used = plan("bf16_gemm", device, a, b, bias=bias, backend=backend, epilogue="gated_residual",
                        residual=h, gate=gate)
            y = ref.bf16_gemm(a, b, bias)
            e_y = acc_bound("bf16", used["backend"], ref.bf16_gemm(a.abs(), b.abs()), k)
        out = skip_forced(run)
        want = ref.gemm_epilogue(y, "gated_residual", h, gate)
        gabs = gate.abs().double().reshape(B, -1, n).expand(B, tokens, n)  # the slope |gate| per element
        check16(out, want, e_y * gabs.to(e_y.device), 1.0, f"gated {op} {device}/{backend} {gate_kind}", used)
        # in place: out is h itself
        h2 = h.clone()
        if op == "fp8":
            got = lk.fp8_blockwise_gemm(a, sa, b, sb, bias, out=h2, backend=backend, epilogue="gated_residual",
                                        residual=h2, gate=gate)
        else:
            got = lk.bf16_gemm(a, b, bias, out=h2, backend=backend, epilogue="gated_residual", residual=h2, gate=gate)
        assert got.data_ptr() == h2.data_ptr()
        assert torch.equal(h2, out), f"in place differs from out of place ({device}/{backend})"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["fp8", "bf16"])
@pytest.mark.parametrize("epilogue", ["none", "gelu_tanh"])
@pytest.mark.parametrize("layout", ["row", "mn_major"])
def test_fp8_output(device, op, epilogue, layout):
    """The epilogue's fp32 value quantized per token per 128 columns into (q, scales); fp32 bias
    (row layout) or bf16 bias (mn_major)."""
    skip_without_kernel(device, "fp8_blockwise_gemm" if op == "fp8" else "bf16_gemm")
    m, n, k = (45, 256, 256) if device == "cpu" else (333, 640, 1024)
    bias = torch.randn(n, device=device)
    if layout == "mn_major":
        bias = bias.to(torch.bfloat16)
    for backend in dev_backends(device):
        (q, s), used, y, e_y = run_gemm(op, device, m, n, k, bias, backend, epilogue, F8, scale_layout=layout)
        assert q.dtype == F8 and q.shape == (m, n) and s.shape == (m, n // 128)
        assert (s.stride() == (n // 128, 1)) if layout == "row" else (s.stride(0) == 1)
        check_fp8_out(q, s, ref.gemm_epilogue(y, epilogue), e_y, SLOPE[epilogue], f"fp8 out {op} {device}/{backend}",
                      used)
        # the next FP8 GEMM takes (q, s) as its activations
        w2 = torch.randn(64, n, device=device) * 0.05
        b2, sb2 = lk.quantize_fp8_block(w2)
        out2 = lk.fp8_blockwise_gemm(q, s, b2, sb2)
        assert torch.isfinite(out2.float()).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("epilogue", ["none", "gelu_tanh"])
def test_fp8_output_bit_exact(device, epilogue):
    """Exact data: the kernel's fp32 value equals the float64 reference rounded to fp32, so q and
    the scales must be bit-identical to the reference quantizer applied to it (gelu_tanh: its fp32
    evaluation may differ by an ulp or two, so codes within one e4m3 step); 16-bit outputs bit-identical."""
    skip_without_kernel(device, "fp8_blockwise_gemm")
    m, n, k = (40, 256, 384) if device == "cpu" else (300, 512, 1280)
    a, sa, b, sb = exact_fp8_operands(m, n, k, device)
    bias = (torch.randint(-8, 9, (n,)).float() / 4).to(device)  # dyadic: exact sums
    y = ref.fp8_blockwise_gemm(a, sa, b, sb, bias)
    v32 = ref.gemm_epilogue(y, epilogue).float().cpu()
    want_q, want_s = ref.quantize_fp8_per_token_group(v32, 128)
    for backend in dev_backends(device):
        q, s = skip_forced(lambda: lk.fp8_blockwise_gemm(a, sa, b, sb, bias, out_dtype=F8, backend=backend,
                                                         epilogue=epilogue))
        used = plan("fp8_blockwise_gemm", device, a, b, sa, sb, bias=bias, out_dtype=F8, backend=backend,
                    epilogue=epilogue)
        qc, sc = q.cpu().view(torch.uint8), s.cpu()
        if epilogue == "none":
            bad = qc != want_q.view(torch.uint8)
            assert not bad.any(), f"{device}/{backend}: q not bit-identical: {localize(bad, used)}"
            assert torch.equal(sc, want_s), f"{device}/{backend}: scales not bit-identical"
            out16 = lk.fp8_blockwise_gemm(a, sa, b, sb, bias, backend=backend)
            assert torch.equal(out16.cpu(), y.float().to(torch.bfloat16).cpu()), f"{device}/{backend}: bf16 out not exact"
        else:
            # codes as signed e4m3 ordinals: within one step
            def ordinal(c):
                c = c.to(torch.int32)
                return torch.where(c >= 128, -(c - 128), c)

            assert torch.allclose(sc, want_s, rtol=2.0**-20, atol=0)
            d = (ordinal(qc) - ordinal(want_q.view(torch.uint8))).abs()
            assert int(d.max()) <= 1, f"{device}/{backend}: codes differ by {int(d.max())}: {localize(d > 1, used)}"


# =============================================================================================
# Every compiled tile configuration, forced, on ragged shapes (CUDA, sm_90a)
# =============================================================================================
CFG_SUFFIX = [":c1", ":c2", ":c1:s7", ":c2:s8:g2", ":c2:g3"]
CFG_SUFFIX_FP8 = CFG_SUFFIX


@CUDA
@pytest.mark.parametrize("tile", FP8_TILES, ids=lambda t: f"{t[0]}x{t[1]}")
@pytest.mark.parametrize("suffix", CFG_SUFFIX_FP8)
def test_forced_tiles_fp8(tile, suffix, gemm_config):
    """Ragged M, N, K (none multiples of the tile; more K blocks than pipeline stages), bias,
    cluster 1 and 2, few persistent CTAs (many tiles each), odd raster groups."""
    need_sm90()
    bm, bn = tile
    m, n, k = 3 * bm + 17, 2 * bn + 24, 128 * 11
    a, sa, b, sb = fp8_operands(m, n, k, "cuda", layout="row" if "s7" in suffix else "mn_major")
    bias = torch.randn(n, device="cuda")
    gemm_config(f"{bm}x{bn}{suffix}")
    cfg = lk.gemm_config("fp8_blockwise_gemm", a, b, sa, sb, bias=bias, backend="sm90")
    assert (cfg["bm"], cfg["bn"]) == tile and cfg["backend"] == "sm90"
    out = torch.full((m, n + 16), float("nan"), device="cuda", dtype=torch.bfloat16)
    lk.fp8_blockwise_gemm(a, sa, b, sb, bias, out=out[:, :n], backend="sm90")
    assert torch.isnan(out[:, n:].float()).all(), "wrote past N"
    y = ref.fp8_blockwise_gemm(a, sa, b, sb, bias)
    check16(out[:, :n], y, acc_bound("fp8", "sm90", absdot_fp8(a, sa, b, sb), k), 1.0, f"fp8 tile {tile}{suffix}", cfg)


@CUDA
@pytest.mark.parametrize("tile", BF16_TILES, ids=lambda t: f"{t[0]}x{t[1]}")
@pytest.mark.parametrize("suffix", CFG_SUFFIX)
def test_forced_tiles_bf16(tile, suffix, gemm_config):
    need_sm90("bf16_gemm")
    bm, bn = tile
    m, n, k = 3 * bm + 17, 2 * bn + 24, 64 * 11 + 40  # K not a multiple of the 64-element stage
    a, b = bf16_operands(m, n, k, "cuda")
    bias = torch.randn(n, device="cuda").to(torch.bfloat16)
    gemm_config(f"{bm}x{bn}{suffix}")
    cfg = lk.gemm_config("bf16_gemm", a, b, bias=bias, backend="sm90")
    assert (cfg["bm"], cfg["bn"]) == tile
    out = torch.full((m, n + 16), float("nan"), device="cuda", dtype=torch.bfloat16)
    lk.bf16_gemm(a, b, bias, out=out[:, :n], backend="sm90")
    assert torch.isnan(out[:, n:].float()).all(), "wrote past N"
    y = ref.bf16_gemm(a, b, bias)
    check16(out[:, :n], y, acc_bound("bf16", "sm90", ref.bf16_gemm(a.abs(), b.abs()), k), 1.0,
            f"bf16 tile {tile}{suffix}", cfg)


@CUDA
@pytest.mark.parametrize("op", ["fp8", "bf16"])
@pytest.mark.parametrize("tile_index", range(4))
@pytest.mark.parametrize("cluster", [1, 2])
def test_forced_tiles_every_epilogue(op, tile_index, cluster, gemm_config):
    """Each tile with gelu_tanh, the gated residual (per sample straddling tiles) and, where the
    tile allows it, the FP8 output (gelu_tanh + quantization)."""
    need_sm90("fp8_blockwise_gemm" if op == "fp8" else "bf16_gemm")
    tiles = FP8_TILES if op == "fp8" else BF16_TILES
    if tile_index >= len(tiles):
        pytest.skip("fewer tiles")
    picks = tiles[tile_index::4]
    for bm, bn in picks:
        B, tokens = 2, 2 * bm - 40
        n = 3 * 128
        k = 128 * 9 if op == "fp8" else 64 * 9 + 8
        if op == "fp8":
            a, sa, b, sb = fp8_operands(None, n, k, "cuda", leading=(B, tokens))
            y = ref.fp8_blockwise_gemm(a, sa, b, sb)
            e_y = acc_bound("fp8", "sm90", absdot_fp8(a, sa, b, sb), k)
            f = lambda **kw: lk.fp8_blockwise_gemm(a, sa, b, sb, backend="sm90", **kw)
        else:
            a, b = bf16_operands(None, n, k, "cuda", leading=(B, tokens))
            y = ref.bf16_gemm(a, b)
            e_y = acc_bound("bf16", "sm90", ref.bf16_gemm(a.abs(), b.abs()), k)
            f = lambda **kw: lk.bf16_gemm(a, b, backend="sm90", **kw)
        gemm_config(f"{bm}x{bn}:c{cluster}")
        cfg = {"bm": bm, "bn": bn, "cluster": cluster}
        check16(f(epilogue="gelu_tanh"), ref.gemm_epilogue(y, "gelu_tanh"), e_y, 1.13, f"{op} {bm}x{bn} gelu", cfg)
        h = torch.randn(B, tokens, n, device="cuda").to(torch.bfloat16)
        g = torch.randn(B, n, device="cuda").to(torch.bfloat16)
        got = f(epilogue="gated_residual", residual=h, gate=g)
        gs = g.abs().double().unsqueeze(1).expand(B, tokens, n)
        check16(got, ref.gemm_epilogue(y, "gated_residual", h, g), e_y * gs, 1.0, f"{op} {bm}x{bn} gated", cfg)
        if (bm, bn) in FP8_OUT_TILES[op]:
            q, s = f(epilogue="gelu_tanh", out_dtype=F8)
            check_fp8_out(q.reshape(-1, n), s, ref.gemm_epilogue(y, "gelu_tanh").reshape(-1, n), e_y.reshape(-1, n),
                          1.13, f"{op} {bm}x{bn} fp8 out", cfg)
        else:
            with pytest.raises(RuntimeError, match="cannot run this call"):
                f(epilogue="gelu_tanh", out_dtype=F8)


@CUDA
def test_auto_configs_and_heuristic():
    """The heuristic's picks at LTX shapes: cuBLASLt for a plain FP8 GEMM; for ours a
    compiled tile, the FP8 output only with 128-column warpgroup slices, 128x192 as a 2-CTA cluster
    wherever it fills a wave (measured; gemm/heuristics.h), every other pick without a cluster."""
    need_sm90()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for m, n, k in [(5376, 2048, 2048), (5376, 8192, 2048), (10752, 2048, 8192), (8192, 8192, 8192), (300, 2048, 2048)]:
        a = torch.empty(m, k, device="cuda", dtype=F8)
        b = torch.empty(n, k, device="cuda", dtype=F8)
        sa = lk.mn_major_scales(m, k // 128, "cuda")
        for out_dtype in (torch.bfloat16, F8):
            cfg = lk.gemm_config("fp8_blockwise_gemm", a, b, sa, out_dtype=out_dtype)
            # a plain FP8 GEMM runs cuBLASLt's blockwise GEMM (heuristics::prefer_cublaslt); ours runs
            # what only it fuses
            if out_dtype != F8:
                assert cfg["backend"] == "cublaslt", cfg
                cfg = lk.gemm_config("fp8_blockwise_gemm", a, b, sa, out_dtype=out_dtype, backend="sm90")
            assert cfg["backend"] == "sm90"
            tile = (cfg["bm"], cfg["bn"])
            assert tile in FP8_TILES, cfg
            if out_dtype == F8:
                assert tile in FP8_OUT_TILES["fp8"], cfg
            preferred = tile == (128, 192) and -(-m // 128) * -(-n // 192) >= sms
            assert cfg["cluster"] == (2 if preferred else 1), cfg
            print(m, n, k, out_dtype, cfg, sms)


# =============================================================================================
# bf16_gemm specifics, QKV, strides, empty, errors
# =============================================================================================
@CUDA
@pytest.mark.parametrize("mnk", [(5376, 2048, 2048), (1000, 1536, 704), (64, 4096, 1024)])
def test_bf16_gemm_matches_cublas(mnk):
    """Against F.linear (cuBLAS): both approximate the float64 reference; they may differ by both
    bounds together."""
    skip_without_kernel("cuda", "bf16_gemm")
    m, n, k = mnk
    a, b = bf16_operands(m, n, k, "cuda")
    bias = torch.randn(n, device="cuda").to(torch.bfloat16)
    ours = lk.bf16_gemm(a, b, bias)
    theirs = torch.nn.functional.linear(a, b, bias)
    y = ref.bf16_gemm(a, b, bias)
    e_y = acc_bound("bf16", "torch", ref.bf16_gemm(a.abs(), b.abs()), k)  # the looser of the two
    tol = 2 * (2.0**-8 * y.abs() + e_y) + 2.0**-8 * bias.double().abs()  # cuBLAS adds a bf16-rounded sum
    assert ((ours.double() - theirs.double()).abs() <= tol).all()


@pytest.mark.parametrize("device", DEVICES)
def test_fused_qkv_is_one_gemm_with_views(device):
    skip_without_kernel(device, "fp8_blockwise_gemm")
    hdim, k, m = 256, 256, 70
    ws = [torch.randn(hdim, k, device=device) * 0.05 for _ in range(3)]
    bs = [torch.randn(hdim, device=device) for _ in range(3)]
    wqkv = torch.cat(ws, 0)
    b, sb = lk.quantize_fp8_block(wqkv)
    x = torch.randn(2, m // 2, k, device=device)
    a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major" if device == "cuda" else "row")
    out = lk.fp8_blockwise_gemm(a, sa, b, sb, torch.cat(bs))
    q, kk, v = out.split(hdim, dim=-1)
    assert q.data_ptr() == out.data_ptr() and kk.data_ptr() == out.data_ptr() + hdim * out.element_size()
    y = ref.fp8_blockwise_gemm(a, sa, b, sb, torch.cat(bs))
    used = lk.fp8_gemm_backend(a, b, sa, sb) if device == "cuda" else "cpu"
    e_y = acc_bound("fp8", used, absdot_fp8(a, sa, b, sb), k)
    for i, part in enumerate((q, kk, v)):
        sl = slice(i * hdim, (i + 1) * hdim)
        check16(part, y[..., sl], e_y[..., sl], 1.0, f"qkv part {i}", {})


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["fp8", "bf16"])
def test_strided_misaligned_sentinel(device, op):
    skip_without_kernel(device, "fp8_blockwise_gemm" if op == "fp8" else "bf16_gemm")
    m, n, k = 65, 136, 384
    if op == "fp8":
        a, sa, b, sb = fp8_operands(m, n, k, device, layout="row")
        f = lambda a_, b_, **kw: lk.fp8_blockwise_gemm(a_, sa, b_, sb, **kw)
        y = ref.fp8_blockwise_gemm(a, sa, b, sb)
        used = lk.fp8_gemm_backend(a, b, sa, sb) if device == "cuda" else "cpu"
        e_y = acc_bound("fp8", used, absdot_fp8(a, sa, b, sb), k)
    else:
        a, b = bf16_operands(m, n, k, device)
        f = lambda a_, b_, **kw: lk.bf16_gemm(a_, b_, **kw)
        y = ref.bf16_gemm(a, b)
        e_y = acc_bound("bf16", "torch", ref.bf16_gemm(a.abs(), b.abs()), k)
    want = f(a, b, epilogue="gelu_tanh")
    check16(want, ref.gemm_epilogue(y, "gelu_tanh"), e_y, 1.13, f"{op} plain", {})
    # padded rows of a and b; sentinel-filled, row-padded out
    apad = torch.zeros(m, k + 64, device=device, dtype=a.dtype)
    apad[:, :k] = a
    bpad = torch.zeros(n, k + 32, device=device, dtype=b.dtype)
    bpad[:, :k] = b
    big = torch.full((m, n + 24), float("nan"), device=device, dtype=torch.bfloat16)
    f(apad[:, :k], bpad[:, :k], out=big[:, :n], epilogue="gelu_tanh")
    assert torch.isnan(big[:, n:].float()).all()
    check16(big[:, :n], ref.gemm_epilogue(y, "gelu_tanh"), e_y, 1.13, f"{op} padded", {})
    # misaligned a (1 element offset): "auto" stays right (it falls back where a kernel cannot)
    flat = torch.zeros(m * k + 1, device=device, dtype=a.dtype)
    flat[1:] = a.reshape(-1)
    amis = flat[1:].view(m, k)
    got = f(amis, b, epilogue="gelu_tanh")
    check16(got, ref.gemm_epilogue(y, "gelu_tanh"), e_y, 1.13, f"{op} misaligned", {})
    if device == "cuda":
        try:
            f(amis, b, epilogue="gelu_tanh", backend="sm90")
        except RuntimeError as e:
            assert "cannot run this call" in str(e) and "16-byte aligned" in str(e)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_and_k0(device):
    skip_without_kernel(device, "bf16_gemm")
    a = torch.zeros(0, 64, device=device, dtype=torch.bfloat16)
    b = torch.zeros(16, 64, device=device, dtype=torch.bfloat16)
    assert lk.bf16_gemm(a, b).shape == (0, 16)
    q, s = lk.bf16_gemm(torch.zeros(0, 64, device=device, dtype=torch.bfloat16), torch.zeros(128, 64, device=device,
                        dtype=torch.bfloat16), out_dtype=F8)
    assert q.shape == (0, 128) and s.shape == (0, 1)
    # K = 0: the sum is empty, the epilogue still applies to the bias
    bias = torch.randn(16, device=device)
    got = lk.bf16_gemm(torch.zeros(3, 0, device=device, dtype=torch.bfloat16),
                       torch.zeros(16, 0, device=device, dtype=torch.bfloat16), bias, epilogue="gelu_tanh")
    want = ref.gemm_epilogue(bias.double().expand(3, 16), "gelu_tanh")
    check16(got, want, torch.zeros_like(want), 1.0, "K = 0", {})


@pytest.mark.parametrize("device", DEVICES)
def test_errors(device, gemm_config):
    skip_without_kernel(device, "fp8_blockwise_gemm")
    a, sa, b, sb = fp8_operands(4, 128, 256, device)
    x, w = bf16_operands(4, 128, 64, device)
    h = torch.zeros(4, 128, device=device, dtype=torch.bfloat16)
    f, g = lk.fp8_blockwise_gemm, lk.bf16_gemm
    bad = [
        ("fp8_blockwise_gemm", lambda: f(a, sa, b, sb, epilogue="relu"), "epilogue must be 'none', 'gelu_tanh' or 'gated_residual'"),
        ("fp8_blockwise_gemm", lambda: f(a, sa, b, sb, epilogue="gated_residual"), "needs residual and gate"),
        ("fp8_blockwise_gemm", lambda: f(a, sa, b, sb, residual=h, gate=h), "only read by epilogue='gated_residual'"),
        ("fp8_blockwise_gemm", lambda: f(a, sa, b, sb, epilogue="gated_residual", residual=h.half(), gate=h),
         "residual must have out's shape and dtype"),
        ("fp8_blockwise_gemm", lambda: f(a, sa, b, sb, epilogue="gated_residual", residual=h, gate=h[:, :64]),
         "gate must be [B, N]"),
        ("fp8_blockwise_gemm", lambda: f(a, sa, b, sb, epilogue="gated_residual", residual=h, gate=h.half()),
         "gate must have out's dtype"),
        ("fp8_blockwise_gemm", lambda: f(a, sa, b[:120], sb, out_dtype=F8), "N must be a multiple of 128"),
        ("fp8_blockwise_gemm", lambda: f(a, sa, b, sb, out_dtype=F8, epilogue="gated_residual", residual=h, gate=h),
         "the gated residual writes bfloat16 or float16"),
        ("fp8_blockwise_gemm", lambda: f(a, sa, b, sb, out=torch.empty(4, 128, device=device, dtype=F8),
                                         out_scales=torch.empty(4, 2, device=device)), "out_scales must have shape [M, N / 128] = [4, 1]"),
        ("fp8_blockwise_gemm", lambda: f(a, sa, b, sb, out=h, out_scales=torch.empty(4, 1, device=device)),
         "out_scales is only written for an FP8"),
        ("fp8_blockwise_gemm", lambda: f(a, sa, b, sb, torch.ones(128, device=device, dtype=torch.float16)),
         "bias must be float32 or out's dtype"),
        ("bf16_gemm", lambda: g(x.float(), w), "a must be bfloat16"),
        ("bf16_gemm", lambda: g(x, w.half()), "b must be bfloat16"),
        ("bf16_gemm", lambda: g(x, w[:, :32]), "b must have shape [N, K] with K = 64"),
        ("bf16_gemm", lambda: g(x, w, backend="sm89"), "backend must be 'auto', 'sm90', 'torch' or 'cpu'"),
        ("bf16_gemm", lambda: g(x, w, out=torch.empty(4, 128, device=device, dtype=torch.bfloat16).t()),
         "out must have shape"),
    ]
    if device == "cpu":
        bad.append(("bf16_gemm", lambda: g(x, w, backend="sm90"), "backend 'sm90' cannot run this call (the tensors are on the CPU)"))
    for op, fn, msg in bad:
        with pytest.raises(RuntimeError, match=f"ltx_kernels.{op}: .*" + re.escape(msg)):
            fn()
    for bad_cfg in ("128by160", "128x192:p1", "128x192:p9", "128x192:q2", "128x192:c3", "128x192:m2"):
        gemm_config(bad_cfg)
        with pytest.raises(RuntimeError, match="LTX_KERNELS_GEMM_CONFIG must be"):
            f(a, sa, b, sb)
    if device == "cuda" and torch.cuda.get_device_capability() == (9, 0):
        gemm_config("128x176")
        try:
            f(a, sa, b, sb, backend="sm90")
        except RuntimeError as e:
            assert "not a compiled tile configuration" in str(e) or "no kernel compiled" in str(e), str(e)
        else:
            raise AssertionError("an uncompiled tile configuration must be refused")


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    """Fake implementation, AOT dispatch and autograd registration of bf16_gemm (the FP8 op and
    torch.compile are covered in test_gemm.py)."""
    skip_without_kernel(device, "bf16_gemm")
    utils = ("test_faketensor", "test_aot_dispatch_dynamic", "test_autograd_registration")
    a, b = bf16_operands(7, 128, 64, device)
    out = torch.empty(7, 128, device=device, dtype=torch.bfloat16)
    torch.library.opcheck(lk.ops.bf16_gemm.default, (out, None, a, b, None, "gelu_tanh", None, None, "auto"),
                          test_utils=utils)


# =============================================================================================
# Layers: FP8BlockwiseLinear / FusedLinear with the epilogues
# =============================================================================================
@pytest.mark.parametrize("device", DEVICES)
def test_fp8_linear_epilogues_feed_forward_chain(device):
    """Feed-forward up (gelu_tanh, FP8 output) -> down (gated residual, in place) as the layers
    run it, against the same math on the layers' own GEMM without fusion."""
    skip_without_kernel(device, "fp8_blockwise_gemm")
    torch.manual_seed(0)
    B, S, C, Hd = 2, 37, 256, 512
    up = torch.nn.Linear(C, Hd).to(device).to(torch.bfloat16)
    down = torch.nn.Linear(Hd, C).to(device).to(torch.bfloat16)
    x = torch.randn(B, S, C, device=device).to(torch.bfloat16)
    h = torch.randn(B, S, C, device=device).to(torch.bfloat16)
    g = torch.randn(B, C, device=device).to(torch.bfloat16)
    fup = lk.FP8BlockwiseLinear.from_linear(up, epilogue="gelu_tanh", fp8_output=True)
    fdown = lk.FP8BlockwiseLinear.from_linear(down, epilogue="gated_residual")
    q, s = fup(x)
    assert q.dtype == F8 and q.shape == (B, S, Hd) and s.shape == (B * S, Hd // 128)
    h_new = fdown((q, s), residual=h, gate=g)
    assert h_new.shape == h.shape and h_new.dtype == torch.bfloat16
    # unfused, same layers: plain up, gelu in fp32, quantize, plain down, gated residual in fp32
    pup = lk.FP8BlockwiseLinear.from_linear(up)
    pdown = lk.FP8BlockwiseLinear.from_linear(down)
    y_up = ref.gelu_tanh(pup(x).float()).float()  # the fp32 value the FP8 output quantizes
    y_down = pdown(lk.quantize_fp8_per_token_group(y_up, 128, "row")).float()
    want = h.float() + g.float().unsqueeze(1) * y_down
    # the fused chain quantizes gelu of the fp32 GEMM value (not of its bf16 rounding): the FP8
    # codes may move by one step, i.e. up to 2^-3 relative per element of the down GEMM's input;
    # over Hd terms that is within 2^-3 of sum |a||b|, times |gate|
    absdown = (ref.fp8_decode(q).abs().double().reshape(-1, Hd) * s.double().repeat_interleave(128, 1)) @ \
        down.weight.double().abs().t()
    tol = 2.0**-7 * want.abs().double() + 2.0**-3 * absdown.reshape(B, S, C) * g.double().abs().unsqueeze(1) + 1e-3
    assert ((h_new.double() - want.double()).abs() <= tol).all()
    # in place on the residual stream
    h2 = h.clone()
    got = fdown((q, s), residual=h2, gate=g, out=h2)
    assert got.data_ptr() == h2.data_ptr() and torch.equal(h2, h_new)
    assert "epilogue=gelu_tanh" in repr(fup) and "fp8_output=True" in repr(fup)
    with pytest.raises(ValueError, match="epilogue must be one of"):
        fup.set_epilogue("relu")
    with pytest.raises(RuntimeError, match="needs residual and gate"):
        fdown((q, s))


@pytest.mark.parametrize("device", DEVICES)
def test_layers_gated_residual_per_call(device):
    """A layer without an epilogue applies the gated residual for a call that passes residual and
    gate: bit for bit the layer built with epilogue "gated_residual". Half of the pair, a pair
    with another epilogue or with FP8 output, and a pair for the FP6 layer are errors, never
    ignored."""
    skip_without_kernel(device, "fp8_blockwise_gemm")
    torch.manual_seed(3)
    B, S, C, N = 2, 21, 256, 384
    lin = torch.nn.Linear(C, N).to(device).to(torch.bfloat16)
    x = torch.randn(B, S, C, device=device).to(torch.bfloat16)
    h = torch.randn(B, S, N, device=device).to(torch.bfloat16)
    g = torch.randn(B, N, device=device).to(torch.bfloat16)
    plain = lk.FP8BlockwiseLinear.from_linear(lin)
    gated = lk.FP8BlockwiseLinear.from_linear(lin, epilogue="gated_residual")
    want = gated(x, residual=h, gate=g)
    got = plain(x, residual=h, gate=g)
    assert torch.equal(got, want) and not torch.equal(got, plain(x))
    with pytest.raises(RuntimeError, match="needs residual and gate"):
        plain(x, residual=h)
    with pytest.raises(ValueError, match="does not combine with"):
        lk.FP8BlockwiseLinear.from_linear(lin, epilogue="gelu_tanh")(x, residual=h, gate=g)
    with pytest.raises(ValueError, match="not FP8"):
        lk.FP8BlockwiseLinear.from_linear(lin, fp8_output=True)(x, residual=h, gate=g)
    with pytest.raises(ValueError, match="fuses no epilogue"):
        lk.FP6BlockwiseLinear.from_linear(lin)(x, residual=h, gate=g)
    fused, fused_g = lk.FusedLinear.from_linear(lin), lk.FusedLinear.from_linear(lin, epilogue="gated_residual")
    assert torch.equal(fused(x, residual=h, gate=g), fused_g(x, residual=h, gate=g))
    with pytest.raises(RuntimeError, match="needs residual and gate"):
        fused(x, gate=g)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("epilogue", ["none", "gelu_tanh", "gated_residual"])
def test_fused_linear(device, epilogue):
    skip_without_kernel(device, "bf16_gemm")
    torch.manual_seed(1)
    B, S, C, N = 2, 19, 128, 256
    lin = torch.nn.Linear(C, N).to(device).to(torch.bfloat16)
    layer = lk.FusedLinear.from_linear(lin, epilogue=epilogue)
    x = torch.randn(B, S, C, device=device).to(torch.bfloat16)
    h = torch.randn(B, S, N, device=device).to(torch.bfloat16)
    g = torch.randn(B, N, device=device).to(torch.bfloat16)
    kw = {"residual": h, "gate": g} if epilogue == "gated_residual" else {}
    got = layer(x, **kw)
    y = ref.bf16_gemm(x, lin.weight, lin.bias)
    want = ref.gemm_epilogue(y, epilogue, h, g)
    absdot = ref.bf16_gemm(x.abs(), lin.weight.abs())
    # fused: the bf16 kernel's bound; the fallback (CPU, other GPUs) rounds x W^T to bf16 before the
    # bias (F.linear): one more 2^-8 |x W^T| <= 2^-8 sum |x||w|
    e_y = acc_bound("bf16", "torch", absdot, C) + 2.0**-8 * absdot
    slope = g.abs().double().unsqueeze(1) if epilogue == "gated_residual" else SLOPE[epilogue]
    check16(got, want, e_y * slope if epilogue == "gated_residual" else e_y, 1.0 if epilogue == "gated_residual" else slope,
            f"FusedLinear {epilogue}", {})


@pytest.mark.parametrize("device", DEVICES)
def test_fused_linear_fp8_output(device):
    """FusedLinear(gelu_tanh, fp8_output) -> (q, s) that dequantize to gelu(x W^T + b) within the
    FP8 bound, with the bf16 bias of an nn.Linear."""
    skip_without_kernel(device, "bf16_gemm")
    torch.manual_seed(2)
    lin = torch.nn.Linear(128, 256).to(device).to(torch.bfloat16)
    x = torch.randn(3, 50, 128, device=device).to(torch.bfloat16)
    q, s = lk.FusedLinear.from_linear(lin, epilogue="gelu_tanh", fp8_output=True)(x)
    assert q.dtype == F8 and q.shape == (3, 50, 256) and s.shape == (150, 2)
    y = ref.bf16_gemm(x, lin.weight, lin.bias).reshape(150, 256)
    absdot = ref.bf16_gemm(x.abs(), lin.weight.abs()).reshape(150, 256)
    e_y = acc_bound("bf16", "torch", absdot, 128) + 2.0**-8 * absdot
    check_fp8_out(q.reshape(150, 256), s, ref.gemm_epilogue(y, "gelu_tanh"), e_y, 1.13, "FusedLinear fp8", {})
