"""Norms and activations with FP8 output: the op's fp32 result y (NOT rounded to the input
dtype first) quantized per token per group of `group_size` columns in the same pass, with the
rule of quantize_fp8_per_token_group: scales = amax(|y|) / 448 (fp32 dequant scales, NaN
ignored, 0 for an all-zero group), q = e4m3(y / scale) (true fp32 division, RNE, saturating).

The public entry points are the plain wrappers with `out_dtype=torch.float8_e4m3fn`
(rms_norm, adaln_rms_norm, gated_residual_adaln_rms_norm, rms_norm_rope, rms_norm_split_rope,
gelu_tanh, silu_and_mul, gelu_and_mul, gated_attention); this module holds their plumbing and the fake
implementations of the `<op>_fp8` ops.
"""

import math
from typing import Optional, Tuple

import torch

from ._common import register_fake
from ._ops import ops
from .fp8 import _mn_major_scales_out

__all__ = []

FP8_OUT = torch.float8_e4m3fn


def wants_fp8(op: str, x: torch.Tensor, out_dtype, out=None) -> bool:
    """False for out_dtype None / x.dtype (the plain op); True for float8_e4m3fn; else an error."""
    if out_dtype is None or out_dtype == x.dtype:
        return False
    if out_dtype != FP8_OUT:
        raise ValueError(f"ltx_kernels.{op}: out_dtype must be None, x.dtype or torch.float8_e4m3fn (got {out_dtype})")
    if out is not None:
        raise ValueError(f"ltx_kernels.{op}: out= is not supported with out_dtype=torch.float8_e4m3fn")
    return True


def fp8_outputs(op: str, shape, device, group_size: int, scale_layout: str) -> Tuple[torch.Tensor, torch.Tensor]:
    """q (float8_e4m3fn, `shape`) and scales fp32 [M, C / group_size]: row-major ("row") or
    M-major with M padded to a multiple of 4, strides (1, M_pad), padding 0 ("mn_major")."""
    if scale_layout not in ("row", "mn_major"):
        raise ValueError(f"ltx_kernels.{op}: scale_layout must be 'row' or 'mn_major' (got {scale_layout!r})")
    group_size = int(group_size)
    c = shape[-1] if len(shape) > 0 else 1
    if group_size <= 0 or c % group_size != 0:
        raise ValueError(f"ltx_kernels.{op}: the row width must be a multiple of group_size (got {c} and group_size {group_size})")
    m = math.prod(shape[:-1])
    g = c // group_size
    q = torch.empty(shape, dtype=FP8_OUT, device=device)
    if scale_layout == "row":
        scales = torch.empty(m, g, dtype=torch.float32, device=device)
    else:  # the kernels write every [m, g] entry: only the padding rows are zeroed
        scales = _mn_major_scales_out(m, g, device)
    return q, scales


def rms_norm_fp8(x, weight, eps, group_size, scale_layout):
    q, s = fp8_outputs("rms_norm", x.shape, x.device, group_size, scale_layout)
    ops.rms_norm_fp8(q, s, x, weight, float(eps), int(group_size))
    return q, s


def adaln_rms_norm_fp8(x, scale, shift, weight, eps, group_size, scale_layout):
    q, s = fp8_outputs("adaln_rms_norm", x.shape, x.device, group_size, scale_layout)
    ops.adaln_rms_norm_fp8(q, s, x, scale, shift, weight, float(eps), int(group_size))
    return q, s


def gated_residual_adaln_rms_norm_fp8(h, y, gate, scale, shift, weight, eps, group_size, scale_layout, h_out=None):
    q, s = fp8_outputs("gated_residual_adaln_rms_norm", h.shape, h.device, group_size, scale_layout)
    if h_out is None:
        h_out = torch.empty_like(h, memory_format=torch.contiguous_format)
    ops.gated_residual_adaln_rms_norm_fp8(q, s, h_out, h, y, gate, scale, shift, weight, float(eps), int(group_size))
    return h_out, q, s


