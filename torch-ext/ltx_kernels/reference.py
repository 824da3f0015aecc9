"""Pure-PyTorch oracles written from the math. Tests compare the kernels to these; they never
call the kernels.

Two kinds:
  * arithmetic results (norms, activations, RoPE, attention, GEMMs): computed in float64 from the
    inputs (which every dtype represents exactly in float64) and returned as float64, so the
    oracle's own error (~2^-53 relative, times the formula's conditioning) is far below any
    fp32 kernel's. Tests bound the kernel's distance to them from the formula and the dtype.
    Values a kernel stores in its input dtype as an intermediate (the residual of add_rms_norm,
    h_new of the gated residual) are defined by the fp32 arithmetic the kernels perform and are
    rounded once to that dtype, as the kernels do; those helpers say so.
  * quantizers and codecs (FP8, FP6, NVFP4): defined by fp32 arithmetic (an fp32 division
    x / s, then round-to-nearest-even to the format, from its bit fields): kernels must match
    them bit for bit.
"""

from typing import Optional

import torch


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6) -> torch.Tensor:
    """x / sqrt(mean(x^2) + eps) * weight, float64."""
    xd = x.double()
    y = xd * torch.rsqrt(xd.pow(2).mean(dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.double()
    return y


def _at_neg_inf(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """y with -0.0 where x = -inf: the activations' limit there (the formulas give -inf * 0)."""
    return torch.where(x == float("-inf"), torch.full_like(y, -0.0), y)


def gelu(x: torch.Tensor) -> torch.Tensor:
    """0.5 x (1 + erf(x / sqrt(2))), float64, evaluated as 0.5 x erfc(-x / sqrt(2)) (the same
    function without the cancellation of 1 + erf for x << 0). gelu(-inf) = -0."""
    xd = x.double()
    return _at_neg_inf(xd, 0.5 * xd * torch.special.erfc(-xd * 0.7071067811865476))


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """0.5 x (1 + tanh(v)), v = sqrt(2/pi) (x + 0.044715 x^3), float64, evaluated as
    x sigmoid(2v) (the same function without the cancellation of 1 + tanh(v) for x << 0).
    gelu_tanh(-inf) = -0."""
    xd = x.double()
    v = 0.7978845608028654 * (xd + 0.044715 * xd * xd * xd)
    return _at_neg_inf(xd, xd * torch.sigmoid(2.0 * v))


def silu(x: torch.Tensor) -> torch.Tensor:
    """x sigmoid(x), float64. silu(-inf) = -0."""
    xd = x.double()
    return _at_neg_inf(xd, xd * torch.sigmoid(xd))


def gelu_and_mul(x: torch.Tensor, approximate: str = "none", act_first: bool = True) -> torch.Tensor:
    """x [..., 2d]: act(x[..., :d]) * x[..., d:] (act_first) or x[..., :d] * act(x[..., d:]),
    float64."""
    act = gelu_tanh if approximate == "tanh" else gelu
    d = x.shape[-1] // 2
    a, b = x[..., :d].double(), x[..., d:].double()
    return act(a) * b if act_first else a * act(b)


def silu_and_mul(x: torch.Tensor, act_first: bool = True) -> torch.Tensor:
    d = x.shape[-1] // 2
    a, b = x[..., :d].double(), x[..., d:].double()
    return silu(a) * b if act_first else a * silu(b)


def gated_attention(x: torch.Tensor, gate_logits: torch.Tensor) -> torch.Tensor:
    """x [..., H*D] * 2 sigmoid(gate_logits [..., H]) broadcast over each head's D columns,
    float64."""
    heads = gate_logits.shape[-1]
    xd = x.double().unflatten(-1, (heads, x.shape[-1] // heads))
    return (xd * (2.0 * torch.sigmoid(gate_logits.double())).unsqueeze(-1)).flatten(-2)


def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
               eps: float = 1e-5) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias, biased variance, float64, two-pass."""
    xd = x.double()
    mean = xd.mean(dim=-1, keepdim=True)
    var = (xd - mean).pow(2).mean(dim=-1, keepdim=True)
    y = (xd - mean) * torch.rsqrt(var + eps)
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    return y


def broadcast_table(t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """An AdaLN table ([B, C] per sample, or x.shape per token) as float64 of x's shape."""
    t = t.double()
    if t.shape != x.shape:
        t = t.reshape(t.shape[0], *([1] * (x.dim() - 2)), t.shape[-1])
    return t.expand(x.shape)


def adaln_modulate(y: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """y * (1 + scale) + shift in float64, scale/shift [B, C] or y.shape."""
    return y.double() * (1 + broadcast_table(scale, y)) + broadcast_table(shift, y)


def add_residual(x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    """The stored residual, in x.dtype: x + residual as one fp32 addition (what the kernels
    compute), rounded to x.dtype. For fp16/bf16 inputs the fp32 sum is exact or the smaller
    term is below 2^-16 of the larger, so this is x + residual rounded once to x.dtype."""
    return (x.float() + residual.float()).to(x.dtype)


def gated_residual(h: torch.Tensor, y: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """The stored h_new, in h.dtype: h + y * gate in fp32 (the product rounded to fp32, then
    the sum; the kernels do the same, without fusing the two into an fma), rounded to h.dtype."""
    return (h.float() + y.float() * broadcast_table(gate, h).float()).to(h.dtype)


def add_rms_norm(x, residual, weight=None, eps: float = 1e-6):
    """(rms_norm(r) * weight in float64, r) with r = add_residual(x, residual) (x.dtype)."""
    r = add_residual(x, residual)
    return rms_norm(r, weight, eps), r


def adaln_rms_norm(x, scale, shift, weight=None, eps: float = 1e-6):
    """rms_norm(x) * weight * (1 + scale) + shift, float64."""
    return rms_norm(x, weight, eps) * (1 + broadcast_table(scale, x)) + broadcast_table(shift, x)


def adaln_layer_norm(x, scale, shift, weight=None, bias=None, eps: float = 1e-6):
    """layer_norm(x) * (1 + scale) + shift, float64."""
    return layer_norm(x, weight, bias, eps) * (1 + broadcast_table(scale, x)) + broadcast_table(shift, x)


def gated_residual_adaln_rms_norm(h, y, gate, scale, shift, weight=None, eps: float = 1e-6):
    """(h_new, out): h_new = gated_residual(h, y, gate) (h.dtype), out in float64 from the
    stored h_new."""
    hn = gated_residual(h, y, gate)
    return hn, adaln_rms_norm(hn, scale, shift, weight, eps)


def rope_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Pairs (2i, 2i+1) of the last dim: o[2i] = x[2i] cos[2i] - x[2i+1] sin[2i],
    o[2i+1] = x[2i] sin[2i+1] + x[2i+1] cos[2i+1]; cos/sin broadcast against x. float64."""
    xf, c, s = x.double(), cos.double(), sin.double()
    a, b = xf[..., 0::2], xf[..., 1::2]
    even = a * c[..., 0::2] - b * s[..., 0::2]
    odd = a * s[..., 1::2] + b * c[..., 1::2]
    return torch.stack([even, odd], dim=-1).flatten(-2)


def rope_split(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Halves of the last dim d: x1 = [0, d/2), x2 = [d/2, d) share cos/sin[..., j] (width d/2):
    (x1 cos - x2 sin, x2 cos + x1 sin); cos/sin broadcast against the halves. float64."""
    xf, c, s = x.double(), cos.double(), sin.double()
    h = xf.shape[-1] // 2
    x1, x2 = xf[..., :h], xf[..., h:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool) -> torch.Tensor:
    """ltx_kernels.apply_rope's convention: x [B, S, C] or [B, S, H, d]; cos/sin [B|1, S, w]
    (shared by the heads) or [B|1, H, S, w] (per head), w = d (interleaved) or d/2 (split).
    For 3-D x, d = C / H (per-head table) or w / 2w (shared table). float64, x's shape."""
    if x.dim() == 4:
        d = x.shape[-1]
    elif cos.dim() == 4:
        d = x.shape[-1] // cos.shape[1]
    else:
        d = cos.shape[-1] * (1 if interleaved else 2)
    b, s = x.shape[0], x.shape[1]
    xh = x.reshape(b, s, -1, d)  # (B, S, H, d)
    c = cos.transpose(1, 2) if cos.dim() == 4 else cos.unsqueeze(2)  # (B|1, S, H|1, w)
    sn = sin.transpose(1, 2) if sin.dim() == 4 else sin.unsqueeze(2)
    y = rope_interleaved(xh, c, sn) if interleaved else rope_split(xh, c, sn)
    return y.reshape(x.shape)


def rms_norm_rope(x, cos, sin, weight=None, eps: float = 1e-6):
    """RMSNorm over the whole row, then interleaved RoPE with full-width cos/sin [B|1, S, C]."""
    return rope_interleaved(rms_norm(x, weight, eps), cos, sin)


def rms_norm_split_rope(x, cos, sin, weight=None, eps: float = 1e-6):
    """RMSNorm over the whole row, then split RoPE per head; cos/sin [B|1, H, S, d/2]."""
    return apply_rope(rms_norm(x, weight, eps), cos, sin, interleaved=False)


# ---- FP8 (OCP E4M3 "e4m3fn" and E5M2), from the bit fields. Encoding: nearest entry of the
# table of finite magnitudes, decided exactly in float64 against the midpoints, ties to the
# even code, saturating (|v| >= max and +-inf give +-max), NaN -> NaN with its sign.
# Quantization rule: s = amax / fmax (amax ignores NaN), q = encode(x / s) (fp32 division),
# q = encode(x) when s == 0 and for NaN / +-inf elements.
FP8_FORMATS = {
    # dtype: (exponent bits, mantissa bits, bias, largest finite code, NaN code, has inf)
    torch.float8_e4m3fn: (4, 3, 7, 0x7E, 0x7F, False),
    torch.float8_e5m2: (5, 2, 15, 0x7B, 0x7F, True),
}


def fp8_max(fp8_dtype=torch.float8_e4m3fn) -> float:
    return float(fp8_decode_table(fp8_dtype)[FP8_FORMATS[fp8_dtype][3]])


def fp8_decode_table(fp8_dtype=torch.float8_e4m3fn) -> torch.Tensor:
    """float64 value of every byte 0..255 (NaN / +-inf where the format has them)."""
    eb, mb, bias, _, nan_code, has_inf = FP8_FORMATS[fp8_dtype]
    c = torch.arange(256, dtype=torch.int64)
    sign = torch.where(c >= 128, -1.0, 1.0).double()
    e = (c >> mb) & (2**eb - 1)
    m = (c & (2**mb - 1)).double()
    normal = (1.0 + m / 2**mb) * torch.pow(2.0, (e - bias).double())
    sub = (m / 2**mb) * 2.0 ** (1 - bias)
    v = sign * torch.where(e == 0, sub, normal)
    top = e == 2**eb - 1
    if has_inf:
        v = torch.where(top & (m == 0), sign * float("inf"), v)
        v = torch.where(top & (m != 0), float("nan"), v)
    else:
        v = torch.where((c & 0x7F) == nan_code, float("nan"), v)
    return v


def fp8_encode(v: torch.Tensor, fp8_dtype=torch.float8_e4m3fn) -> torch.Tensor:
    """fp32 values -> uint8 codes: round to nearest, ties to even code, saturating."""
    _, _, _, max_code, nan_code, _ = FP8_FORMATS[fp8_dtype]
    mags = fp8_decode_table(fp8_dtype)[: max_code + 1].to(v.device)  # increasing, codes 0..max_code
    a = v.float().abs().double()
    hi = torch.searchsorted(mags, a.clamp(max=float(mags[-1])).reshape(-1)).reshape(a.shape)
    hi = hi.clamp(min=1, max=max_code)
    lo = hi - 1
    mid = (mags[lo] + mags[hi]) / 2  # exact in float64
    code = torch.where(a < mid, lo, torch.where(a > mid, hi, torch.where(lo % 2 == 0, lo, hi)))
    code = torch.where(a == 0, torch.zeros_like(code), code)
    code = torch.where(a >= float(mags[-1]), torch.full_like(code, max_code), code)
    code = torch.where(torch.isnan(a), torch.full_like(code, nan_code), code)
    code = code | torch.where(torch.signbit(v.float()), 0x80, 0)
    return code.to(torch.uint8)


def fp8_decode(q: torch.Tensor) -> torch.Tensor:
    """fp8 tensor (or uint8 codes with fp8_dtype e4m3fn) -> fp32 values, on q's device."""
    dtype = q.dtype if q.dtype in FP8_FORMATS else torch.float8_e4m3fn
    codes = q.view(torch.uint8) if q.dtype in FP8_FORMATS else q
    return fp8_decode_table(dtype).to(codes.device)[codes.long()].float()


def _fp8_quantize_with(xf: torch.Tensor, s: torch.Tensor, fp8_dtype) -> torch.Tensor:
    direct = (s == 0) | ~torch.isfinite(xf)  # NaN keeps its sign, +-inf saturates
    v = torch.where(direct, xf, xf / torch.where(s == 0, torch.ones_like(s), s))
    return fp8_encode(v, fp8_dtype).view(fp8_dtype)


def _nan_abs(xf: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isnan(xf), torch.zeros_like(xf), xf.abs())


def quantize_fp8_per_token_group(x: torch.Tensor, group_size: int = 128, fp8_dtype=torch.float8_e4m3fn):
    """x [..., K] -> (q of x's shape, scales fp32 [M, K / group_size], contiguous)."""
    k = x.shape[-1]
    xf = x.float().reshape(-1, k // group_size, group_size)
    s = _nan_abs(xf).amax(dim=-1, keepdim=True) / torch.tensor(fp8_max(fp8_dtype), dtype=torch.float32)
    q = _fp8_quantize_with(xf, s, fp8_dtype).reshape(x.shape)
    return q, s.squeeze(-1).contiguous()


def quantize_fp8_block(w: torch.Tensor, block=(128, 128), fp8_dtype=torch.float8_e4m3fn):
    """w [N, K] -> (q, scales fp32 [ceil(N/bn), ceil(K/bk)]); edge tiles cover what exists."""
    bn, bk = block
    n, k = w.shape
    tn, tk = -(-n // bn), -(-k // bk)
    wf = torch.zeros(tn * bn, tk * bk, dtype=torch.float32, device=w.device)
    wf[:n, :k] = w.float()  # zero padding leaves every amax unchanged
    tiles = wf.reshape(tn, bn, tk, bk)
    s = _nan_abs(tiles).amax(dim=(1, 3), keepdim=True) / torch.tensor(fp8_max(fp8_dtype), dtype=torch.float32)
    q = _fp8_quantize_with(tiles, s, fp8_dtype).reshape(tn * bn, tk * bk)[:n, :k].contiguous()
    return q, s.reshape(tn, tk).contiguous()


def quantize_fp8_per_tensor(x: torch.Tensor, scale=None, fp8_dtype=torch.float8_e4m3fn):
    xf = x.float()
    if scale is None:
        amax = _nan_abs(xf).max() if xf.numel() else torch.zeros((), dtype=torch.float32)
        s = amax / torch.tensor(fp8_max(fp8_dtype), dtype=torch.float32)
    else:
        s = scale.float().reshape(())
    return _fp8_quantize_with(xf, s, fp8_dtype), s


def dequantize_fp8_per_token_group(q: torch.Tensor, scales: torch.Tensor, group_size: int = 128) -> torch.Tensor:
    k = q.shape[-1]
    v = fp8_decode(q).reshape(-1, k // group_size, group_size) * scales.float().unsqueeze(-1)
    return v.reshape(q.shape)


def dequantize_fp8_block(q: torch.Tensor, scales: torch.Tensor, block=(128, 128)) -> torch.Tensor:
    n, k = q.shape
    s = scales.float().repeat_interleave(block[0], 0).repeat_interleave(block[1], 1)[:n, :k]
    return fp8_decode(q) * s


def dequantize_fp8_per_tensor(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return fp8_decode(q) * scale.float().reshape(())


# ---- low-bit formats, from the bit fields. Codecs: a table of every code's magnitude built
# from (exponent, mantissa, bias); encoding picks the nearest table entry in float64 (exact),
# ties to the even code, saturating at the largest finite code.
def minifloat_table(exp_bits: int, man_bits: int, bias: int) -> torch.Tensor:
    """float64 magnitudes of the codes 0 .. 2^(exp+man) - 1 (sign bit excluded)."""
    c = torch.arange(2 ** (exp_bits + man_bits), dtype=torch.int64)
    e = c >> man_bits
    m = (c & (2**man_bits - 1)).double()
    sub = m * 2.0 ** (1 - bias - man_bits)
    nrm = (2**man_bits + m) * torch.pow(2.0, (e - bias - man_bits).double())
    return torch.where(e == 0, sub, nrm)


_FORMATS = {  # name: (exp_bits, man_bits, bias, largest finite magnitude code)
    "e4m3": (4, 3, 7, 0x7E),
    "e2m1": (2, 1, 1, 0x7),
    "e2m3": (2, 3, 1, 0x1F),
    "e3m2": (3, 2, 3, 0x1F),
}


def minifloat_encode(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """Codes (int64: sign << (exp+man) | magnitude code), RNE, saturating. NaN -> the
    sign | all-ones code for e4m3 (its NaN), 0 for the formats without NaN."""
    eb, mb, bias, max_code = _FORMATS[fmt]
    table = minifloat_table(eb, mb, bias)[: max_code + 1].to(x.device)
    xf = x.float()
    nan = torch.isnan(xf)
    a = xf.abs().double().nan_to_num(0.0).clamp(max=table[-1].item()).contiguous()
    hi = torch.searchsorted(table, a).clamp(max=max_code)
    lo = (hi - 1).clamp(min=0)
    dlo = a - table[lo]
    dhi = table[hi] - a
    pick_hi = (dhi < dlo) | ((dhi == dlo) & (hi % 2 == 0))
    mag = torch.where(pick_hi, hi, lo)
    sign = torch.signbit(xf).long() << (eb + mb)
    code = sign | mag
    if fmt == "e4m3":
        return torch.where(nan, sign | 0x7F, code)
    return torch.where(nan, torch.zeros_like(code), code)


def minifloat_decode(codes: torch.Tensor, fmt: str) -> torch.Tensor:
    """fp32 values of codes (e4m3: S.1111.111 is NaN)."""
    eb, mb, bias, _ = _FORMATS[fmt]
    table = minifloat_table(eb, mb, bias).float().to(codes.device)
    c = codes.long()
    mag = table[c & (2 ** (eb + mb) - 1)]
    v = torch.where(((c >> (eb + mb)) & 1) == 1, -mag, mag)
    if fmt == "e4m3":
        v = torch.where((c & 0x7F) == 0x7F, torch.full_like(v, float("nan")), v)
    return v


FP6_E4M3_MAX = 0.1171875


def fp6_pack(x_e4m3: torch.Tensor) -> torch.Tensor:
    """E4M3 [..., n] -> uint8 [..., 3n/4]: v = sign << 5 | bits 4..0; 4 values in 3 bytes."""
    b = x_e4m3.view(torch.uint8).long()
    v = ((b >> 7) << 5) | (b & 0x1F)
    v = v.unflatten(-1, (-1, 4))
    v0, v1, v2, v3 = v.unbind(-1)
    b0 = (v0 << 2) | (v1 >> 4)
    b1 = ((v1 << 4) | (v2 >> 2)) & 0xFF
    b2 = ((v2 << 6) | v3) & 0xFF
    return torch.stack([b0, b1, b2], -1).flatten(-2).to(torch.uint8)


def fp6_unpack(packed: torch.Tensor, n: int) -> torch.Tensor:
    """uint8 [..., 3n/4] -> E4M3 [..., n] with zeros in bits 6..5."""
    b = packed.long().unflatten(-1, (-1, 3))
    b0, b1, b2 = b.unbind(-1)
    v = torch.stack([b0 >> 2, ((b0 & 3) << 4) | (b1 >> 4), ((b1 & 0xF) << 2) | (b2 >> 6), b2 & 0x3F], -1)
    v = v.flatten(-2)
    e = ((v >> 5) << 7) | (v & 0x1F)
    return e.to(torch.uint8).view(torch.float8_e4m3fn)


def _block_expand(s: torch.Tensor, rows: int, cols: int, br: int, bc: int) -> torch.Tensor:
    return s.repeat_interleave(br, 0)[:rows].repeat_interleave(bc, 1)[:, :cols]


def fp6_block_scales(w: torch.Tensor, block=(128, 128)) -> torch.Tensor:
    """amax(|block|) (NaN ignored) / 0.1171875 in fp32, [ceil(N/br), ceil(K/bc)]."""
    br, bc = block
    n, k = w.shape
    a = w.float().abs().nan_to_num(nan=0.0)
    pad = torch.zeros(-(-n // br) * br, -(-k // bc) * bc, dtype=torch.float32, device=w.device)
    pad[:n, :k] = a
    amax = pad.unflatten(0, (-1, br)).unflatten(2, (-1, bc)).amax(dim=(1, 3))
    return amax / torch.tensor(FP6_E4M3_MAX, dtype=torch.float32)


def quantize_fp6_block(w: torch.Tensor, block=(128, 128)):
    """(packed, scales): codes e4m3_rne(w / s) (|w / s| clamped to 0.1171875; s == 0 or NaN
    -> code 0), then fp6_pack."""
    n, k = w.shape
    s = fp6_block_scales(w, block)
    se = _block_expand(s, n, k, *block)
    q = w.float() / se
    q = q.clamp(-FP6_E4M3_MAX, FP6_E4M3_MAX)
    codes = minifloat_encode(q, "e4m3")
    codes = torch.where((se > 0) & ~torch.isnan(q), codes, torch.zeros_like(codes))
    return fp6_pack(codes.to(torch.uint8).view(torch.float8_e4m3fn)), s


def dequantize_fp6_block(packed, scales, n: int, out_dtype=torch.bfloat16, block=(128, 128)):
    e = fp6_unpack(packed, n).view(torch.uint8)
    v = minifloat_decode(e, "e4m3")
    return (v * _block_expand(scales.float(), v.shape[0], n, *block)).to(out_dtype)


def quantize_fp6(x: torch.Tensor, fmt: str = "e2m3") -> torch.Tensor:
    return minifloat_encode(x, fmt).to(torch.uint8)


def dequantize_fp6(codes: torch.Tensor, fmt: str = "e2m3", out_dtype=torch.bfloat16) -> torch.Tensor:
    return minifloat_decode(codes.long() & 0x3F, fmt).to(out_dtype)


def nvfp4_per_tensor_scale(x: torch.Tensor) -> torch.Tensor:
    a = x.float().abs().nan_to_num(nan=0.0)
    amax = a.max() if a.numel() else torch.zeros((), device=x.device)
    return amax / torch.tensor(448.0 * 6.0, dtype=torch.float32, device=x.device)


def nvfp4_swizzle_offsets(rows: int, k: int) -> torch.Tensor:
    """[roundup(rows,128), roundup(k/16,4)] int64 byte offsets of the cuBLASLt 128x4 layout."""
    pr, pc = -(-rows // 128) * 128, -(-(k // 16) // 4) * 4
    r = torch.arange(pr).unsqueeze(1)
    c = torch.arange(pc).unsqueeze(0)
    tile = (r // 128) * (pc // 4) + c // 4
    return tile * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def nvfp4_block_scale_codes(x: torch.Tensor, s_t: torch.Tensor) -> torch.Tensor:
    """Logical [rows, k/16] E4M3 codes: e4m3_rne(min((amax16 / 6) / s_t, 448)); a NaN or
    non-positive ratio gives 0."""
    k = x.shape[-1]
    xb = x.float().reshape(-1, k // 16, 16)
    amax = xb.abs().nan_to_num(nan=0.0).amax(-1)
    r = (amax / torch.tensor(6.0)) / s_t.float().cpu()
    r = torch.where(r > 0, torch.clamp(r, max=448.0), torch.zeros_like(r))
    return minifloat_encode(r, "e4m3")


def quantize_nvfp4(x: torch.Tensor, s_t: torch.Tensor, hi_first: bool = True):
    """(packed uint8 [..., k/2], swizzled block scales uint8); data e2m1(x / (s_t * s_b))."""
    x = x.cpu()
    k = x.shape[-1]
    sb = nvfp4_block_scale_codes(x, s_t)  # [rows, k/16]
    rows = sb.shape[0]
    d = s_t.float().cpu() * minifloat_decode(sb, "e4m3")  # one fp32 product
    xb = x.float().reshape(rows, k // 16, 16)
    q = xb / d.unsqueeze(-1)
    q = torch.where(d.unsqueeze(-1) != 0, q, torch.zeros_like(q))
    codes = minifloat_encode(q, "e2m1").reshape(rows, k // 2, 2)
    first, second = codes[..., 0], codes[..., 1]
    byte = (first << 4 | second) if hi_first else (second << 4 | first)
    off = nvfp4_swizzle_offsets(rows, k)
    flat = torch.zeros(off.numel(), dtype=torch.int64)
    flat[off[:rows, : k // 16].reshape(-1)] = sb.reshape(-1)
    return byte.to(torch.uint8).reshape(*x.shape[:-1], k // 2), flat.to(torch.uint8).reshape(off.shape)


def dequantize_nvfp4(packed, block_scales, s_t, k: int, out_dtype=torch.bfloat16, hi_first: bool = True):
    packed = packed.cpu()
    rows = packed.numel() // (k // 2) if k else 0
    off = nvfp4_swizzle_offsets(rows, k)[:rows, : k // 16]
    sb = minifloat_decode(block_scales.cpu().reshape(-1)[off.reshape(-1)].reshape(rows, k // 16), "e4m3")
    b = packed.long().reshape(rows, k // 2)
    hi, lo = b >> 4, b & 0xF
    first, second = (hi, lo) if hi_first else (lo, hi)
    q = minifloat_decode(torch.stack([first, second], -1).reshape(rows, k // 16, 16), "e2m1")
    v = (q * sb.unsqueeze(-1)) * s_t.float().cpu()
    return v.reshape(*packed.shape[:-1], k).to(out_dtype)


def fp8_group_out(y: torch.Tensor, group_size: int = 128):
    """The FP8 output of the fused ops: the op's result y (not rounded to the input dtype; a
    float64 oracle's y is rounded to fp32, the kernels' own precision) through
    quantize_fp8_per_token_group (e4m3fn). Returns (q, scales [M, C / group_size])."""
    return quantize_fp8_per_token_group(y.float(), group_size, torch.float8_e4m3fn)


def rms_norm_fp8(x, weight=None, eps: float = 1e-6, group_size: int = 128):
    return fp8_group_out(rms_norm(x, weight, eps), group_size)


def adaln_rms_norm_fp8(x, scale, shift, weight=None, eps: float = 1e-6, group_size: int = 128):
    return fp8_group_out(adaln_rms_norm(x, scale, shift, weight, eps), group_size)


def gated_residual_adaln_rms_norm_fp8(h, y, gate, scale, shift, weight=None, eps: float = 1e-6, group_size: int = 128):
    """(h_new rounded to h.dtype, q, scales)."""
    hn, out = gated_residual_adaln_rms_norm(h, y, gate, scale, shift, weight, eps)
    return (hn, *fp8_group_out(out, group_size))


def rms_norm_rope_fp8(x, cos, sin, weight=None, eps: float = 1e-6, group_size: int = 128):
    return fp8_group_out(rms_norm_rope(x, cos, sin, weight, eps), group_size)


def rms_norm_split_rope_fp8(x, cos, sin, weight=None, eps: float = 1e-6, group_size: int = 128):
    return fp8_group_out(rms_norm_split_rope(x, cos, sin, weight, eps), group_size)


# ---- sequence parallel (Ulysses), from the definition: rank r holds x_r [B, T_r, H, D];
# send_recv_heads gives rank r every rank's tokens (in rank order) for heads [r*H/W, (r+1)*H/W);
# gather_heads is its inverse; all_gather concatenates every rank's tokens.
def sp_send_recv_heads(xs, rank: int):
    """xs: every rank's [B, T_s, H, D] (rank order) -> rank's [B, sum T_s, H/W, D]."""
    hl = xs[0].shape[2] // len(xs)
    return torch.cat([x[:, :, rank * hl:(rank + 1) * hl] for x in xs], dim=1)


def sp_gather_heads(ys, tokens, rank: int):
    """ys: every rank's [B, T_total, H/W, D] -> rank's [B, tokens[rank], H, D]."""
    p0 = sum(tokens[:rank])
    return torch.cat([y[:, p0:p0 + tokens[rank]] for y in ys], dim=2)


def sp_all_gather(xs):
    """xs: every rank's [B, T_s, ...] -> [B, sum T_s, ...]."""
    return torch.cat(list(xs), dim=1)


def na_window_indices(n: int, kernel: int, dilation: int = 1, causal: bool = False):
    """Per-query key positions of one axis from NATTEN's definition: ``(idx, valid)``, both
    ``[n, kernel]``. Query i lives in residue group ``g = i % dilation`` (``n_g`` positions
    ``g, g + dilation, ...``) at group index ``m = i // dilation``; non-causal windows start at
    ``clamp(m - kernel // 2, 0, n_g - kernel)`` (full window, shifted inward at borders), causal
    ones hold ``m - kernel + 1 .. m`` (entries below 0 invalid)."""
    i = torch.arange(n)
    g, m = i % dilation, i // dilation
    ar = torch.arange(kernel)
    if causal:
        jm = m[:, None] - (kernel - 1) + ar[None, :]
        valid = jm >= 0
        jm = jm.clamp(min=0)
    else:
        n_g = (n - g + dilation - 1) // dilation
        start = torch.minimum(torch.clamp(m - kernel // 2, min=0), n_g - kernel)
        jm = start[:, None] + ar[None, :]
        valid = torch.ones(n, kernel, dtype=torch.bool)
    return g[:, None] + dilation * jm, valid


def neighborhood_attention(q, k, v, kernel_size, dilation=None, is_causal=None, scale=None) -> torch.Tensor:
    """Neighborhood attention for q/k/v ``[B, *spatial (1-3 dims), heads, d]`` in float64: gathers
    each query's window explicitly (``na_window_indices`` per axis) and takes a plain softmax."""
    nd = q.dim() - 3
    dilation = [1] * nd if dilation is None else list(dilation)
    is_causal = [False] * nd if is_causal is None else list(is_causal)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    qf, kf, vf = (t.double() for t in (q, k, v))
    # pad to 3 spatial dims with extent 1, kernel 1
    while qf.dim() < 6:
        qf, kf, vf = qf.unsqueeze(1), kf.unsqueeze(1), vf.unsqueeze(1)
    ks = [1] * (3 - nd) + list(kernel_size)
    ds = [1] * (3 - nd) + dilation
    cs = [False] * (3 - nd) + is_causal
    B, T, H, W, heads, d = qf.shape
    dev = qf.device
    (it, vt), (ih, vh), (iw, vw) = (
        (x.to(dev), y.to(dev)) for x, y in (na_window_indices(n, kk, dd, cc) for n, kk, dd, cc in zip((T, H, W), ks, ds, cs))
    )
    # keys/values per query window: [B, T, kt, H, kh, W, kw, heads, d]
    sel = (slice(None), it[:, :, None, None, None, None], ih[None, None, :, :, None, None], iw[None, None, None, None, :, :])
    kw_, vw_ = kf[sel], vf[sel]
    valid = vt[:, :, None, None, None, None] & vh[None, None, :, :, None, None] & vw[None, None, None, None, :, :]
    s = torch.einsum("bthwnd,btahcwend->bthwnace", qf, kw_) * scale  # [B, T, H, W, heads, kt, kh, kw]
    mask = valid.permute(0, 2, 4, 1, 3, 5)[None, :, :, :, None]  # [1, T, H, W, 1, kt, kh, kw]
    s = s.masked_fill(~mask, float("-inf"))
    p = torch.softmax(s.flatten(-3), dim=-1).view(s.shape)
    o = torch.einsum("bthwnace,btahcwend->bthwnd", p, vw_)
    return o.reshape(q.shape)
# ---- GEMMs, in float64 from the (dequantized) operands (docs/semantics.md, "FP8 block scaling",
# "FP8 rowwise scaling"):
# FP8 blockwise: out = (decode(A) * sa[m, k // 128]) @ (decode(B) * sb[n // 128, k // 128])^T + bias.
# FP8 rowwise:   out = (decode(A) @ decode(B)^T) * sa[m] * sb[n] + bias.
# With dtype=torch.float32 the same formulas are the GEMMs' "torch" backend (ltx_kernels.gemm): each
# dequantized operand rounded once to fp32 (code value * scale), an fp32 matmul in the BLAS's order,
# the bias and the epilogue in fp32.
def fp8_blockwise_gemm(a, a_scales, b, b_scales, bias=None, dtype=torch.float64) -> torch.Tensor:
    """a e4m3 [..., K], a_scales [M, K/128], b e4m3 [N, K], b_scales [ceil(N/128), K/128] ->
    [..., N] in dtype (float64: the oracle)."""
    k = a.shape[-1]
    n = b.shape[0]
    dev = a.device  # computed where a lives, so large CUDA cases stay fast
    table = fp8_decode_table(torch.float8_e4m3fn).to(dev, dtype)  # every e4m3 value is exact in fp32

    def decode(q):
        return table[q.to(dev).view(torch.uint8).long()]

    ad = decode(a).reshape(-1, k // 128, 128) * a_scales.to(dev, dtype).unsqueeze(-1)
    sb = b_scales.to(dev, dtype).repeat_interleave(128, 0)[:n]
    bd = decode(b).reshape(n, k // 128, 128) * sb.unsqueeze(-1)
    y = ad.reshape(-1, k) @ bd.reshape(n, k).t()
    if bias is not None:
        y = y + bias.to(dev, dtype)
    return y.reshape(*a.shape[:-1], n)


def fp8_rowwise_gemm(a, a_scales, b, b_scales, bias=None, dtype=torch.float64) -> torch.Tensor:
    """a e4m3 [..., K], a_scales [M] or [M, 1], b e4m3 [N, K], b_scales [N] or [N, 1] ->
    (decode(a) @ decode(b)^T) * a_scales[m] * b_scales[n] + bias, [..., N] in dtype (float64: the
    oracle; the e4m3 products and their sum over K are exact there, the scales are applied once)."""
    k = a.shape[-1]
    n = b.shape[0]
    dev = a.device
    table = fp8_decode_table(torch.float8_e4m3fn).to(dev, dtype)
    ad = table[a.to(dev).view(torch.uint8).long()].reshape(-1, k)
    bd = table[b.to(dev).view(torch.uint8).long()].reshape(n, k)
    y = (ad @ bd.t()) * a_scales.to(dev, dtype).reshape(-1, 1) * b_scales.to(dev, dtype).reshape(1, n)
    if bias is not None:
        y = y + bias.to(dev, dtype)
    return y.reshape(*a.shape[:-1], n)


def bf16_gemm(a, b, bias=None, dtype=torch.float64) -> torch.Tensor:
    """a [..., K] @ b [N, K]^T + bias in dtype (float64: every bf16 value and product is exact)."""
    y = a.to(dtype).reshape(-1, a.shape[-1]) @ b.to(dtype).t()
    if bias is not None:
        y = y + bias.to(y.device, dtype)
    return y.reshape(*a.shape[:-1], b.shape[0])


def gemm_epilogue(y, epilogue: str = "none", residual=None, gate=None, dtype=torch.float64) -> torch.Tensor:
    """The GEMMs' fused epilogues on y [..., N] in dtype (float64: the oracle): "none" -> y;
    "gelu_tanh" -> 0.5 y (1 + tanh(sqrt(2/pi) (y + 0.044715 y^3))); "gated_residual" ->
    residual + gate * y with gate per sample [B, N] (B = y.shape[0]) or per token (y.shape)."""
    y = y.to(dtype)
    if epilogue == "none":
        return y
    if epilogue == "gelu_tanh":
        return 0.5 * y * (1.0 + torch.tanh(0.7978845608028654 * (y + 0.044715 * y * y * y)))
    if epilogue == "gated_residual":
        g = gate.to(y.device, dtype)
        if g.shape != y.shape:
            g = g.reshape(g.shape[0], *([1] * (y.dim() - 2)), g.shape[-1]).expand(y.shape)
        return residual.to(y.device, dtype) + g * y
    raise ValueError(f"unknown epilogue {epilogue!r}")


def fp6_blockwise_gemm(a, a_scales, b_packed, b_scales, bias=None) -> torch.Tensor:
    """As fp8_blockwise_gemm with B = fp6_unpack(b_packed) (LTX-2 packed FP6, [N, 3K/4])."""
    return fp8_blockwise_gemm(a, a_scales, fp6_unpack(b_packed.cpu(), a.shape[-1]).to(a.device), b_scales, bias)


def scaled_mm_nvfp4(a_packed, b_packed, block_a, block_b, alpha, k: int, bias=None, hi_first: bool = True):
    """NVFP4: (q_a * s_ba) @ (q_b * s_bb)^T * alpha + bias in float64 (per-tensor scales folded
    into alpha = s_a * s_w, so both operands are dequantized with s_t = 1)."""
    one = torch.ones((), dtype=torch.float32)
    a = dequantize_nvfp4(a_packed, block_a, one, k, torch.float32, hi_first).double().reshape(-1, k)
    b = dequantize_nvfp4(b_packed, block_b, one, k, torch.float32, hi_first).double().reshape(-1, k)
    y = (a @ b.t()) * alpha.cpu().double()
    if bias is not None:
        y = y + bias.cpu().double()
    return y.reshape(*a_packed.shape[:-1], b.shape[0])


def attention(q, k, v, scale=None, kv_lengths=None, key_bias=None, layout: str = "bshd") -> torch.Tensor:
    """Dense attention in float64, from the definition: per batch row b and head h (key/value head
    h // (H // Hkv)), softmax_j(scale <q_i, k_j> + key_bias[b, j]) over keys j < kv_lengths[b],
    times v; a row with no valid key (or only -inf scores) is 0. q [B, Sq, H, D], k, v
    [B, Skv, Hkv, D] ("bshd") or with S and H swapped ("bhsd"). Returns float64 in q's layout."""
    if layout == "bshd":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    q, k, v = q.double(), k.double(), v.double()
    b, h, sq, d = q.shape
    hk, skv = k.shape[1], k.shape[2]
    if scale is None:
        scale = d ** -0.5
    if hk != h:
        k = k.repeat_interleave(h // hk, 1)
        v = v.repeat_interleave(h // hk, 1)
    s = torch.einsum("bhid,bhjd->bhij", q, k) * scale
    if key_bias is not None:
        s = s + key_bias.double().reshape(b, 1, 1, skv)
    if kv_lengths is not None:
        j = torch.arange(skv, device=q.device).reshape(1, 1, 1, skv)
        s = s.masked_fill(j >= kv_lengths.to(q.device).reshape(b, 1, 1, 1), float("-inf"))
    m = s.amax(-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    p = torch.exp(s - m)
    den = p.sum(-1, keepdim=True)
    o = torch.einsum("bhij,bhjd->bhid", p, v) / torch.where(den > 0, den, torch.ones_like(den))
    o = torch.where(den > 0, o, torch.zeros_like(o))
    return o.transpose(1, 2) if layout == "bshd" else o


def quantize_attention_fp8(q, k, v, layout: str = "bshd", smooth_k: bool = True, k_block: int = 128,
                           smooth_keys: int = 0):
    """The FP8 E4M3 operands of ``attention`` from bf16 / fp16 / fp32 q, k, v, written from the
    definition (attention/attention_quant.h, docs/semantics.md); the CPU and CUDA backends match
    it bit for bit on finite inputs. Every code is e4m3(x / s), s = amax / 448 over the group (an
    fp32 division, round to nearest even, saturating), e4m3(x) where s == 0.

    q: a factor per (token, head). k: if smooth_k (and Skv > 0), the mean of its first n keys per
    (batch row, head, channel) subtracted first (n = Skv when smooth_keys is 0, else
    min(smooth_keys, Skv)): mean = float32(float64 sum / n), kc = float32(k) - mean in fp32; a
    factor per key (k_block 1) or per 128 keys and head (k_block 128). v: a factor per
    channel over the keys (0 when Skv == 0), codes transposed [B, Hkv, D, Skv_pad] with position p
    of each 32-key block holding key KEY_ORDER[p] of it, 0 past Skv.

    Returns (q8, k8, v8, q_descale [B, Sq, H], k_descale, v_descale [B, Hkv, D]) with q8 / k8 in
    q's / k's shape and layout, on the inputs' device.

    The mean's float64 sum is computed by torch here and in a fixed chunked order by the backends
    (attention_quant.h); the two agree whenever that sum is exact, which holds for any fp16 input,
    for bf16 inputs unless a channel's values span more than ~2^30 in magnitude, and for fp32 inputs
    whose values carry few enough significant bits (the tests use fp16-representable fp32 values).
    """
    from .attention import KEY_ORDER

    f8 = torch.float8_e4m3fn
    bshd = layout == "bshd"
    qb, kb, vb = (t if bshd else t.transpose(1, 2) for t in (q, k, v))  # [B, S, H, D]
    b, skv, hk, d = kb.shape
    qf = qb.float()
    q_s = _nan_abs(qf).amax(-1) / 448.0
    q8 = _fp8_quantize_with(qf, q_s.unsqueeze(-1), f8)
    kf = kb.float()
    if smooth_k and skv > 0:
        n = min(smooth_keys, skv) if smooth_keys > 0 else skv
        # + 0.0: an all -0.0 channel sums to +0 (the backends' sums start from +0.0)
        kf = kf - ((kb[:, :n].double().sum(1, keepdim=True) + 0.0) / n).float()
    if k_block == 1:
        k_s = _nan_abs(kf).amax(-1) / 448.0  # [B, Skv, Hkv]
        k8 = _fp8_quantize_with(kf, k_s.unsqueeze(-1), f8)
    else:
        k8, k_s = _fp8_key_blocks(kf)
    vt = vb.float().permute(0, 2, 3, 1)  # [B, Hkv, D, Skv]
    v_s = _nan_abs(vt).amax(-1) / 448.0 if skv > 0 else torch.zeros(b, hk, d, device=vt.device)
    spad = -(-max(skv, 1) // 32) * 32
    vt = torch.cat([vt, torch.zeros(b, hk, d, spad - skv, device=vt.device)], -1)
    order = torch.tensor([(p // 32) * 32 + KEY_ORDER[p % 32] for p in range(spad)], device=vt.device)
    v8 = _fp8_quantize_with(vt.index_select(-1, order), v_s.unsqueeze(-1), f8)
    if not bshd:
        q8, k8 = q8.transpose(1, 2), k8.transpose(1, 2)
    return q8, k8, v8, q_s, k_s, v_s


def attention_keys_fp8(x, cos, sin, weight=None, eps: float = 1e-6, heads: int = 1, split_rope: bool = False,
                       smooth_keys: int = 128, y=None):
    """k's FP8 operand from the key projection's output (attention/attention_quant.h): y =
    rms_norm_rope (split_rope: rms_norm_split_rope) of x [B, S, C], here the float64 oracle
    rounded once to fp32 (or `y`, an fp32 [B, S, C] given by the caller); minus the mean of y over
    the first min(smooth_keys, S) keys (fp64 sum, one division, one rounding to fp32; none when
    smooth_keys is 0), in fp32; then per 128 keys and head s = amax / 448, code = e4m3(kc / s).
    Returns (k8 [B, S, heads, D], k_descale [B, ceil(S / 128), heads], kc [B, S, heads, D] fp32)."""
    if y is None:
        y = (rms_norm_split_rope if split_rope else rms_norm_rope)(x, cos, sin, weight, eps).float()
    b, s, c = y.shape
    d = c // heads
    kc = y.float().reshape(b, s, heads, d)
    n = min(smooth_keys, s)
    if n > 0:  # + 0.0: an all -0.0 channel sums to +0 (the backends' sums start from +0.0)
        kc = kc - ((kc[:, :n].double().sum(1, keepdim=True) + 0.0) / n).float()
    k8, k_s = _fp8_key_blocks(kc)
    return k8, k_s, kc


def _fp8_key_blocks(kf):
    """E4M3 codes of kf [B, S, H, D] (fp32) with one factor per 128 keys and head over the block's
    keys and all D channels: (k8, k_s [B, ceil(S / 128), H])."""
    b, s, h, d = kf.shape
    nb = -(-s // 128)
    pad = torch.zeros(b, nb * 128 - s, h, d, dtype=kf.dtype, device=kf.device)
    k_s = _nan_abs(torch.cat([kf, pad], 1).reshape(b, nb, 128, h, d)).amax(dim=(2, 4)) / 448.0
    return _fp8_quantize_with(kf, k_s.repeat_interleave(128, 1)[:, :s].unsqueeze(-1), torch.float8_e4m3fn), k_s


def attention_fp8_dequantize(q8, k8, v8t, q_descale, k_descale, v_descale, layout: str = "bshd",
                             dtype: torch.dtype = torch.float64):
    """The real-valued q, k, v (q's layout; v [B, Skv, Hkv, D] bshd) that FP8 attention operands
    stand for: code value x its factor; v's keys put back in order. In float64 (exact: a code has
    4 significant bits, a factor 24), or in `dtype` (float32: each product rounded once)."""
    from .attention import KEY_ORDER

    sq_dim = 1 if layout == "bshd" else 2
    skv = k8.shape[sq_dim]
    qd = q_descale if layout == "bshd" else q_descale.transpose(1, 2)
    q = q8.to(dtype) * qd.to(dtype).unsqueeze(-1)
    kd = k_descale.to(dtype)
    if kd.shape[1] != skv:  # per 128 keys
        kd = kd.repeat_interleave(128, 1)[:, :skv]
    kd = kd if layout == "bshd" else kd.transpose(1, 2)
    k = k8.to(dtype) * kd.unsqueeze(-1)
    spad = v8t.shape[-1]
    inv = [0] * 32
    for p, key in enumerate(KEY_ORDER):
        inv[key] = p
    pos = torch.tensor([(j // 32) * 32 + inv[j % 32] for j in range(spad)], device=v8t.device)
    vt = (v8t.to(dtype) * v_descale.to(dtype).unsqueeze(-1)).index_select(-1, pos)[..., :skv]  # [B,Hk,D,Skv]
    v = vt.permute(0, 3, 1, 2) if layout == "bshd" else vt.transpose(2, 3)
    return q, k, v
