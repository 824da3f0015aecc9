"""Dense attention (ltx_kernels.attention) against the float64 oracle reference.attention, written
from the definition (softmax of scaled scores + key bias over the valid keys, times v).

Bounds, per output element, for 16-bit inputs (every backend computes in fp32):
  - the output is rounded once to its dtype: half an ulp, 2^-9 |o| (bf16), 2^-12 |o| (fp16);
  - the sm_90 kernel rounds P (in [0, 1] after the row max is subtracted) to the input dtype
    before P V: each p_j moves by at most 2^-9 p_j (bf16) / 2^-12 p_j (fp16), so
    |d o| <= 2^-9 sum_j p_j |v_j| / sum_j p_j <= 2^-9 max_j |v_j|;
  - scores: fp32 sums of D exact products (|error| <= D 2^-24 sum |q_c k_c|) and ex2.approx
    (2^-22 relative): orders of magnitude below the two terms above for the inputs used here.
  So |o - ref| <= 2 u max|v| + 2 u |ref| with u = 2^-9 (bf16) or 2^-12 (fp16), a factor 2 of
  margin; fp32 inputs (CPU and the torch path) get u = 2^-21.
FP8: the operands are compared first with the oracle on their dequantized values (what the
kernel is given): the kernel also rounds P to E4M3 (3 mantissa bits: each p_j within 2^-4 p_j),
so |o - ref| <= 2^-4 max|v| + 2^-8 |ref| there (bf16 output). Their error against the unquantized
inputs is the quantization itself, measured and bounded on realistic inputs in
test_fp8_accuracy_*: relative L2 <= 0.06 and cosine >= 0.998 (stated from CPU runs of the same
math, which are 0.03-0.045 and >= 0.999).
"""


import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

from conftest import HAS_CUDA, device_backends

CUDA = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
DEV_BACKENDS = device_backends("auto", "torch")
U = {torch.bfloat16: 2.0**-9, torch.float16: 2.0**-12, torch.float32: 2.0**-21}


def sm90_available():
    return HAS_CUDA and torch.cuda.get_device_capability() == (9, 0)


def mk(b, s, h, d, dtype, device, layout, scale=1.0):
    x = torch.randn(b, s, h, d, dtype=torch.float32) * scale
    x = x.to(dtype)
    if layout == "bhsd":
        x = x.transpose(1, 2).contiguous()
    return x.to(device)


def check16(out, want, v, dtype, what=""):
    assert not torch.isnan(out).any(), what
    u = U[dtype]
    vmax = v.double().abs().max().item() if v.numel() else 0.0
    err = (out.double().cpu() - want.cpu()).abs()
    bound = 2 * u * vmax + 2 * u * want.cpu().abs()
    bad = err > bound
    assert not bad.any(), f"{what}: {int(bad.sum())} of {bad.numel()} elements off, max err {err.max():.3g}"


SHAPES = [  # B, Sq, Skv, H, Hkv, D
    (1, 1, 1, 1, 1, 64),
    (2, 37, 70, 4, 2, 64),
    (1, 129, 257, 2, 2, 128),
    (2, 128, 128, 3, 3, 64),
    (1, 300, 1000, 2, 1, 128),
]


