"""Pure-PyTorch oracles written from the math, in fp32. Tests compare the kernels to these;
they never call the kernels. Each returns fp32 (cast to the kernel's dtype when comparing).
"""

from typing import Optional

import torch


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6) -> torch.Tensor:
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.float()
    return y


def gelu(x: torch.Tensor) -> torch.Tensor:
    """0.5 x (1 + erf(x / sqrt(2)))"""
    xf = x.float()
    return 0.5 * xf * (1.0 + torch.erf(xf * 0.7071067811865476))


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))"""
    xf = x.float()
    return 0.5 * xf * (1.0 + torch.tanh(0.7978845608028654 * (xf + 0.044715 * xf * xf * xf)))


def silu(x: torch.Tensor) -> torch.Tensor:
    """x sigmoid(x)"""
    xf = x.float()
    return xf * torch.sigmoid(xf)


def gelu_and_mul(x: torch.Tensor, approximate: str = "none", act_first: bool = True) -> torch.Tensor:
    """x [..., 2d]: act(x[..., :d]) * x[..., d:] (act_first) or x[..., :d] * act(x[..., d:])."""
    act = gelu_tanh if approximate == "tanh" else gelu
    d = x.shape[-1] // 2
    a, b = x[..., :d].float(), x[..., d:].float()
    return act(a) * b if act_first else a * act(b)


def silu_and_mul(x: torch.Tensor, act_first: bool = True) -> torch.Tensor:
    d = x.shape[-1] // 2
    a, b = x[..., :d].float(), x[..., d:].float()
    return silu(a) * b if act_first else a * silu(b)


def gated_attention(x: torch.Tensor, gate_logits: torch.Tensor) -> torch.Tensor:
    """x [..., H*D] * 2 sigmoid(gate_logits [..., H]) broadcast over each head's D columns."""
    heads = gate_logits.shape[-1]
    xf = x.float().unflatten(-1, (heads, x.shape[-1] // heads))
    return (xf * (2.0 * torch.sigmoid(gate_logits.float())).unsqueeze(-1)).flatten(-2)


# @family:activation

# @family:fused_norm
def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
               eps: float = 1e-5) -> torch.Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias, biased variance, fp32, two-pass."""
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    var = (xf - mean).pow(2).mean(dim=-1, keepdim=True)
    y = (xf - mean) * torch.rsqrt(var + eps)
    if weight is not None:
        y = y * weight.float()
    if bias is not None:
        y = y + bias.float()
    return y


def broadcast_table(t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """An AdaLN table ([B, C] per sample, or x.shape per token) as fp32 of x's shape."""
    t = t.float()
    if t.shape != x.shape:
        t = t.reshape(t.shape[0], *([1] * (x.dim() - 2)), t.shape[-1])
    return t.expand(x.shape)


def adaln_modulate(y: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """y * (1 + scale) + shift in fp32, scale/shift [B, C] or y.shape."""
    return y.float() * (1 + broadcast_table(scale, y)) + broadcast_table(shift, y)


def add_residual(x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    """x + residual, computed in fp32 and rounded once to x.dtype (the stored residual)."""
    return (x.float() + residual.float()).to(x.dtype)


def gated_residual(h: torch.Tensor, y: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """h + y * gate in fp32 (product, then sum), rounded once to h.dtype."""
    return (h.float() + y.float() * broadcast_table(gate, h)).to(h.dtype)


def add_rms_norm(x, residual, weight=None, eps: float = 1e-6):
    """(rms_norm(r) * weight in fp32, r) with r = x + residual rounded to x.dtype."""
    r = add_residual(x, residual)
    return rms_norm(r, weight, eps), r


def adaln_rms_norm(x, scale, shift, weight=None, eps: float = 1e-6):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.float()
    return y * (1 + broadcast_table(scale, x)) + broadcast_table(shift, x)


def adaln_layer_norm(x, scale, shift, weight=None, bias=None, eps: float = 1e-6):
    return layer_norm(x, weight, bias, eps) * (1 + broadcast_table(scale, x)) + broadcast_table(shift, x)


def gated_residual_adaln_rms_norm(h, y, gate, scale, shift, weight=None, eps: float = 1e-6):
    """(h_new, out): h_new = h + y * gate rounded to h.dtype, out in fp32 from the rounded h_new."""
    hn = gated_residual(h, y, gate)
    return hn, adaln_rms_norm(hn, scale, shift, weight, eps)


def rope_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Pairs (2i, 2i+1) of the last dim: o[2i] = x[2i] cos[2i] - x[2i+1] sin[2i],
    o[2i+1] = x[2i] sin[2i+1] + x[2i+1] cos[2i+1]; cos/sin broadcast against x. fp32."""
    xf, c, s = x.float(), cos.float(), sin.float()
    a, b = xf[..., 0::2], xf[..., 1::2]
    even = a * c[..., 0::2] - b * s[..., 0::2]
    odd = a * s[..., 1::2] + b * c[..., 1::2]
    return torch.stack([even, odd], dim=-1).flatten(-2)


def rope_split(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Halves of the last dim d: x1 = [0, d/2), x2 = [d/2, d) share cos/sin[..., j] (width d/2):
    (x1 cos - x2 sin, x2 cos + x1 sin); cos/sin broadcast against the halves. fp32."""
    xf, c, s = x.float(), cos.float(), sin.float()
    h = xf.shape[-1] // 2
    x1, x2 = xf[..., :h], xf[..., h:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, interleaved: bool) -> torch.Tensor:
    """ltx_kernels.apply_rope's convention: x [B, S, C] or [B, S, H, d]; cos/sin [B|1, S, w]
    (shared by the heads) or [B|1, H, S, w] (per head), w = d (interleaved) or d/2 (split).
    For 3-D x, d = C / H (per-head table) or w / 2w (shared table). fp32, x's shape."""
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


# @family:rope

# @family:fp8

# @family:lowbit
