"""Low-bit family (LTX-2 FP6, OCP FP6, NVFP4), bit for bit against ltx_kernels.reference,
whose codecs are tables built from the bit fields (never the kernels). Every fp16 and bf16
bit pattern goes through each float -> FP4/FP6 conversion and the E4M3 scale conversions."""

import re

import pytest
import torch

import ltx_kernels as lk
from ltx_kernels import reference as ref

from conftest import ALL_DEVICES, DTYPES, HAS_CUDA, expect_error


def all_patterns(dtype):
    return torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)


def as_bytes(t):
    t = t.reshape(-1) if t.dim() == 0 else t
    return t.view(torch.uint8).cpu() if t.dtype != torch.uint8 else t.cpu()


def assert_bits(a, b, what=""):
    a, b = as_bytes(a), as_bytes(b)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    bad = (a != b).nonzero()
    assert bad.numel() == 0, f"{what}: {bad.shape[0]} mismatches, first at {bad[:4].tolist()}"


def _re(s):
    return re.escape(s)


# ---------------------------------------------------------------- the oracles' own tables
def test_reference_tables():
    assert ref.minifloat_table(2, 1, 1).tolist() == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    e2m3 = ref.minifloat_table(2, 3, 1)
    assert e2m3[1].item() == 0.125 and e2m3[-1].item() == 7.5
    e3m2 = ref.minifloat_table(3, 2, 3)
    assert e3m2[1].item() == 0.0625 and e3m2[-1].item() == 28.0
    # e4m3 codes decode as torch's float8_e4m3fn does (an independent implementation)
    codes = torch.arange(256, dtype=torch.uint8)
    torch.testing.assert_close(ref.minifloat_decode(codes, "e4m3"), codes.view(torch.float8_e4m3fn).float(),
                               equal_nan=True, rtol=0, atol=0)
    # LTX-2 FP6 = OCP E2M3 scaled by 2^-6: the subset's values are e2m3's / 64
    sub = torch.tensor([((v >> 5) << 7) | (v & 0x1F) for v in range(64)], dtype=torch.uint8)
    e2m3_vals = ref.minifloat_decode(torch.arange(64), "e2m3")
    torch.testing.assert_close(sub.view(torch.float8_e4m3fn).float(), e2m3_vals / 64, rtol=0, atol=0)
    assert sub.view(torch.float8_e4m3fn).float().abs().max().item() == 0.1171875


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_reference_e4m3_encoder_matches_torch(dtype):
    x = all_patterns(dtype).float()
    x = x[~torch.isnan(x) & (x.abs() <= 448)]
    assert_bits(ref.minifloat_encode(x, "e4m3").to(torch.uint8), x.to(torch.float8_e4m3fn), "e4m3 encode")


