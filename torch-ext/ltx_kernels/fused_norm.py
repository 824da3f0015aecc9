"""Fused-norm family: functional wrappers and fake implementations.

All ops normalise over the last dimension of x ([..., C], any leading shape, float32 / float16
/ bfloat16, fp32 arithmetic inside) and read each input once and write each output once.
Weight and bias are `[C]` of x's dtype, or None. AdaLN tables (scale, shift, gate) have x's
dtype and are either per sample `[B, C]` (B = x.shape[0]; `[B, 1, .., 1, C]` also works) or
per token (x.shape, e.g. `[B, S, C]`).
"""

from typing import Optional, Tuple

import torch

from ._common import call_out, out_like, register_fake
from ._ops import ops
from . import fused_fp8 as _fp8

__all__ = [
    "add_rms_norm",
    "layer_norm",
    "adaln_rms_norm",
    "adaln_layer_norm",
    "gated_residual_adaln_rms_norm",
]


def add_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6,
                 out: Optional[torch.Tensor] = None,
                 residual_out: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Residual add + RMSNorm in one pass: returns `(y, residual_out)`.

    `residual_out = x + residual`, summed in fp32 and rounded once to x's dtype (what PyTorch
    would store), and `y = residual_out * rsqrt(mean(residual_out^2) + eps) * weight` is
    computed from that ROUNDED residual_out, so it equals `rms_norm(residual_out, weight)`.
    `residual_out` may be `residual` or `x` itself (in place); `out` may be `x`; `out` and
    `residual_out` must not overlap.
    """
    out = out_like(x, out)
    residual_out = out_like(x, residual_out)
    ops.add_rms_norm(out, residual_out, x, residual, weight, float(eps))
    return out, residual_out


def layer_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None,
               eps: float = 1e-5, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """LayerNorm over the last dimension: `(x - mean) * rsqrt(var + eps) * weight + bias`.

    Biased variance, computed in fp32 in two passes over the row held in registers (mean
    first, then the sum of squared deviations). `out` may be `x` (in place).
    """
    return call_out(ops.layer_norm, x, out, weight, bias, float(eps))


def adaln_rms_norm(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, weight: Optional[torch.Tensor] = None,
                   eps: float = 1e-6, out: Optional[torch.Tensor] = None, *, out_dtype: Optional[torch.dtype] = None,
                   group_size: int = 128, scale_layout: str = "row"):
    """AdaLN with RMSNorm: `rms_norm(x, weight) * (1 + scale) + shift`, one pass, fp32 inside.

    x: `[B, ..., C]` (at least 2-D); scale, shift: `[B, C]` (per sample) or x.shape (per token,
    e.g. `[B, S, C]`), independently. `out` may be `x` (in place).

    FP8 output: `out_dtype=torch.float8_e4m3fn` returns `(q, scales)` of the fp32 result (not
    rounded to x's dtype first), as `rms_norm(..., out_dtype=torch.float8_e4m3fn)` does.
    """
    if _fp8.wants_fp8("adaln_rms_norm", x, out_dtype, out):
        return _fp8.adaln_rms_norm_fp8(x, scale, shift, weight, eps, group_size, scale_layout)
    return call_out(ops.adaln_rms_norm, x, out, scale, shift, weight, float(eps))


def adaln_layer_norm(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor, weight: Optional[torch.Tensor] = None,
                     bias: Optional[torch.Tensor] = None, eps: float = 1e-6,
                     out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """AdaLN with LayerNorm: `layer_norm(x, weight, bias) * (1 + scale) + shift`, one pass.

    Shapes as in `adaln_rms_norm`. LayerNorm statistics as in `layer_norm` (two-pass, fp32).
    """
    return call_out(ops.adaln_layer_norm, x, out, scale, shift, weight, bias, float(eps))


def gated_residual_adaln_rms_norm(h: torch.Tensor, y: torch.Tensor, gate: torch.Tensor, scale: torch.Tensor,
                                  shift: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6,
                                  out: Optional[torch.Tensor] = None, h_out: Optional[torch.Tensor] = None, *,
                                  out_dtype: Optional[torch.dtype] = None, group_size: int = 128,
                                  scale_layout: str = "row"):
    """Gated residual + next AdaLN RMSNorm in one pass: returns `(h_new, out)`.

    `h_new = h + y * gate` (fp32 product and sum, rounded once to h's dtype) and
    `out = rms_norm(h_new, weight) * (1 + scale) + shift`, computed from the ROUNDED h_new.
    h, y: `[B, ..., C]`; gate, scale, shift: each `[B, C]` or h.shape. Pass `h_out=h` to
    update the residual stream in place; `out` and `h_out` must not overlap, and `h_out` must
    not overlap scale / shift / gate.

    FP8 output: `out_dtype=torch.float8_e4m3fn` returns `(h_new, q, scales)`, the normalized
    row in fp32 (not rounded to h's dtype) quantized per token per `group_size` columns as in
    `rms_norm(..., out_dtype=torch.float8_e4m3fn)`; h_new is written as above.
    """
    if _fp8.wants_fp8("gated_residual_adaln_rms_norm", h, out_dtype, out):
        return _fp8.gated_residual_adaln_rms_norm_fp8(h, y, gate, scale, shift, weight, eps, group_size,
                                                      scale_layout, h_out)
    out = out_like(h, out)
    h_out = out_like(h, h_out)
    ops.gated_residual_adaln_rms_norm(out, h_out, h, y, gate, scale, shift, weight, float(eps))
    return h_out, out


def _same_shape(op, a, b, what):
    torch._check(a.shape == b.shape, lambda: f"ltx_kernels.{op}: {what} must have the shape of x")


@register_fake("add_rms_norm")
def _add_rms_norm_fake(out, residual_out, x, residual, weight, eps):
    _same_shape("add_rms_norm", out, x, "out")
    _same_shape("add_rms_norm", residual_out, x, "residual_out")


@register_fake("layer_norm")
def _layer_norm_fake(out, x, weight, bias, eps):
    _same_shape("layer_norm", out, x, "out")


@register_fake("adaln_rms_norm")
def _adaln_rms_norm_fake(out, x, scale, shift, weight, eps):
    _same_shape("adaln_rms_norm", out, x, "out")


@register_fake("adaln_layer_norm")
def _adaln_layer_norm_fake(out, x, scale, shift, weight, bias, eps):
    _same_shape("adaln_layer_norm", out, x, "out")


@register_fake("gated_residual_adaln_rms_norm")
def _gated_residual_adaln_rms_norm_fake(out, h_out, h, y, gate, scale, shift, weight, eps):
    _same_shape("gated_residual_adaln_rms_norm", out, h, "out")
    _same_shape("gated_residual_adaln_rms_norm", h_out, h, "h_out")
