"""quantize_attention_fp8 (the FP8 operands of ltx_kernels.attention) against the definition,
reference.quantize_attention_fp8, bit for bit: the E4M3 codes byte for byte and the fp32 factors
exactly, on every backend (the C++ CPU backend; the CUDA kernels when a GPU is present).

The k mean is an fp64 sum; the backends add in a fixed chunked order and the reference in torch's,
which agree whenever the sum is exact (attention_quant.h). Inputs here are fp16-representable
(fp32 cases) or bf16 / fp16 values of moderate range, for which every partial sum is exact.
"""

import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

from conftest import ALL_DEVICES, HAS_CUDA, expect_error, grid

CUDA = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
F8 = torch.float8_e4m3fn
OP = "quantize_attention_fp8"
NAMES = ("q8", "k8", "v8", "q_descale", "k_descale", "v_descale")


def mk(b, s, h, d, dtype, device, layout, scale=1.0):
    """[B, S, H, D] values (fp16-representable, so fp32 inputs have exact fp64 sums), stored in the
    layout's memory order ([B, H, S, D] for "bhsd")."""
    x = (torch.randn(b, s, h, d) * scale).half().float().to(dtype)
    if layout == "bhsd":
        x = x.transpose(1, 2).contiguous()
    return x.to(device)


def want_of(q, k, v, **kw):
    """The reference operands, computed on the CPU (its encoder's table lives there)."""
    return ref.quantize_attention_fp8(q.cpu(), k.cpu(), v.cpu(), **kw)


def assert_matches(got, want, what=""):
    """Operands equal to the reference's: codes byte for byte, factors exactly (shapes, dtypes)."""
    assert len(got) == 6
    for name, g, w in zip(NAMES, got, want):
        assert g.shape == w.shape, f"{what} {name}: shape {tuple(g.shape)} vs {tuple(w.shape)}"
        assert g.dtype == w.dtype, f"{what} {name}: dtype {g.dtype} vs {w.dtype}"
        if g.dtype == F8:
            gu, wu = g.contiguous().view(torch.uint8).cpu(), w.contiguous().view(torch.uint8).cpu()
            if not torch.equal(gu, wu):
                bad = (gu != wu).nonzero()[:5].tolist()
                raise AssertionError(f"{what} {name}: {int((gu != wu).sum())} codes differ, first at {bad}: "
                                     f"{[(int(gu[tuple(i)]), int(wu[tuple(i)])) for i in bad]}")
        else:
            gc, wc = g.cpu(), w.cpu()
            if not torch.equal(gc, wc):
                bad = (gc != wc).nonzero()[:5].tolist()
                raise AssertionError(f"{what} {name}: {int((gc != wc).sum())} factors differ, first at {bad}: "
                                     f"{[(float(gc[tuple(i)]), float(wc[tuple(i)])) for i in bad]}")
            assert torch.equal(torch.signbit(gc), torch.signbit(wc)), f"{what} {name}: signs of zero differ"


def check(q, k, v, what="", **kw):
    got = lk.quantize_attention_fp8(q, k, v, **kw)
    assert isinstance(got, lk.AttentionFp8Operands)
    assert got.q.shape == q.shape and got.k.shape == k.shape
    for t in got:
        assert t.device == q.device and t.is_contiguous()
    assert_matches(got, want_of(q, k, v, **kw), what)
    return got


SKV = [1, 31, 33, 127, 129, 300]


@grid(("device", ALL_DEVICES), ("layout", ["bshd", "bhsd"]),
      ("dtype", [torch.bfloat16, torch.float16, torch.float32]), ("d", [64, 128, 80]))
def test_matches_reference(device, layout, dtype, d):
    """Every Skv of SKV (ragged 32- and 128-key blocks), Sq != Skv, grouped heads (H 4, Hkv 2),
    k factors per key and per 128 keys, with and without the k mean."""
    b, sq, h, hk = 2, 45, 4, 2
    q = mk(b, sq, h, d, dtype, device, layout)
    for skv in SKV:
        k, v = mk(b, skv, hk, d, dtype, device, layout, 2.0), mk(b, skv, hk, d, dtype, device, layout)
        for k_block in (1, 128):
            for smooth_k in (True, False):
                check(q, k, v, f"{layout} {dtype} d{d} skv{skv} kb{k_block} smooth{smooth_k}", layout=layout,
                      k_block=k_block, smooth_k=smooth_k)