def silu_and_mul_fp8(x, act_first, group_size, scale_layout):
    shape = x.shape[:-1] + (x.shape[-1] // 2,)
    q, s = fp8_outputs("silu_and_mul", shape, x.device, group_size, scale_layout)
    ops.silu_and_mul_fp8(q, s, x, bool(act_first), int(group_size))
    return q, s


def gelu_and_mul_fp8(x, approximate, act_first, group_size, scale_layout):
    shape = x.shape[:-1] + (x.shape[-1] // 2,)
    q, s = fp8_outputs("gelu_and_mul", shape, x.device, group_size, scale_layout)
    ops.gelu_and_mul_fp8(q, s, x, str(approximate), bool(act_first), int(group_size))
    return q, s


def gelu_tanh_fp8(x, group_size, scale_layout):
    q, s = fp8_outputs("gelu_tanh", x.shape, x.device, group_size, scale_layout)
    ops.gelu_tanh_fp8(q, s, x, int(group_size))
    return q, s


def gated_attention_fp8(x, gate_logits, group_size, scale_layout):
    q, s = fp8_outputs("gated_attention", x.shape, x.device, group_size, scale_layout)
    ops.gated_attention_fp8(q, s, x, gate_logits, int(group_size))
    return q, s


def rms_norm_rope_fp8(x, cos, sin, weight, eps, group_size, scale_layout):
    q, s = fp8_outputs("rms_norm_rope", x.shape, x.device, group_size, scale_layout)
    ops.rms_norm_rope_fp8(q, s, x, cos, sin, weight, float(eps), int(group_size))
    return q, s


def rms_norm_split_rope_fp8(x, cos, sin, weight, eps, group_size, scale_layout):
    q, s = fp8_outputs("rms_norm_split_rope", x.shape, x.device, group_size, scale_layout)
    ops.rms_norm_split_rope_fp8(q, s, x, cos, sin, weight, float(eps), int(group_size))
    return q, s


# ---- fake implementations: the ops write q / scales (and h_out) in place, nothing to return
def _fake_check(op, q, scales, shape, group_size):
    torch._check(q.shape == shape, lambda: f"ltx_kernels.{op}: q must have shape {tuple(shape)}")
    torch._check(group_size > 0, lambda: f"ltx_kernels.{op}: group_size must be > 0")


@register_fake("rms_norm_fp8")
def _rms_norm_fp8_fake(q, scales, x, weight, eps, group_size):
    _fake_check("rms_norm_fp8", q, scales, x.shape, group_size)


@register_fake("adaln_rms_norm_fp8")
def _adaln_rms_norm_fp8_fake(q, scales, x, scale, shift, weight, eps, group_size):
    _fake_check("adaln_rms_norm_fp8", q, scales, x.shape, group_size)


@register_fake("gated_residual_adaln_rms_norm_fp8")
def _gated_residual_adaln_rms_norm_fp8_fake(q, scales, h_out, h, y, gate, scale, shift, weight, eps, group_size):
    _fake_check("gated_residual_adaln_rms_norm_fp8", q, scales, h.shape, group_size)


@register_fake("silu_and_mul_fp8")
def _silu_and_mul_fp8_fake(q, scales, x, act_first, group_size):
    _fake_check("silu_and_mul_fp8", q, scales, x.shape[:-1] + (x.shape[-1] // 2,), group_size)


@register_fake("gelu_and_mul_fp8")
def _gelu_and_mul_fp8_fake(q, scales, x, approximate, act_first, group_size):
    _fake_check("gelu_and_mul_fp8", q, scales, x.shape[:-1] + (x.shape[-1] // 2,), group_size)


@register_fake("gelu_tanh_fp8")
def _gelu_tanh_fp8_fake(q, scales, x, group_size):
    _fake_check("gelu_tanh_fp8", q, scales, x.shape, group_size)


@register_fake("gated_attention_fp8")
def _gated_attention_fp8_fake(q, scales, x, gate_logits, group_size):
    _fake_check("gated_attention_fp8", q, scales, x.shape, group_size)


@register_fake("rms_norm_rope_fp8")
def _rms_norm_rope_fp8_fake(q, scales, x, cos, sin, weight, eps, group_size):
    _fake_check("rms_norm_rope_fp8", q, scales, x.shape, group_size)


@register_fake("rms_norm_split_rope_fp8")
def _rms_norm_split_rope_fp8_fake(q, scales, x, cos, sin, weight, eps, group_size):
    _fake_check("rms_norm_split_rope_fp8", q, scales, x.shape, group_size)