@pytest.mark.parametrize("device,backend", DEV_BACKENDS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_reference(device, backend, dtype, layout, shape):
    b, sq, skv, h, hk, d = shape
    q, k, v = mk(b, sq, h, d, dtype, device, layout), mk(b, skv, hk, d, dtype, device, layout), mk(
        b, skv, hk, d, dtype, device, layout)
    out = lk.attention(q, k, v, layout=layout, backend=backend)
    assert out.shape == q.shape and out.dtype == dtype and out.device == q.device
    check16(out, ref.attention(q, k, v, layout=layout), v, dtype, f"{shape} {layout}")


def test_fp32_cpu_is_tight():
    q, k, v = (torch.randn(2, 50, 3, 32) for _ in range(3))
    out = lk.attention(q, k, v)
    check16(out, ref.attention(q, k, v), v, torch.float32)


@pytest.mark.parametrize("device,backend", DEV_BACKENDS)
@pytest.mark.parametrize("d", [64, 128])
def test_kv_lengths_mask_and_empty_rows(device, backend, d):
    dtype = torch.bfloat16
    b, sq, skv, h = 4, 70, 300, 2
    q, k, v = mk(b, sq, h, d, dtype, device, "bshd"), mk(b, skv, h, d, dtype, device, "bshd"), mk(
        b, skv, h, d, dtype, device, "bshd")
    lengths = torch.tensor([0, 1, 129, 300], device=device)
    mask = torch.rand(b, skv, device=device) > 0.3
    mask[2] = False  # every key of row 2 masked: output 0, not NaN
    out = lk.attention(q, k, v, kv_lengths=lengths, attn_mask=mask, backend=backend)
    bias = torch.zeros(b, skv, device=device).masked_fill(~mask, float("-inf"))
    want = ref.attention(q, k, v, kv_lengths=lengths, key_bias=bias)
    check16(out, want, v, dtype, "lengths+mask")
    assert (out[0] == 0).all() and (out[2] == 0).all()
    # diffusers' additive mask [B, 1, Skv] (0 / -10000) gives the same as its boolean form
    add = torch.zeros(b, 1, skv, device=device).masked_fill(~mask[:, None], -10000.0)
    out2 = lk.attention(q, k, v, attn_mask=add, backend=backend)
    want2 = ref.attention(q, k, v, key_bias=add[:, 0])
    check16(out2, want2, v, dtype, "additive mask")


@pytest.mark.parametrize("device,backend", DEV_BACKENDS)
@pytest.mark.parametrize("form", ["unaligned", "expanded", "odd_stride"])
def test_key_bias_layouts(device, backend, form):
    """The op's key bias [B, Skv] in layouts the sm_90a kernel cannot load by TMA as they are (a
    base off 16 bytes, a batch stride 0, a batch stride not a multiple of 4): the op pads a copy;
    the result is the reference's for each (bias values chosen so that a bias read at the wrong
    key or batch row changes the output)."""
    dtype = torch.bfloat16
    b, sq, skv, h, d = 3, 67, 137, 2, 64
    q, k, v = (mk(b, s, h, d, dtype, device, "bshd") for s in (sq, skv, skv))
    g = torch.Generator().manual_seed(5)
    rows = (torch.randn(b, skv, generator=g) * 3).to(device)
    rows[:, -5:] = float("-inf")
    if form == "unaligned":
        bias = torch.empty(b, skv + 8, device=device)[:, 1:skv + 1].copy_(rows)
    elif form == "expanded":
        bias = rows[:1].expand(b, skv)
    else:
        bias = torch.empty(b, skv + 1, device=device)[:, :skv].copy_(rows)
    out = torch.empty_like(q)
    lk.ops.attention(out, q, k, v, d ** -0.5, None, bias, None, None, None, 1, "bshd", backend)
    check16(out, ref.attention(q, k, v, key_bias=bias), v, dtype, form)
    other = torch.roll(bias, 1, dims=1)  # the bias one key off
    assert not torch.allclose(ref.attention(q, k, v, key_bias=other).float(), out.float(), atol=2e-2)


@pytest.mark.parametrize("device,backend", DEV_BACKENDS)
def test_strided_inputs_and_sentinel_out(device, backend):
    dtype = torch.bfloat16
    b, sq, skv, h, d = 2, 65, 130, 4, 64
    big = torch.randn(b, sq + 3, h + 1, d + 16, dtype=dtype, device=device)
    q = big[:, 2:2 + sq, 1:, :d]  # strided view, row stride not the packed one
    k = mk(b, skv, h, d + 8, dtype, device, "bshd")[..., 8:]  # base offset by 8 elements (16 bytes)
    v = mk(b, h, skv, d, dtype, device, "bshd").transpose(1, 2)  # [B, S, H, D] view of bhsd memory
    kd2 = torch.randn(b, skv, h, 2 * d, dtype=dtype, device=device)[..., ::2]  # head-dim stride 2
    misaligned = torch.randn(b * sq * h * d + 1, dtype=dtype, device=device)[1:].view(b, sq, h, d)
    want = ref.attention(q, k, v)
    sentinel = torch.full((b, sq, h + 1, d), float("nan"), dtype=dtype, device=device)
    out = sentinel[:, :, :h]
    got = lk.attention(q, k, v, out=out, backend=backend)
    assert got.data_ptr() == out.data_ptr()
    check16(out, want, v, dtype, "strided")
    assert torch.isnan(sentinel[:, :, h]).all(), "wrote outside out"
    check16(lk.attention(q, kd2, v, backend=backend), ref.attention(q, kd2, v), v, dtype, "d-stride 2")
    check16(lk.attention(misaligned, k, v, backend=backend), ref.attention(misaligned, k, v), v, dtype, "misaligned")


@pytest.mark.parametrize("device,backend", DEV_BACKENDS)
def test_expanded_inputs(device, backend):
    """Inputs broadcast by expand (zero strides): one q row set for both batch rows, k / v shared
    by the batch, keys repeated; the sm_90a kernel's tensor maps take no zero stride, so such
    inputs are materialised first."""
    dtype = torch.bfloat16
    b, sq, skv, h, d = 2, 70, 100, 2, 64
    q = mk(1, sq, h, d, dtype, device, "bshd").expand(b, sq, h, d)
    k = mk(1, skv, h, d, dtype, device, "bshd").expand(b, skv, h, d)
    v = mk(b, 1, h, d, dtype, device, "bshd").expand(b, skv, h, d)  # one value row for every key
    want = ref.attention(q, k, v)
    check16(lk.attention(q, k, v, backend=backend), want, v, dtype, "expanded")
    assert torch.allclose(want.double()[:, 0], v.double()[:, 0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("device,backend", DEV_BACKENDS)
def test_scale_and_gqa(device, backend):
    dtype = torch.float16
    q, k, v = mk(1, 40, 8, 64, dtype, device, "bshd"), mk(1, 90, 2, 64, dtype, device, "bshd"), mk(
        1, 90, 2, 64, dtype, device, "bshd")
    out = lk.attention(q, k, v, scale=0.3, backend=backend)
    check16(out, ref.attention(q, k, v, scale=0.3), v, dtype, "gqa")


@CUDA
def test_auto_picks_sm90_on_hopper():
    q = torch.randn(1, 128, 2, 64, device="cuda", dtype=torch.bfloat16)
    assert lk.attention_backend(q, q, q, backend="torch") == "torch"
    assert lk.attention_backend(q, q, q) == ("sm90" if sm90_available() else "torch")
    # head dims the kernel does not take run the torch path
    q32 = torch.randn(1, 16, 2, 32, device="cuda", dtype=torch.bfloat16)
    assert lk.attention_backend(q32, q32, q32) == "torch"


@CUDA
def test_large_batch_heads_never_materialise_scores():
    """B*H*Sq*Skv > 2^31 score elements; checked against the oracle on a few (head, row) slices."""
    if not sm90_available():
        pytest.skip("the sm90 kernel is the one this checks")
    b, s, h, d = 1, 8192, 36, 64  # 36 * 8192^2 = 2.4e9 scores
    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = lk.attention(q, k, v)
    for hh in (0, h - 1):
        rows = torch.cat([torch.arange(64), torch.arange(s - 64, s)]).cuda()
        want = ref.attention(q[:, rows, hh:hh + 1], k[:, :, hh:hh + 1], v[:, :, hh:hh + 1])
        check16(out[:, rows, hh:hh + 1], want, v[:, :, hh:hh + 1], torch.bfloat16, f"head {hh}")


@CUDA
@pytest.mark.parametrize("persistent", ["0", "1"])
@pytest.mark.parametrize("pingpong", ["0", "1"])
@pytest.mark.parametrize("d", [64, 128])
def test_sm90_tile_schedules(dev_settings, persistent, pingpong, d):
    """The 16-bit kernels with one CTA per query tile and persistent (one CTA per SM walking the
    tiles, two Q buffers, the K / V ring running across tiles), each forced at any number of keys:
    more tiles than SMs (several tiles per CTA, the ring wrapping between tiles), text-length keys,
    batch rows with no valid key (tiles without key blocks between tiles with them), a key mask,
    ragged query tiles, and an out view between sentinels; within the 16-bit bound against fp64."""
    if not sm90_available():
        pytest.skip("needs an sm_90 GPU")
    dev_settings.setenv("LTX_KERNELS_ATTENTION_PERSISTENT", persistent)
    dev_settings.setenv("LTX_KERNELS_ATTENTION_PINGPONG", pingpong)
    dtype = torch.bfloat16
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for b, sq, skv, h in ((2, 1000, 128, 2 * sms // 10 + 3), (3, 333, 700, 5), (1, 70, 1, 3)):
        q, k, v = (mk(b, s, h, d, dtype, "cuda", "bshd") for s in (sq, skv, skv))
        lengths = torch.tensor([0, skv, max(skv // 3, 1)][:b], device="cuda")
        mask = torch.rand(b, skv, device="cuda") > 0.2
        mask[:, 0] = True
        sentinel = torch.full((b, sq, h + 1, d), float("nan"), dtype=dtype, device="cuda")
        out = sentinel[:, :, 1:]
        lk.attention(q, k, v, kv_lengths=lengths, attn_mask=mask, out=out, backend="sm90")
        bias = torch.zeros(b, skv, device="cuda").masked_fill(~mask, float("-inf"))
        want = ref.attention(q, k, v, kv_lengths=lengths, key_bias=bias)
        what = f"B{b} Sq{sq} Skv{skv} H{h} d{d} persistent {persistent} pingpong {pingpong}"
        check16(out, want, v, dtype, what)
        assert (out[0] == 0).all(), what  # no valid key: 0
        assert torch.isnan(sentinel[:, :, 0]).all(), f"{what}: wrote outside out"
        check16(lk.attention(q, k, v, backend="sm90"), ref.attention(q, k, v), v, dtype, what + " unmasked")


# ---- FP8 ------------------------------------------------------------------------------------


def fp8_check_vs_dequantized(out, ops8, kv_lengths=None, key_bias=None, layout="bshd", what=""):
    qd, kd, vd = ref.attention_fp8_dequantize(*ops8, layout=layout)
    want = ref.attention(qd, kd, vd, kv_lengths=kv_lengths, key_bias=key_bias, layout=layout)
    vmax = vd.abs().max().item()
    err = (out.double().cpu() - want.cpu()).abs()
    bound = 2.0**-4 * vmax + 2.0**-8 * want.cpu().abs()
    bad = err > bound
    assert not bad.any(), f"{what}: {int(bad.sum())} elements off, max err {err.max():.3g} (vmax {vmax:.3g})"
    assert not torch.isnan(out).any()
    return want


FP8_DEVICES = ["cpu", pytest.param("cuda", marks=CUDA)]


@pytest.mark.parametrize("device", FP8_DEVICES)
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("k_block", [1, 128])
@pytest.mark.parametrize("shape", [(1, 1, 1, 1, 1, 64), (2, 70, 300, 4, 2, 64), (1, 129, 257, 2, 2, 128)],
                         ids=lambda s: "x".join(map(str, s)))
def test_fp8_matches_dequantized_reference(device, layout, k_block, shape):
    b, sq, skv, h, hk, d = shape
    q, k, v = mk(b, sq, h, d, torch.bfloat16, device, layout), mk(b, skv, hk, d, torch.bfloat16, device, layout), mk(
        b, skv, hk, d, torch.bfloat16, device, layout)
    ops8 = lk.quantize_attention_fp8(q, k, v, layout=layout, k_block=k_block)
    lengths = torch.tensor([skv, max(skv - 5, 0)][:b], device=device)
    out = lk.attention(*ops8, layout=layout, kv_lengths=lengths)
    assert out.dtype == torch.bfloat16 and out.shape == q.shape
    fp8_check_vs_dequantized(out, ops8, kv_lengths=lengths, layout=layout, what=f"{shape} {layout} kb{k_block}")


@pytest.mark.parametrize("device", FP8_DEVICES)
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("k_block", [1, 128])
def test_fp8_torch_backend(device, layout, k_block):
    """backend="torch" on FP8 operands: the dequantized values in fp32 (each code x factor rounded
    once, 2^-24 relative) through SDPA in fp32, P not rounded: the 16-bit bound of the output
    dtype against the float64 attention of the dequantized operands."""
    b, sq, skv, h, hk, d = 2, 33, 200, 4, 2, 32
    q, k, v = (mk(b, s, n, d, torch.bfloat16, device, layout) for s, n in ((sq, h), (skv, hk), (skv, hk)))
    ops8 = lk.quantize_attention_fp8(q, k, v, layout=layout, k_block=k_block)
    lengths = torch.tensor([skv - 70, 0], device=device)
    mask = torch.rand(b, skv, device=device) > 0.3
    key_bias = torch.zeros(b, skv).masked_fill(~mask.cpu(), float("-inf"))
    qd, kd, vd = (t.cpu() for t in ref.attention_fp8_dequantize(*ops8, layout=layout))
    want = ref.attention(qd, kd, vd, kv_lengths=lengths.cpu(), key_bias=key_bias, layout=layout)
    assert lk.attention_backend(*ops8, layout=layout, backend="torch") == "torch"
    for dtype in (torch.bfloat16, torch.float16):
        out = lk.attention(*ops8, layout=layout, kv_lengths=lengths, attn_mask=mask, out_dtype=dtype, backend="torch")
        assert out.dtype == dtype and out.shape == q.shape
        check16(out, want, vd, dtype, f"{layout} k_block {k_block} {dtype}")
    assert (out[1] == 0).all()  # the batch row without keys


@pytest.mark.parametrize("device", FP8_DEVICES)
@pytest.mark.parametrize("k_block", [1, 128])
def test_fp8_expanded_factors(device, k_block):
    """FP8 dequantization factors broadcast by expand (zero strides) over the keys or the batch."""
    b, sq, skv, h, d = 2, 64, 200, 4, 64
    q, k, v = (mk(b, s, h, d, torch.bfloat16, device, "bshd") for s in (sq, skv, skv))
    ops8 = lk.quantize_attention_fp8(q, k, v, k_block=k_block)
    kd = ops8.k_descale[:, :1].expand_as(ops8.k_descale)  # one factor for every key (block)
    qd = ops8.q_descale[:1].expand_as(ops8.q_descale)
    ops8 = ops8._replace(k_descale=kd, q_descale=qd)
    out = lk.attention(*ops8)
    qd_, kd_, vd_ = ref.attention_fp8_dequantize(*ops8)
    want = ref.attention(qd_, kd_, vd_)
    err = (out.double().cpu() - want.cpu()).abs()
    assert (err <= 2.0**-4 * vd_.abs().max().item() + 2.0**-8 * want.cpu().abs()).all(), err.max()


def _restride_k_descale(kd, how):
    """The same per-key factors [B, Skv, Hkv] in another memory layout."""
    b, s, h = kd.shape
    if how == "padded_heads":  # heads contiguous, key stride Hkv + 4
        return torch.zeros(b, s, h + 4, device=kd.device).narrow(2, 0, h).copy_(kd)
    if how == "odd_key_stride":  # key stride Hkv + 1: not a multiple of 4
        return torch.zeros(b, s, h + 1, device=kd.device).narrow(2, 0, h).copy_(kd)
    if how == "misaligned":  # base 4 bytes past a 16-byte boundary
        return torch.zeros(kd.numel() + 1, device=kd.device)[1:].view(b, s, h).copy_(kd)
    if how == "heads_outer":  # [B, Hkv, Skv] storage: the keys contiguous
        return kd.transpose(1, 2).contiguous().transpose(1, 2)
    assert how == "contiguous"
    return kd


@pytest.mark.parametrize("device", FP8_DEVICES)
@pytest.mark.parametrize("how", ["contiguous", "padded_heads", "odd_key_stride", "misaligned", "heads_outer"])
@pytest.mark.parametrize("shape", [(2, 130, 300, 8, 4, 64), (1, 64, 200, 16, 8, 128), (1, 70, 97, 6, 3, 64)],
                         ids=lambda s: "x".join(map(str, s)))
def test_fp8_per_key_factor_layouts(device, how, shape):
    """Per-key K factors in every memory layout: the sm_90a kernel loads them by TMA in place when
    the heads are contiguous and the other strides are 16-byte multiples (Hkv 4 and 8), from a
    copy otherwise; every head of a 4-head TMA box (grouped heads) reads its own column."""
    b, sq, skv, h, hk, d = shape
    q, k, v = mk(b, sq, h, d, torch.bfloat16, device, "bshd"), mk(b, skv, hk, d, torch.bfloat16, device, "bshd"), mk(
        b, skv, hk, d, torch.bfloat16, device, "bshd")
    # distinct factors per head and key, so that reading a neighbour's column would show
    k = k * (1 + torch.arange(hk, device=device)[None, None, :, None]).to(k.dtype)
    ops8 = lk.quantize_attention_fp8(q, k, v, k_block=1)
    ops8 = ops8._replace(k_descale=_restride_k_descale(ops8.k_descale, how))
    lengths = torch.tensor([skv, skv - 33][:b], device=device)
    if device == "cuda" and sm90_available():
        assert lk.attention_backend(*ops8, kv_lengths=lengths) == "sm90"
    out = lk.attention(*ops8, kv_lengths=lengths)
    fp8_check_vs_dequantized(out, ops8, kv_lengths=lengths, what=f"{shape} {how}")


@pytest.mark.parametrize("device", FP8_DEVICES)
@pytest.mark.parametrize("k_block", [1, 128])
@pytest.mark.parametrize("d", [64, 128])
def test_fp8_key_mask(device, k_block, d):
    """FP8 with a boolean key mask and kv_lengths, K factors per key and per 128 keys: the
    kernels' key-bias path, against the dequantized reference with the mask as a -inf bias."""
    b, sq, skv, h, hk = 2, 150, 333, 4, 2
    q, k, v = mk(b, sq, h, d, torch.bfloat16, device, "bshd"), mk(b, skv, hk, d, torch.bfloat16, device, "bshd"), mk(
        b, skv, hk, d, torch.bfloat16, device, "bshd")
    ops8 = lk.quantize_attention_fp8(q, k, v, k_block=k_block)
    lengths = torch.tensor([skv, skv - 70], device=device)
    g = torch.Generator().manual_seed(1)
    mask = (torch.rand(b, skv, generator=g) > 0.3).to(device)
    out = lk.attention(*ops8, kv_lengths=lengths, attn_mask=mask)
    key_bias = torch.zeros(b, skv, device=device).masked_fill(~mask, float("-inf"))
    fp8_check_vs_dequantized(out, ops8, kv_lengths=lengths, key_bias=key_bias, what=f"d{d} kb{k_block} masked")


def _rel_cos(out, want):
    o, w = out.double().cpu().flatten(), want.cpu().flatten()
    return ((o - w).norm() / w.norm()).item(), (o @ w / (o.norm() * w.norm())).item()


def ltx_like_qk(b, s, h, d, device):
    """q, k as an LTX block makes them: RMSNorm over the whole row (with a weight), then RoPE."""
    c = h * d
    x = torch.randn(b, s, c, device=device) * 2
    wq, wk = (1 + 0.2 * torch.randn(c, device=device)), (1 + 0.2 * torch.randn(c, device=device))
    pos = torch.arange(s, device=device, dtype=torch.float32)[:, None]
    freqs = 1.0 / (10000 ** (torch.arange(0, c, 2, device=device, dtype=torch.float32) / c))
    ang = (pos * freqs).repeat_interleave(2, -1)[None]
    cos, sin = torch.cos(ang), torch.sin(ang)
    q = ref.rope_interleaved(ref.rms_norm(x, wq), cos, sin)
    k = ref.rope_interleaved(ref.rms_norm(x + 0.5 * torch.randn_like(x), wk), cos, sin)
    return (q.float().reshape(b, s, h, d).bfloat16(), k.float().reshape(b, s, h, d).bfloat16())


@pytest.mark.parametrize("device", FP8_DEVICES)
@pytest.mark.parametrize("d", [64, 128])
def test_fp8_accuracy_realistic(device, d):
    b, s, h = 1, 512, 4
    q, k = ltx_like_qk(b, s, h, d, device)
    v = torch.randn(b, s, h, d, device=device).bfloat16()
    want = ref.attention(q, k, v)
    out = lk.attention(*lk.quantize_attention_fp8(q, k, v))
    rel, cos = _rel_cos(out, want)
    assert rel <= 0.06 and cos >= 0.998, (rel, cos)


@pytest.mark.parametrize("device", FP8_DEVICES)
def test_fp8_accuracy_offset_and_outlier_channels(device):
    """K with a large per-channel offset and a few outlier channels: smoothing keeps the bound,
    with the exact mean and with the mean of the leading 128 keys (smooth_keys), and without it
    the error is at least twice as large. The bound fails the wrong answers (mutations): k or v
    factors off by 10%, and k smoothed by half its mean (half the offset left in)."""
    b, s, h, d = 1, 512, 2, 64
    q = torch.randn(b, s, h, d, device=device)
    offset = 8 * torch.randn(d, device=device)
    offset[[3, 17, 40]] += 40.0
    k = torch.randn(b, s, h, d, device=device) + offset
    v = torch.randn(b, s, h, d, device=device)
    q, k, v = q.bfloat16(), k.bfloat16(), v.bfloat16()
    want = ref.attention(q, k, v)
    rel, cos = _rel_cos(lk.attention(*lk.quantize_attention_fp8(q, k, v)), want)
    rel_lead, cos_lead = _rel_cos(lk.attention(*lk.quantize_attention_fp8(q, k, v, smooth_keys=128)), want)
    rel_raw, _ = _rel_cos(lk.attention(*lk.quantize_attention_fp8(q, k, v, smooth_k=False)), want)
    assert rel <= 0.06 and cos >= 0.998, (rel, cos)
    assert rel_lead <= 0.06 and cos_lead >= 0.998, (rel_lead, cos_lead)
    assert rel_raw >= 2 * max(rel, rel_lead), (rel, rel_lead, rel_raw)
    o = lk.quantize_attention_fp8(q, k, v)
    wrong = {"k factors x1.1": (o.q, o.k, o.v, o.q_descale, o.k_descale * 1.1, o.v_descale),
             "v factors x1.1": (o.q, o.k, o.v, o.q_descale, o.k_descale, o.v_descale * 1.1),
             # fp32 inputs hold bf16 values exactly; no smoothing of k - mean / 2 = smoothing by mean / 2
             "half the k mean": tuple(lk.quantize_attention_fp8(
                 q.float(), k.float() - k.float().mean(1, keepdim=True) / 2, v.float(), smooth_k=False))}
    for what, ops8 in wrong.items():
        rel_bad, _ = _rel_cos(lk.attention(*ops8), want)
        assert rel_bad > 0.06, f"{what}: rel L2 {rel_bad:.4f} is within the bound 0.06 (correct: {rel:.4f})"


def test_fp8_quantizer_follows_its_rule():
    """Codes are e4m3(x / s) (fp32 division, round to nearest even) with s = amax / 448 per group,
    bit for bit against the reference encoder; v's keys are in KEY_ORDER per 32-key block, zeros
    past Skv."""
    from ltx_kernels.attention import KEY_ORDER

    q, k, v = (torch.randn(1, 40, 2, 64) for _ in range(3))
    o = lk.quantize_attention_fp8(q, k, v, k_block=1, smooth_k=False)
    s = q.abs().amax(-1) / 448
    assert torch.equal(o.q_descale, s)
    assert torch.equal(o.q.view(torch.uint8), ref.fp8_encode(q / s[..., None]))
    sk = k.abs().amax(-1) / 448
    assert torch.equal(o.k.view(torch.uint8), ref.fp8_encode(k / sk[..., None]))
    vt = v[0].permute(1, 2, 0)  # [H, D, S]
    sv = vt.abs().amax(-1) / 448
    assert o.v.shape == (1, 2, 64, 64) and torch.equal(o.v_descale[0], sv)
    for p in range(64):
        key = (p // 32) * 32 + KEY_ORDER[p % 32]
        codes = o.v[0, :, :, p].view(torch.uint8)
        if key < 40:
            assert torch.equal(codes, ref.fp8_encode(vt[..., key] / sv)), p
        else:
            assert (codes == 0).all(), p
    assert sorted(KEY_ORDER) == list(range(32))


@CUDA
@pytest.mark.parametrize("d", [64, 128])
def test_sm90_fp8_long_sum_accuracy(d):
    """The FP8 defaults with 128-key K factors (the FP8 tensor core accumulates P V into O, with
    fewer bits than an fp32 add) on 8192-key sequences of LTX-like q and k: within the FP8 bound
    against fp64."""
    if not sm90_available():
        pytest.skip("needs an sm_90 GPU")
    b, s, h = 1, 8192, 2
    q, k = ltx_like_qk(b, s, h, d, "cuda")
    v = torch.randn(b, s, h, d, device="cuda").bfloat16()
    want = ref.attention(q.cpu(), k.cpu(), v.cpu())
    rel, cos = _rel_cos(lk.attention(*lk.quantize_attention_fp8(q, k, v), backend="sm90"), want)
    assert rel <= 0.06 and cos >= 0.998, (rel, cos)


def _jumping_scores(d):
    """q, k, v (fp32, [2, 300 / 900, 2, d]) whose scores jump in late key blocks for some query
    rows only: the input of the rescale-skip test."""
    torch.manual_seed(0)
    b, sq, skv, h = 2, 300, 900, 2
    q = torch.randn(b, sq, h, d)
    k = torch.randn(b, skv, h, d)
    v = torch.randn(b, skv, h, d)
    q[:, ::3] *= 6.0           # every third query row sees the jumps amplified, the others barely
    k[:, 400:420] *= 4.0       # a late block with much larger scores (rows of q scaled up move a lot)
    k[1, 700:710] *= 2.5       # a smaller jump later still, in the second batch row only
    return q, k, v


@CUDA
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("pingpong", ["0", "1"])
def test_sm90_skip_rescale(dev_settings, dtype, pingpong):
    """The 16-bit head-dim-128 configuration (Half128, bf16 and fp16) keeps a row's running
    maximum while a key block raises it by at most 2^8 and rescales O only when a row of the warp
    moved it (kSkipRescale): keys whose scores jump by far more than that in a late block, for
    some query rows only (so that the warp vote sees rows that keep their maximum beside rows that
    move it), and jumps just below and above the slack; within the 16-bit bound against fp64."""
    if not sm90_available():
        pytest.skip("needs an sm_90 GPU")
    dev_settings.setenv("LTX_KERNELS_ATTENTION_PINGPONG", pingpong)
    d = 128
    q, k, v = _jumping_scores(d)
    # a key aligned with query row 5 of head 0, exactly 7.5 and then 8.5 log2 units above the
    # row's other scores so far (either side of the slack)
    scale = d ** -0.5
    for key, lift in ((520, 7.5), (650, 8.5)):
        base = (q[0, 5, 0] @ k[0, :key, 0].T).max().item() * scale
        k[0, key, 0] = q[0, 5, 0] / q[0, 5, 0].norm() ** 2 * ((base + lift / 1.4426950408889634) / scale)
    q, k, v = (t.to(dtype) for t in (q, k, v))
    want = ref.attention(q, k, v)
    out = lk.attention(q.cuda(), k.cuda(), v.cuda(), backend="sm90")
    check16(out, want, v, dtype, f"d{d} {dtype} pingpong {pingpong}")


# ---- errors, empty inputs, compile -----------------------------------------------------------


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA)])
def test_errors(device):
    q = torch.randn(1, 8, 2, 64, device=device, dtype=torch.bfloat16)
    cases = [
        (lambda: lk.attention(q, q.float(), q), "k and q must have the same dtype"),
        (lambda: lk.attention(q, q[:, :, :1].repeat(1, 1, 3, 1), q[:, :, :1].repeat(1, 1, 3, 1)), "multiple of k's heads"),
        (lambda: lk.attention(q, q, q[:, :4]), "v must have k's shape"),
        (lambda: lk.attention(q[0], q[0], q[0]), "q, k and v must be 4-D"),
        (lambda: lk.attention(q, q, q, layout="sbhd"), "layout must be"),
        (lambda: lk.attention(q, q, q, scale=-1.0), "scale must be finite and > 0"),
        (lambda: lk.attention(q, q, q, kv_lengths=torch.tensor([1.0], device=device)), "kv_lengths must be int32"),
        (lambda: lk.attention(q, q, q, kv_lengths=torch.tensor([1, 2], device=device)), "kv_lengths must have shape"),
        (lambda: lk.attention(q, q, q, attn_mask=torch.ones(1, 8, 8, dtype=torch.bool, device=device)),
         "per-key mask"),
        (lambda: lk.attention(q, q, q, backend="flash"), "backend must be"),
        (lambda: lk.attention(q.to(torch.float8_e4m3fn), q.to(torch.float8_e4m3fn), q.to(torch.float8_e4m3fn)),
         "float8 v must be the transposed layout"),
        (lambda: lk.attention(q.int(), q.int(), q.int()), "q must be bfloat16, float16, float32 or float8_e4m3fn"),
        (lambda: lk.attention(q, q, q, out=torch.empty(1, 8, 2, 64, device=device)), "out must have q's dtype"),
    ]
    for fn, msg in cases:
        with pytest.raises((RuntimeError, ValueError), match=msg):
            fn()
    if device == "cpu":
        with pytest.raises(RuntimeError, match="backend 'sm90' cannot run this call"):
            lk.attention(q, q, q, backend="sm90")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA)])
def test_empty(device):
    for b, sq, skv in [(0, 4, 4), (1, 0, 4), (2, 3, 0)]:
        q = torch.randn(b, sq, 2, 64, device=device, dtype=torch.bfloat16)
        k = torch.randn(b, skv, 2, 64, device=device, dtype=torch.bfloat16)
        out = lk.attention(q, k, k)
        assert out.shape == q.shape
        if out.numel():
            assert (out == 0).all()


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA)])
def test_opcheck_and_compile(device):
    q = torch.randn(1, 16, 2, 64, device=device, dtype=torch.bfloat16)
    out = torch.empty_like(q)
    torch.library.opcheck(lk.ops.attention, (out, q, q, q, 0.125, None, None, None, None, None, 1, "bshd", "auto"))
    f = torch.compile(lambda a, b, c: lk.attention(a, b, c) * 2, fullgraph=True)
    check16(f(q, q, q) / 2, ref.attention(q, q, q), q, torch.bfloat16, "compiled")