@grid(("device", ALL_DEVICES), ("dtype", [torch.bfloat16, torch.float32]), ("d", [64, 128, 24]))
def test_smooth_keys_matches_reference(device, dtype, d):
    """The mean of the leading keys (smooth_keys 64, 128, 192) at key counts below, at and above
    it and ragged, both k factor granularities and both layouts: bit for bit the reference, and a
    k mean that differs from the exact one (the mutation check: the leading keys carry an offset
    the others do not, so codes taken with the exact mean would differ)."""
    b, sq, h, hk = 2, 21, 4, 2
    for layout in ("bshd", "bhsd"):
        q = mk(b, sq, h, d, dtype, device, layout)
        for skv in (1, 63, 64, 65, 130, 300):
            kc = mk(b, skv, hk, d, dtype, "cpu", "bshd", 2.0)
            kc[:, :64] += 3.0  # leading keys offset: their mean is not the keys' mean
            k = (kc if layout == "bshd" else kc.transpose(1, 2).contiguous()).to(device)
            v = mk(b, skv, hk, d, dtype, device, layout)
            for n in (64, 128, 192):
                for k_block in (1, 128):
                    got = check(q, k, v, f"{layout} {dtype} d{d} skv{skv} n{n} kb{k_block}", layout=layout,
                                smooth_keys=n, k_block=k_block)
                    if skv > n:
                        exact = want_of(q, k, v, layout=layout, k_block=k_block)
                        assert not torch.equal(got.k.view(torch.uint8).cpu(), exact[1].view(torch.uint8)), \
                            f"skv{skv} n{n}: the leading keys' mean gave the exact mean's codes"
                    if skv <= n:  # every key in the mean: the exact mean's operands
                        assert_matches(got, want_of(q, k, v, layout=layout, k_block=k_block), f"skv{skv} <= n{n}")
        # smooth_keys without smoothing: ignored
        k = mk(b, 200, hk, d, dtype, device, layout)
        assert_matches(lk.quantize_attention_fp8(q, k, k, layout=layout, smooth_k=False, smooth_keys=64),
                       want_of(q, k, k, layout=layout, smooth_k=False), "smooth_k False")