# ---------------------------------------------------------------- 1. fp6_pack / fp6_unpack
@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("shape", [(1, 4), (7, 8), (83, 36), (3, 5, 1028), (1, 4096 + 12)])
def test_fp6_pack_unpack(device, shape):
    b = torch.randint(0, 256, shape, dtype=torch.uint8)
    b[b.eq(0x7F) | b.eq(0xFF)] = 0  # no NaN (the subset has none; keep comparisons simple)
    x = b.view(torch.float8_e4m3fn).to(device)
    p = lk.fp6_pack(x)
    assert p.shape == (*shape[:-1], shape[-1] // 4 * 3) and p.dtype == torch.uint8
    assert_bits(p, ref.fp6_pack(x.cpu()), "pack")
    u = lk.fp6_unpack(p, shape[-1])
    assert u.dtype == torch.float8_e4m3fn
    assert_bits(u, ref.fp6_unpack(p.cpu(), shape[-1]), "unpack")
    # bits 6..5 are dropped (documented): the round trip clears them
    assert_bits(u, b & 0x9F, "round trip drops bits 6..5")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_fp6_round_trip_every_subset_value(device):
    v = torch.arange(64)
    e = (((v >> 5) << 7) | (v & 0x1F)).to(torch.uint8)  # every valid 6-bit value as E4M3
    x = e.repeat(5).view(torch.float8_e4m3fn)[torch.randperm(320)].to(device).view(8, 40)
    assert_bits(lk.fp6_unpack(lk.fp6_pack(x), 40), x, "round trip")
    # explicit bytes: v = 0..3 -> b0 = 0<<2 | 1>>4 ... from the contract
    q = torch.tensor([[0x01, 0x02, 0x03, 0x84]], dtype=torch.uint8)  # v = 1, 2, 3, 0x24
    v0, v1, v2, v3 = 1, 2, 3, 0x24
    want = [(v0 << 2 | v1 >> 4) & 0xFF, (v1 << 4 | v2 >> 2) & 0xFF, (v2 << 6 | v3) & 0xFF]
    assert lk.fp6_pack(q.view(torch.float8_e4m3fn).to(device)).cpu().tolist() == [want]


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_fp6_pack_misaligned_and_strided(device):
    b = torch.randint(0, 256, (9, 70), dtype=torch.uint8)
    b[b.eq(0x7F) | b.eq(0xFF)] = 0
    base = b.view(torch.float8_e4m3fn).to(device)
    for x in [base[:, 2:66], base.reshape(-1)[1:1 + 9 * 64].view(9, 64)]:
        assert_bits(lk.fp6_pack(x), ref.fp6_pack(x.cpu()), "pack strided")
    pb = torch.randint(0, 256, (9 * 48 + 1,), dtype=torch.uint8, device=device)[1:].view(9, 48)
    assert_bits(lk.fp6_unpack(pb, 64), ref.fp6_unpack(pb.cpu(), 64), "unpack misaligned")


# ---------------------------------------------------------------- 2. per-block FP6
def fp6_block_inputs(dtype):
    """Every pattern of dtype as a weight matrix (NaN/Inf excluded), 128 columns."""
    x = all_patterns(dtype).float()
    x = x[torch.isfinite(x)]
    x = x[: x.numel() // 128 * 128].view(-1, 128)
    return x.to(dtype)


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_quantize_fp6_block_all_patterns(device, dtype):
    w = fp6_block_inputs(dtype)
    w = w[torch.randperm(w.shape[0])]
    p, s = lk.quantize_fp6_block(w.to(device))
    pr, sr = ref.quantize_fp6_block(w)
    assert_bits(s, sr, "scales")
    assert_bits(p, pr, "packed")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_fp6_block_e4m3_conversion_every_pattern(device, dtype):
    """Scale exactly 1 (each block row holds 0.1171875): the codes are e4m3(w) for every
    pattern of |w| <= 0.1171875; also the composition e4m3 -> fp6_pack of the reference."""
    x = all_patterns(dtype)
    x = x[x.float().abs() <= 0.1171875]
    x = torch.cat([x, x[: (-x.numel()) % 15]])
    w = torch.cat([torch.full((x.numel() // 15, 1), 0.1171875, dtype=dtype), x.view(-1, 15)], 1)
    p, s = lk.quantize_fp6_block(w.to(device), block=(1, 16))
    assert (s.cpu() == 1.0).all()
    codes = ref.minifloat_encode(w.float(), "e4m3").to(torch.uint8).view(torch.float8_e4m3fn)
    assert_bits(p, ref.fp6_pack(codes), "composition e4m3 -> fp6_pack")
    assert_bits(p, ref.quantize_fp6_block(w, (1, 16))[0], "reference")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 4), (83, 260), (300, 132), (129, 128)])
def test_quantize_fp6_block_ragged(device, dtype, shape):
    w = (torch.randn(shape) * torch.rand(shape[0], 1) * 10).to(dtype)
    w[:, : min(4, shape[1])] = 0  # some zeros; an all-zero block below
    if shape[0] >= 129:
        w[128:, :] = 0
    p, s = lk.quantize_fp6_block(w.to(device))
    pr, sr = ref.quantize_fp6_block(w)
    assert_bits(s, sr, "scales")
    assert_bits(p, pr, "packed")
    if shape[0] >= 129:
        assert (s[1].cpu() == 0).all()
    for od in DTYPES:
        y = lk.dequantize_fp6_block(p, s, shape[1], out_dtype=od)
        assert y.dtype == od and y.shape == shape
        assert_bits(y, ref.dequantize_fp6_block(pr, sr, shape[1], od), f"dequant {od}")
    # dequant(quant(w)) within half an e4m3 ulp of the subset (2^-8) times the block scale
    y = lk.dequantize_fp6_block(p, s, shape[1], out_dtype=torch.float32).cpu()
    se = s.cpu().repeat_interleave(128, 0)[: shape[0]].repeat_interleave(128, 1)[:, : shape[1]]
    assert ((y - w.float()).abs() <= se * 2.0**-8 * (1 + 1e-4)).all()


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_quantize_fp6_block_nan_and_other_blocks(device):
    w = torch.randn(130, 256)
    w[5, 7] = float("nan")
    w[129, 200] = float("-inf")
    p, s = lk.quantize_fp6_block(w.to(device), block=(64, 32))
    pr, sr = ref.quantize_fp6_block(w, (64, 32))
    assert_bits(s, sr, "scales")
    assert_bits(p, pr, "packed")
    u = lk.fp6_unpack(p, 256).view(torch.uint8).cpu()
    assert u[5, 7] == 0  # NaN -> code 0 (documented)
    assert torch.isinf(s[129 // 64, 200 // 32]).item()


# ---------------------------------------------------------------- 3. OCP FP6
@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("fmt", ["e2m3", "e3m2"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_quantize_fp6_every_pattern(device, fmt, dtype):
    x = all_patterns(dtype)
    c = lk.quantize_fp6(x.to(device), fmt)
    assert_bits(c, ref.quantize_fp6(x, fmt), f"{fmt} encode")
    assert (c.cpu() < 64).all()
    for od in DTYPES:
        assert_bits(lk.dequantize_fp6(c, fmt, od), ref.dequantize_fp6(c.cpu(), fmt, od), f"{fmt} decode")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("fmt,mx", [("e2m3", 7.5), ("e3m2", 28.0)])
def test_fp6_codec_specials(device, fmt, mx):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 1e9, -1e9, 0.0, -0.0, mx], device=device)
    c = lk.quantize_fp6(x, fmt).cpu()
    assert c[0] == 0  # NaN -> +0 (documented choice)
    assert c[1] == c[3] == c[7] == 0x1F and c[2] == c[4] == 0x3F  # saturating
    assert c[5] == 0 and c[6] == 0x20
    y = lk.dequantize_fp6(torch.arange(64, dtype=torch.uint8, device=device), fmt, torch.float32).cpu()
    assert y.abs().max().item() == mx
    # every code round-trips; float32 input too; bits 7..6 of a code are ignored
    assert_bits(lk.quantize_fp6(y.to(device), fmt), torch.arange(64, dtype=torch.uint8), "round trip")
    hi = torch.arange(64, dtype=torch.uint8, device=device) | 0xC0
    assert_bits(lk.dequantize_fp6(hi, fmt, torch.float32), y, "bits 7..6 ignored")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("fmt", ["e2m3", "e3m2"])
def test_quantize_fp6_float32_random(device, fmt):
    x = torch.randn(37, 129) * 8
    assert_bits(lk.quantize_fp6(x.to(device).t(), fmt), ref.quantize_fp6(x.t(), fmt), "strided")


# ---------------------------------------------------------------- 4. NVFP4
def to_blocked(s):
    """Logical [rows, k/16] scales -> cuBLASLt 128x4 tiles, written as the reshape/permute
    recipe of the cuBLAS docs (independent of the offset formula in ref / the kernels)."""
    rows, cols = s.shape
    pr, pc = -(-rows // 128) * 128, -(-cols // 4) * 4
    padded = torch.zeros(pr, pc, dtype=s.dtype)
    padded[:rows, :cols] = s
    blocks = padded.view(pr // 128, 128, pc // 4, 4).permute(0, 2, 1, 3)
    return blocks.reshape(-1, 4, 32, 4).transpose(1, 2).reshape(pr, pc)


def unswizzle(s, rows, k):
    pr, pc = s.shape
    out = torch.zeros(rows, k // 16, dtype=s.dtype)
    flat = s.reshape(-1)
    for r in range(rows):  # explicit loops: tile, then (r % 32, r // 32 % 4, c % 4) inside
        for c in range(k // 16):
            tile = (r // 128) * (pc // 4) + c // 4
            out[r, c] = flat[tile * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4]
    return out


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_nvfp4_e2m1_every_pattern(device, dtype):
    """Each block holds 6.0 and s_t = 1, so s_b = 1 and the data codes are e2m1(x) for every
    pattern with |x| <= 6 (NaN included: code 0)."""
    x = all_patterns(dtype)
    x = x[~(x.float().abs() > 6)]
    x = torch.cat([x, x[: (-x.numel()) % 15]])
    blocks = torch.cat([torch.full((x.numel() // 15, 1), 6.0, dtype=dtype), x.view(-1, 15)], 1)
    s_t = torch.tensor(1.0)
    p, s = lk.quantize_nvfp4(blocks.to(device), s_t.to(device))
    rows = blocks.shape[0]
    assert (s.cpu().reshape(-1)[ref.nvfp4_swizzle_offsets(rows, 16)[:rows, 0]] == 0x38).all()  # e4m3(1.0)
    codes = ref.minifloat_encode(blocks.float(), "e2m1")
    want = (codes[:, 0::2] << 4 | codes[:, 1::2]).to(torch.uint8)
    assert_bits(p, want, "e2m1 codes")
    pr, sr = ref.quantize_nvfp4(blocks, s_t)
    assert_bits(p, pr, "packed")
    assert_bits(s, sr, "scales")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_nvfp4_scale_conversion_every_pattern(device, dtype):
    """Block amax = 6 |v| (exact in fp32) with s_t = 1: s_b = e4m3_rne(min(|v|, 448))."""
    v = all_patterns(dtype).float()
    x = torch.zeros(v.numel(), 16)
    x[:, 3] = 6 * v
    p, s = lk.quantize_nvfp4(x.to(device), torch.tensor(1.0, device=device))
    pr, sr = ref.quantize_nvfp4(x, torch.tensor(1.0))
    assert_bits(s, sr, "scales")
    assert_bits(p, pr, "packed")
    a = v.abs()
    a = torch.where(torch.isnan(a), torch.zeros_like(a), a).clamp(max=448)
    logical = s.cpu().reshape(-1)[ref.nvfp4_swizzle_offsets(v.numel(), 16)[: v.numel(), 0]]
    assert_bits(logical, ref.minifloat_encode(a, "e4m3").to(torch.uint8), "e4m3 scale")


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 16), (7, 48), (129, 80), (300, 272), (2, 3, 64)])
@pytest.mark.parametrize("hi_first", [True, False])
def test_nvfp4_ragged(device, dtype, shape, hi_first):
    x = (torch.randn(shape) * torch.rand(*shape[:-1], 1) * 50).to(dtype)
    x[..., :16] = 0  # all-zero blocks
    if x.numel() > 40:
        x.view(-1)[37] = float("nan")
    s_t = lk.nvfp4_per_tensor_scale(x.to(device))
    assert s_t.dim() == 0 and s_t.dtype == torch.float32
    assert_bits(s_t, ref.nvfp4_per_tensor_scale(x), "s_t")
    p, s = lk.quantize_nvfp4(x.to(device), s_t, hi_first=hi_first)
    pr, sr = ref.quantize_nvfp4(x, s_t.cpu(), hi_first)
    rows, k = x.numel() // shape[-1], shape[-1]
    assert p.shape == (*shape[:-1], k // 2)
    assert s.shape == (-(-rows // 128) * 128, -(-(k // 16) // 4) * 4)
    assert_bits(p, pr, "packed")
    assert_bits(s, sr, "scales")
    # the swizzle by an independent recipe, padding zero
    logical = ref.nvfp4_block_scale_codes(x, s_t.cpu()).to(torch.uint8)
    assert_bits(s, to_blocked(logical), "swizzle (reshape recipe)")
    assert_bits(unswizzle(s.cpu(), rows, k), logical, "swizzle (loops)")
    assert (logical[:, 0] == 0).all()  # all-zero blocks have scale 0
    for od in DTYPES:
        y = lk.dequantize_nvfp4(p, s, s_t, k, out_dtype=od, hi_first=hi_first)
        assert y.shape == x.shape and y.dtype == od
        assert_bits(y, ref.dequantize_nvfp4(pr, sr, s_t.cpu(), k, od, hi_first), f"dequant {od}")
    # reconstruction error bounded by the E2M1 grid at the block's scale
    y = lk.dequantize_nvfp4(p, s, s_t, k, out_dtype=torch.float32, hi_first=hi_first).cpu().reshape(-1, 16)
    xf = x.float().reshape(-1, 16)
    ok = ~torch.isnan(xf)
    amax = xf.abs().nan_to_num(0).amax(-1, keepdim=True)
    normal = (amax / 6 / s_t.cpu()) >= 2.0**-6  # s_b a normal E4M3 (subnormal scales are coarse)
    assert ((y - xf).abs() <= 0.18 * amax + 1e-30)[ok & normal].all()
    assert (y[~ok] == 0).all()  # NaN -> code 0


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_nvfp4_zero_tensor_and_misaligned(device):
    x = torch.zeros(5, 32, device=device)
    s_t = lk.nvfp4_per_tensor_scale(x)
    assert s_t.item() == 0
    p, s = lk.quantize_nvfp4(x, s_t)
    assert (p == 0).all() and (s == 0).all()
    base = (torch.randn(17 * 64 + 1) * 3).to(torch.bfloat16)
    x = base[1:].view(17, 64)  # misaligned: scalar paths
    s_t = ref.nvfp4_per_tensor_scale(x)
    p, s = lk.quantize_nvfp4(x.to(device), s_t.to(device))
    pr, sr = ref.quantize_nvfp4(x, s_t)
    assert_bits(p, pr, "packed")
    assert_bits(s, sr, "scales")


# ---------------------------------------------------------------- errors, empty, opcheck, compile
@pytest.mark.isolated
@pytest.mark.parametrize("device", ALL_DEVICES)
def test_bad_input_errors(device):
    e4 = torch.zeros(4, 8, device=device).to(torch.float8_e4m3fn)
    w = torch.randn(8, 16, device=device)
    st = torch.tensor(1.0, device=device)
    bad = [
        ("fp6_pack", lambda: lk.fp6_pack(torch.zeros(4, 8, device=device)), "x must be Float8_e4m3fn"),
        ("fp6_pack", lambda: lk.fp6_pack(e4[:, :6]), "x.shape[-1] must be a multiple of 4"),
        ("fp6_pack", lambda: lk.fp6_pack(e4, out=torch.empty(4, 5, dtype=torch.uint8, device=device)), "out must have shape [4, 6]"),
        ("fp6_unpack", lambda: lk.fp6_unpack(torch.zeros(4, 6, dtype=torch.uint8, device=device), 12), "packed.shape[-1] must be 3 n / 4 = 9"),
        ("fp6_unpack", lambda: lk.fp6_unpack(torch.zeros(4, 6, dtype=torch.uint8, device=device), 6), "must be a multiple of 4"),
        ("fp6_unpack", lambda: lk.fp6_unpack(torch.zeros(2, 6, dtype=torch.uint8, device=device), 7), "must be a multiple of 4"),
        ("quantize_fp6_block", lambda: lk.quantize_fp6_block(w.int()), "w must be float32, float16 or bfloat16"),
        ("quantize_fp6_block", lambda: lk.quantize_fp6_block(w[:, :14]), "w.shape[1] must be a multiple of 4"),
        ("quantize_fp6_block", lambda: lk.quantize_fp6_block(w[0]), "w must be 2-D"),
        ("quantize_fp6_block", lambda: lk.quantize_fp6_block(w, block=(128, 6)), "block_cols % 4 == 0"),
        ("dequantize_fp6_block", lambda: lk.dequantize_fp6_block(torch.zeros(8, 12, dtype=torch.uint8, device=device), torch.zeros(2, 1, device=device), 16), "scales must have shape [1, 1]"),
        ("quantize_fp6", lambda: lk.quantize_fp6(w, "e5m0"), 'fmt must be "e2m3" or "e3m2"'),
        ("dequantize_fp6", lambda: lk.dequantize_fp6(w, "e2m3"), "codes must be Byte"),
        ("quantize_nvfp4", lambda: lk.quantize_nvfp4(w[:, :8], st), "x.shape[-1] must be a multiple of 16"),
        ("quantize_nvfp4", lambda: lk.quantize_nvfp4(w, st.double()), "per_tensor_scale must be Float"),
        ("quantize_nvfp4", lambda: lk.quantize_nvfp4(w, torch.ones(2, device=device)), "per_tensor_scale must hold one element"),
        ("dequantize_nvfp4", lambda: lk.dequantize_nvfp4(torch.zeros(8, 8, dtype=torch.uint8, device=device), torch.zeros(128, 4, dtype=torch.uint8, device=device), st, 32), "packed must have shape [8, 16]"),
        ("dequantize_nvfp4", lambda: lk.dequantize_nvfp4(torch.zeros(8, 8, dtype=torch.uint8, device=device), torch.zeros(8, 4, dtype=torch.uint8, device=device), st, 16), "block_scales must have shape [128, 4]"),
    ]
    if HAS_CUDA:
        other = "cpu" if device == "cuda" else "cuda"
        bad.append(("quantize_nvfp4", lambda: lk.quantize_nvfp4(w, st.to(other)), "must be on the same device"))
    for op, fn, msg in bad:
        expect_error(op, fn, msg)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_empty(device):
    e4 = torch.zeros(0, 8, device=device).to(torch.float8_e4m3fn)
    assert lk.fp6_pack(e4).shape == (0, 6)
    assert lk.fp6_unpack(torch.zeros(0, 6, dtype=torch.uint8, device=device), 8).shape == (0, 8)
    p, s = lk.quantize_fp6_block(torch.zeros(0, 8, device=device))
    assert p.shape == (0, 6) and s.shape == (0, 1)
    assert lk.dequantize_fp6_block(p, s, 8).shape == (0, 8)
    assert lk.quantize_fp6(torch.zeros(3, 0, device=device)).shape == (3, 0)
    assert lk.dequantize_fp6(torch.zeros(0, dtype=torch.uint8, device=device)).shape == (0,)
    x = torch.zeros(0, 32, device=device)
    st = lk.nvfp4_per_tensor_scale(x)
    assert st.item() == 0
    p, s = lk.quantize_nvfp4(x, st)
    assert p.shape == (0, 16) and s.shape == (0, 4)
    assert lk.dequantize_nvfp4(p, s, st, 32).shape == (0, 32)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_opcheck(device):
    ops = lk.ops
    e4 = torch.randint(0, 0x7E, (7, 16), dtype=torch.uint8).view(torch.float8_e4m3fn).to(device)
    w = torch.randn(130, 132, device=device, dtype=torch.bfloat16)
    pk, sc = lk.quantize_fp6_block(w)
    st = lk.nvfp4_per_tensor_scale(w)
    np_, ns = lk.quantize_nvfp4(w[:, :128], st)
    u8 = dict(dtype=torch.uint8, device=device)
    cases = [
        (ops.fp6_pack.default, (torch.empty(7, 12, **u8), e4)),
        (ops.fp6_unpack.default, (torch.empty(7, 16, device=device).to(torch.float8_e4m3fn), lk.fp6_pack(e4))),
        (ops.quantize_fp6_block.default, (torch.empty_like(pk), torch.empty_like(sc), w, 128, 128)),
        (ops.dequantize_fp6_block.default, (torch.empty(130, 132, device=device), pk, sc, 128, 128)),
        (ops.quantize_fp6.default, (torch.empty(130, 132, **u8), w, "e3m2")),
        (ops.dequantize_fp6.default, (torch.empty(7, 16, device=device), e4.view(torch.uint8), "e2m3")),
        (ops.quantize_nvfp4.default, (torch.empty_like(np_), torch.empty_like(ns), w[:, :128].contiguous(), st, True)),
        (ops.dequantize_nvfp4.default, (torch.empty(130, 128, device=device), np_, ns, st, False)),
    ]
    for op, args in cases:
        # test_schema multiplies the tensors, which float8_e4m3fn does not support on CPU
        e4m3 = any(isinstance(a, torch.Tensor) and a.dtype == torch.float8_e4m3fn for a in args)
        utils = ("test_faketensor", "test_autograd_registration") if e4m3 else None
        if utils:
            torch.library.opcheck(op, args, test_utils=utils)
        else:
            torch.library.opcheck(op, args)


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_compile_fullgraph(device):
    torch._dynamo.reset()
    x = torch.randn(3, 130, 64, device=device, dtype=torch.bfloat16)

    def f(x):
        st = lk.nvfp4_per_tensor_scale(x)
        p, s = lk.quantize_nvfp4(x * 2.0, st * 2.0)
        return lk.dequantize_nvfp4(p, s, st * 2.0, 64, torch.float32)

    y = torch.compile(f, fullgraph=True)(x)
    st = ref.nvfp4_per_tensor_scale(x) * 2.0
    pr, sr = ref.quantize_nvfp4(x * 2.0, st)
    assert_bits(y, ref.dequantize_nvfp4(pr, sr, st, 64, torch.float32), "compiled")


@pytest.fixture(autouse=True)
def _cuda_kernel_registered(request):
    from conftest import skip_cuda_without_kernel

    skip_cuda_without_kernel(request, "quantize_nvfp4")