@grid(("device", ALL_DEVICES), ("d", [8, 32, 24, 256]))
def test_other_head_dims(device, d):
    """The op takes any head dim that is a multiple of 8 up to 256 (the kernel's 64 / 128 and
    others: rows of 1 to 64 16-byte chunks, powers of two or not)."""
    for dtype in (torch.bfloat16, torch.float32):
        q, k, v = mk(1, 20, 2, d, dtype, device, "bshd"), mk(1, 140, 1, d, dtype, device, "bshd"), mk(
            1, 140, 1, d, dtype, device, "bshd")
        for k_block in (1, 128):
            check(q, k, v, f"d{d} {dtype} kb{k_block}", k_block=k_block)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_strided_inputs(device):
    """Slices of bigger tensors, a transposed view, a head-dim stride of 2 and a misaligned base:
    read in place or through a copy, the same operands as from contiguous copies."""
    dtype, d = torch.bfloat16, 64
    b, sq, skv, h, hk = 2, 50, 130, 4, 2
    big = torch.randn(b, sq + 3, h + 1, d + 16, dtype=dtype, device=device)
    q = big[:, 2:2 + sq, 1:, :d]  # row strides not the packed ones
    k = mk(b, hk, skv, d, dtype, device, "bshd").transpose(1, 2)  # [B, S, H, D] view of [B, H, S, D] memory
    v = torch.randn(b, skv, hk, 2 * d, dtype=dtype, device=device)[..., ::2]  # head-dim stride 2
    mis = torch.randn(b * skv * hk * d + 1, dtype=dtype, device=device)[1:].view(b, skv, hk, d)  # base + 2 bytes
    for kk, vv in [(k, v), (mis, k), (v, mis)]:
        for k_block in (1, 128):
            got = check(q, kk, vv, f"strided kb{k_block}", k_block=k_block)
            assert_matches(got, want_of(q.contiguous(), kk.contiguous(), vv.contiguous(), k_block=k_block),
                           "vs contiguous")
    # "bhsd" on a bshd-memory view
    qh, kh = q.transpose(1, 2), k.transpose(1, 2)
    check(qh, kh, kh, "bhsd view", layout="bhsd")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_zero_groups_and_signed_zeros(device):
    """An all-zero q row, k key, k block and v channel get factor 0 and the codes of their values
    (+0 -> 0x00, -0 -> 0x80); a head of k that is all (signed) zeros keeps its signs through the
    mean (which is +0)."""
    dtype, d = torch.bfloat16, 64
    b, sq, skv, h, hk = 1, 10, 200, 2, 2
    q, k, v = mk(b, sq, h, d, dtype, device, "bshd"), mk(b, skv, hk, d, dtype, device, "bshd"), mk(
        b, skv, hk, d, dtype, device, "bshd")
    signed = torch.where(torch.rand(d, device=device) < 0.5, -0.0, 0.0).to(dtype)
    q[0, 3, 1] = signed
    k[0, 7, 0] = signed  # one key
    k[0, 128:, 1] = -signed  # the second 128-key block of head 1
    v[0, :, 1, 5] = -0.0  # one channel over every key
    v[0, :, 0, 9] = 0.0
    for k_block in (1, 128):
        o = check(q, k, v, f"zeros kb{k_block}", k_block=k_block, smooth_k=False)
        assert o.q_descale[0, 3, 1] == 0
        assert torch.equal(o.q[0, 3, 1].view(torch.uint8).cpu(), torch.where(torch.signbit(signed.cpu()), 0x80, 0).to(
            torch.uint8))
        assert o.v_descale[0, 1, 5] == 0 and o.v_descale[0, 0, 9] == 0
        assert (o.v[0, 1, 5].view(torch.uint8) == 0x80).sum() == skv  # every key's -0 (0 past Skv)
        assert (o.v[0, 0, 9].view(torch.uint8) == 0).all()
        if k_block == 1:
            assert o.k_descale[0, 7, 0] == 0
        else:
            assert o.k_descale[0, 1, 1] == 0
    # a whole head of signed zeros: mean +0, codes keep the signs
    k[0, :, 1] = torch.where(torch.rand(skv, d, device=device) < 0.5, -0.0, 0.0).to(dtype)
    for k_block in (1, 128):
        o = check(q, k, v, f"zero head kb{k_block}", k_block=k_block, smooth_k=True)
        codes = o.k[0, :, 1].view(torch.uint8).cpu()
        assert torch.equal(codes, torch.where(torch.signbit(k[0, :, 1].cpu()), 0x80, 0).to(torch.uint8))


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_outlier_channel_and_saturation(device):
    """One channel 1000x the others (it sets the factors of q rows, k blocks and its own v channel;
    smoothing removes k's offset), and values whose quotient x / s rounds above 448 (s = amax /
    448 in fp32: 448.00003 for amax = 1.0234375): their code is 448 (0x7e), not NaN."""
    dtype, d = torch.bfloat16, 128
    b, sq, skv, h = 1, 33, 257, 2
    q, k, v = mk(b, sq, h, d, dtype, device, "bshd"), mk(b, skv, h, d, dtype, device, "bshd"), mk(
        b, skv, h, d, dtype, device, "bshd")
    q[..., 17] *= 1000
    k[..., 17] = k[..., 17] * 1000 + 5000
    v[..., 17] *= 1000
    for k_block in (1, 128):
        for smooth_k in (True, False):
            check(q, k, v, f"outlier kb{k_block} smooth{smooth_k}", k_block=k_block, smooth_k=smooth_k)
    # amax values a whose a / fl(a / 448) > 448 in fp32
    a = torch.arange(0x3F80, 0x4000, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    over = a[(a.float() / (a.float() / 448.0)) > 448.0]
    assert over.numel() > 0
    n = over.numel()
    q2 = torch.full((1, n, 1, d), 0.5, dtype=dtype)
    q2[0, :, 0, 3] = -over
    q2 = q2.to(device)
    kv = torch.full((1, n, 1, d), 0.25, dtype=dtype)
    kv[0, :, 0, 5] = over
    kv = kv.to(device)
    o = check(q2, kv, kv, "saturation", k_block=1, smooth_k=False)
    assert (o.q[0, :, 0, 3].view(torch.uint8) == 0xFE).all()  # -448
    assert (o.k[0, :, 0, 5].view(torch.uint8) == 0x7E).all()  # 448


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_empty(device):
    """Empty batch, query or key axes give empty operands; Skv = 0 gives v8 [B, Hkv, D, 32] of
    zero codes and zero v factors (and empty k factors of either kind)."""
    d = 64
    for b, sq, skv in [(0, 4, 4), (1, 0, 40), (2, 3, 0), (1, 0, 0)]:
        q, k = mk(b, sq, 4, d, torch.bfloat16, device, "bshd"), mk(b, skv, 2, d, torch.bfloat16, device, "bshd")
        for k_block in (1, 128):
            o = check(q, k, k, f"empty {(b, sq, skv)} kb{k_block}", k_block=k_block)
            assert o.v.shape == (b, 2, d, max(32, -(-skv // 32) * 32))
            if skv == 0:
                assert (o.v.view(torch.uint8) == 0).all() and (o.v_descale == 0).all()
                assert o.k_descale.shape == (b, 0, 2)


@pytest.mark.isolated
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_errors(device):
    q = torch.randn(1, 8, 4, 64, device=device, dtype=torch.bfloat16)
    k = torch.randn(1, 40, 2, 64, device=device, dtype=torch.bfloat16)
    f8 = q.to(F8)

    def outs(q_, k_, k_block=128, **over):
        b, sq, h, d = q_.shape
        skv, hk = k_.shape[1], k_.shape[2]
        o = dict(q8=torch.empty(q_.shape, dtype=F8, device=device), k8=torch.empty(k_.shape, dtype=F8, device=device),
                 v8=torch.empty(b, hk, d, -(-max(skv, 1) // 32) * 32, dtype=F8, device=device),
                 q_descale=torch.empty(b, sq, h, device=device),
                 k_descale=torch.empty(b, skv if k_block == 1 else -(-skv // 128), hk, device=device),
                 v_descale=torch.empty(b, hk, d, device=device))
        o.update(over)
        return [o[n] for n in NAMES]

    def op(*out, q_=q, k_=k, v_=k, layout="bshd", k_block=128, smooth_keys=0):
        lk.ops.quantize_attention_fp8(*out, q_, k_, v_, layout, True, smooth_keys, k_block)

    cases = [
        (lambda: lk.quantize_attention_fp8(q.int(), k.int(), k.int()), "q must be bfloat16, float16 or float32"),
        (lambda: lk.quantize_attention_fp8(f8, k.to(F8), k.to(F8)), "q must be bfloat16, float16 or float32"),
        (lambda: lk.quantize_attention_fp8(q, k.half(), k), "k and q must have the same dtype"),
        (lambda: lk.quantize_attention_fp8(q, k, k.float()), "v and q must have the same dtype"),
        (lambda: lk.quantize_attention_fp8(q[0], k[0], k[0]), "q, k and v must be 4-D"),
        (lambda: lk.quantize_attention_fp8(q, k, k, layout="sbhd"), "layout must be 'bshd'"),
        (lambda: op(*outs(q, k), layout="bsdh"), "layout must be 'bshd'"),
        (lambda: lk.quantize_attention_fp8(q, k, k, k_block=64), "k_block must be 1 or 128"),
        (lambda: op(*outs(q, k), k_block=64), "k_block must be 1 (a k factor per key) or 128"),
        (lambda: lk.quantize_attention_fp8(q, k, k, smooth_keys=100), "smooth_keys must be 0 (the mean of all keys) or"),
        (lambda: lk.quantize_attention_fp8(q, k, k, smooth_keys=-64), "a positive multiple of 64 (got -64)"),
        (lambda: op(*outs(q, k), smooth_keys=96), "smooth_keys must be 0 (the mean of all keys) or a positive multiple of 64"),
        (lambda: op(*outs(q, k), smooth_keys=-64), "a positive multiple of 64 (got -64)"),
        (lambda: lk.quantize_attention_fp8(q, torch.randn(2, 40, 2, 64, dtype=q.dtype, device=device),
                                           torch.randn(2, 40, 2, 64, dtype=q.dtype, device=device)),
         "k must be [B, S, H, D] with q's batch and head dim"),
        (lambda: lk.quantize_attention_fp8(q, k[..., :32], k[..., :32]), "with q's batch and head dim"),
        (lambda: lk.quantize_attention_fp8(q, k, k[:, :20]), "v must have k's shape"),
        (lambda: lk.quantize_attention_fp8(q, k[:, :, :1].repeat(1, 1, 3, 1), k[:, :, :1].repeat(1, 1, 3, 1)),
         "q's heads must be a multiple of k's heads"),
        (lambda: lk.quantize_attention_fp8(q[..., :60], k[..., :60], k[..., :60]),
         "the head dim must be a multiple of 8 in [8, 256]"),
        (lambda: lk.quantize_attention_fp8(*(torch.randn(1, 2, 1, 264, dtype=q.dtype, device=device),) * 3),
         "the head dim must be a multiple of 8 in [8, 256]"),
        (lambda: op(*outs(q, k, q8=torch.empty(1, 8, 4, 64, device=device))), "q8 must be Float8_e4m3fn"),
        (lambda: op(*outs(q, k, q8=torch.empty(1, 8, 2, 64, dtype=F8, device=device))), "q8 must have shape"),
        (lambda: op(*outs(q, k, k8=torch.empty(1, 41, 2, 64, dtype=F8, device=device))), "k8 must have shape"),
        (lambda: op(*outs(q, k, v8=torch.empty(1, 2, 64, 40, dtype=F8, device=device))),
         "v8 must have shape [B, Hkv, D, Skv_pad]"),
        (lambda: op(*outs(q, k, v8=torch.empty(1, 2, 64, 96, dtype=F8, device=device))), "v8 must have shape"),
        (lambda: op(*outs(q, k, q_descale=torch.empty(1, 4, 8, device=device))), "q_descale must have shape [B, Sq, H]"),
        (lambda: op(*outs(q, k, k_descale=torch.empty(1, 40, 2, device=device))),
         "k_descale must have shape [B, ceil(Skv / 128), Hkv] = [1, 1, 2]"),
        (lambda: op(*outs(q, k, 1, k_descale=torch.empty(1, 1, 2, device=device)), k_block=1),
         "k_descale must have shape [B, Skv, Hkv] = [1, 40, 2]"),
        (lambda: op(*outs(q, k, v_descale=torch.empty(1, 2, 64, dtype=torch.float16, device=device))),
         "v_descale must be Float"),
        (lambda: op(*outs(q, k, q8=torch.empty(1, 4, 8, 64, dtype=F8, device=device).transpose(1, 2))),
         "q8 must be contiguous"),
        (lambda: op(*outs(q, k, v_descale=torch.empty(1, 64, 2, device=device).transpose(1, 2))),
         "v_descale must be contiguous"),
    ]
    if HAS_CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        cases += [
            (lambda: lk.quantize_attention_fp8(q, k.to(other), k), "k and q must be on the same device"),
            (lambda: lk.quantize_attention_fp8(q, k, k.to(other)), "v and q must be on the same device"),
            (lambda: op(*outs(q, k, k8=torch.empty(k.shape, dtype=F8, device=other))),
             "k8 and q must be on the same device"),
        ]
    for fn, rule in cases:
        expect_error(OP, fn, rule)
    # an output sharing bytes with an input
    qf, kf = q.float(), k.float()
    o = outs(qf, kf)
    o[3] = qf.view(-1)[:32].view(1, 8, 4)  # q_descale inside q
    expect_error(OP, lambda: op(*o, q_=qf, k_=kf, v_=kf), "the outputs must not overlap q, k or v")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_sentinel_outputs_and_inputs_untouched(device):
    """Every byte of every output is written (outputs pre-filled with NaN codes and NaN factors:
    v8's padding too) and the inputs are not."""
    for layout, skv, k_block in [("bshd", 70, 128), ("bhsd", 129, 1), ("bshd", 0, 128)]:
        q, k, v = (mk(2, s, h, 64, torch.float16, device, layout) for s, h in ((33, 4), (skv, 2), (skv, 2)))
        saved = [t.clone() for t in (q, k, v)]
        want = want_of(q, k, v, layout=layout, k_block=k_block)
        outs = [torch.full(w.shape, float("nan"), device=device) if w.dtype != F8 else
                torch.full(w.shape, 0x7F, dtype=torch.uint8, device=device).view(F8) for w in want]
        lk.ops.quantize_attention_fp8(*outs, q, k, v, layout, True, 0, k_block)
        assert_matches(outs, want, f"sentinel {layout} skv{skv}")
        for t, t0 in zip((q, k, v), saved):
            assert torch.equal(t, t0)


# torch's SchemaCheckMode (opcheck's test_schema) multiplies the arguments to detect mutation, which
# is not implemented for float8 tensors; the other utilities run, and the mutation contract is the
# sentinel test above (as in tests/test_fp8.py).
OPCHECK_UTILS = ("test_faketensor", "test_aot_dispatch_dynamic", "test_autograd_registration")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_opcheck_and_compile(device):
    q, k = mk(1, 16, 2, 64, torch.bfloat16, device, "bshd"), mk(1, 40, 1, 64, torch.bfloat16, device, "bshd")
    o = lk.quantize_attention_fp8(q, k, k)
    outs = [torch.empty_like(t) for t in o]
    torch.library.opcheck(lk.ops.quantize_attention_fp8.default, (*outs, q, k, k, "bshd", True, 0, 128),
                          test_utils=OPCHECK_UTILS)
    f = torch.compile(lambda a, b: lk.quantize_attention_fp8(a, b, b, k_block=1), fullgraph=True)
    assert_matches(f(q, k), want_of(q, k, k, k_block=1), "compiled")


def test_fp8_attention_on_cpu_operands():
    """The operands drive lk.attention as before (the accuracy bounds of tests/test_attention.py
    hold on them: checked there; here one call per layout against the dequantized reference)."""
    for layout in ("bshd", "bhsd"):
        q, k, v = (mk(1, s, 2, 64, torch.bfloat16, "cpu", layout) for s in (40, 70, 70))
        ops8 = lk.quantize_attention_fp8(q, k, v, layout=layout)
        out = lk.attention(*ops8, layout=layout)
        qd, kd, vd = ref.attention_fp8_dequantize(*ops8, layout=layout)
        want = ref.attention(qd, kd, vd, layout=layout)
        err = (out.double() - want).abs()
        assert (err <= 2.0**-4 * vd.abs().max() + 2.0**-8 * want.abs()).all(), float(err.max())


# ---- CUDA only -------------------------------------------------------------------------------


@CUDA
def test_cuda_graph_capture_and_streams():
    """Capturable (no host synchronisation or copies) and on the current stream; replays give the
    same bytes as an eager call."""
    q, k, v = (mk(2, s, 4, 128, torch.bfloat16, "cuda", "bshd") for s in (300, 500, 500))
    want = want_of(q, k, v)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        assert_matches(lk.quantize_attention_fp8(q, k, v), want, "side stream")
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o = lk.quantize_attention_fp8(q, k, v)
    for _ in range(2):
        g.replay()
        torch.cuda.synchronize()
        assert_matches(o, want, "graph replay")


@CUDA
def test_cuda_more_than_2_31_elements():
    """q, k and v of 8192 x 2049 x 128 > 2^31 elements each (int64 addressing: the last heads and
    v rows lie past 2^31): the last 64 rows of q and the last kv head of k and v against the
    reference on those slices (q rows, and each kv head, are independent)."""
    if torch.cuda.mem_get_info()[0] < 32 * 2**30:
        pytest.skip("needs ~32 GiB of free GPU memory")
    s, h, d = 8192, 2049, 128
    q, k, v = (torch.randn(1, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    assert q.numel() > 2**31
    for k_block in (1, 128):
        o = lk.quantize_attention_fp8(q, k, v, k_block=k_block)
        tail = slice(s - 64, s)
        w = want_of(q[:, tail], k[:, :, -1:], v[:, :, -1:], k_block=k_block)
        assert torch.equal(o.q[:, tail].cpu().view(torch.uint8), w[0].view(torch.uint8))
        assert torch.equal(o.q_descale[:, tail].cpu(), w[3])
        assert torch.equal(o.k[:, :, -1:].cpu().view(torch.uint8), w[1].view(torch.uint8))
        assert torch.equal(o.k_descale[:, :, -1:].cpu(), w[4])
        assert torch.equal(o.v[:, -1:].cpu().view(torch.uint8), w[2].view(torch.uint8))
        assert torch.equal(o.v_descale[:, -1:].cpu(), w[5])
        del o
        torch.cuda.empty_cache()
