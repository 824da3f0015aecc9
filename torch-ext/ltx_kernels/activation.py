"""Activation family: functional wrappers and fake implementations.

All take any leading shape, float32/float16/bfloat16, any strides (rows with a uniform stride
are read in place; other layouts are copied once); arithmetic in fp32, rounded once to the
output dtype; `out=None` allocates. CPU and CUDA compute the same formulas (except gelu on
CUDA with bf16 / fp16 data, below).

Special values (every dtype, CPU and CUDA):

    x            gelu      gelu_tanh   silu
    +-0          +-0       +-0         +-0
    |x| < 2^-24  x / 2     x / 2       x / 2      (rounded; the smallest subnormals give
                                                   +-0 or themselves, the sign kept)
    large > 0    x         x           x          (x > 5.5, 5.1 and 17.4 respectively)
    large < 0    -0        -0          -0         (x < -14.85, -10.0 and -87.3; the exact
                                                   values there are below 2^-149, 2^-122 and
                                                   2^-119 in magnitude)
    +inf         +inf      +inf        +inf
    -inf         -0        -0          -0         (the limits; the formulas would give NaN)
    NaN          NaN       NaN         NaN

Accuracy (fp32 output, relative to the exact value; 2^-24 = half an fp32 ulp at 1):
gelu within 11 * 2^-24 (it is evaluated as 0.5 x erfc(-x / sqrt 2), carrying the rounding of
x / sqrt 2, so there is no cancellation for x << 0); silu within (10 + 2.4 |x|) * 2^-24;
gelu_tanh within (9 + 19 |v|) * 2^-24 with v = sqrt(2/pi) (x + 0.044715 x^3), the tanh
formula's own conditioning for x << 0 (evaluated as x / (1 + e^{-2v}), without the
cancellation of 1 + tanh). The |x| and |v| terms are the CUDA kernels' hardware exponential
(__expf, whose error grows with its argument) and approximate reciprocal, which keep these
memory-bound ops at memory speed; the CPU's expf and division are tighter. For bf16 / fp16
data the CUDA gelu evaluates erfc by a fitted t exp(P(t) - z^2) instead (a third of the
instructions): within (28 + 1.5 x^2) * 2^-24 before the rounding to 16 bits, i.e. at most
1.9e-5 relative, under 3% of a bf16 or fp16 ulp (derivation in the C++ header gelu_erfc.h).
"""

from typing import Optional

import torch

from ._common import call_out, out_like, register_fake
from ._ops import ops
from . import fused_fp8 as _fp8

__all__ = ["gelu", "gelu_tanh", "silu", "gelu_and_mul", "silu_and_mul", "gated_attention"]


def gelu(x: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Exact GELU: `0.5 x (1 + erf(x / sqrt(2)))`, computed as `0.5 x erfc(-x / sqrt(2))` (no
    cancellation for x << 0; special values and accuracy in the module docstring). `out` may be
    `x` itself (in place)."""
    return call_out(ops.gelu, x, out)


def gelu_tanh(x: torch.Tensor, out: Optional[torch.Tensor] = None, *, out_dtype: Optional[torch.dtype] = None,
              group_size: int = 128, scale_layout: str = "row"):
    """Tanh GELU: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (F.gelu(approximate="tanh")),
    computed as `x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3)))` (special values and accuracy
    in the module docstring).

    `out_dtype=torch.float8_e4m3fn`: returns `(q, scales)`, the fp32 result (not rounded to x's
    dtype) quantized per token per `group_size` columns (scales = amax / 448, "row" or
    "mn_major" layout, as in `rms_norm`).
    """
    if _fp8.wants_fp8("gelu_tanh", x, out_dtype, out):
        return _fp8.gelu_tanh_fp8(x, group_size, scale_layout)
    return call_out(ops.gelu_tanh, x, out)


def silu(x: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """SiLU: `x * sigmoid(x)` = `x / (1 + exp(-x))` (special values and accuracy in the module
    docstring). `out` may be `x` itself (in place)."""
    return call_out(ops.silu, x, out)


def _half_shape(x: torch.Tensor):
    return (*x.shape[:-1], x.shape[-1] // 2) if x.dim() >= 1 else x.shape


def gelu_and_mul(x: torch.Tensor, approximate: str = "none", act_first: bool = True,
                 out: Optional[torch.Tensor] = None, *, out_dtype: Optional[torch.dtype] = None,
                 group_size: int = 128, scale_layout: str = "row"):
    """Gated GELU over x `[..., 2d]` -> `[..., d]`.

    act_first=True (vLLM / kernels-community): `gelu(x[..., :d]) * x[..., d:]`.
    act_first=False (diffusers GEGLU): `value, gate = x.chunk(2, -1); value * gelu(gate)`.
    approximate: "none" (erf) or "tanh".

    `out_dtype=torch.float8_e4m3fn`: returns `(q, scales)`, the fp32 result (not rounded to x's
    dtype) quantized per token per `group_size` columns (scales = amax / 448, "row" or
    "mn_major" layout, as in `rms_norm`).
    """
    if _fp8.wants_fp8("gelu_and_mul", x, out_dtype, out):
        return _fp8.gelu_and_mul_fp8(x, approximate, act_first, group_size, scale_layout)
    out = out_like(x, out, shape=_half_shape(x))
    ops.gelu_and_mul(out, x, approximate, bool(act_first))
    return out


def silu_and_mul(x: torch.Tensor, act_first: bool = True, out: Optional[torch.Tensor] = None, *,
                 out_dtype: Optional[torch.dtype] = None, group_size: int = 128, scale_layout: str = "row"):
    """SwiGLU over x `[..., 2d]` -> `[..., d]`: `silu(x[..., :d]) * x[..., d:]` (act_first) or
    `x[..., :d] * silu(x[..., d:])`.

    `out_dtype=torch.float8_e4m3fn`: returns `(q, scales)`, the fp32 result (not rounded to x's
    dtype) quantized per token per `group_size` columns (scales = amax / 448, "row" or
    "mn_major" layout, as in `rms_norm`).
    """
    if _fp8.wants_fp8("silu_and_mul", x, out_dtype, out):
        return _fp8.silu_and_mul_fp8(x, act_first, group_size, scale_layout)
    out = out_like(x, out, shape=_half_shape(x))
    ops.silu_and_mul(out, x, bool(act_first))
    return out


def gated_attention(x: torch.Tensor, gate_logits: torch.Tensor, out: Optional[torch.Tensor] = None, *,
                    out_dtype: Optional[torch.dtype] = None, group_size: int = 128, scale_layout: str = "row"):
    """LTX-2's per-head attention gate: `x * 2 * sigmoid(gate_logits)` broadcast over the head
    dimension. x `[..., H * D]`, gate_logits `[..., H]` with the same leading shape and dtype.
    `out` may be `x` itself (in place).

    `out_dtype=torch.float8_e4m3fn`: returns `(q, scales)`, the fp32 result (not rounded to x's
    dtype) quantized per token per `group_size` columns (scales = amax / 448, "row" or
    "mn_major" layout, as in `rms_norm`).
    """
    if _fp8.wants_fp8("gated_attention", x, out_dtype, out):
        return _fp8.gated_attention_fp8(x, gate_logits, group_size, scale_layout)
    return call_out(ops.gated_attention, x, out, gate_logits)


def _fake_same_shape(op):
    def fake(out, x):
        torch._check(out.shape == x.shape, lambda: f"ltx_kernels.{op}: out must have the shape of x")

    return fake


register_fake("gelu")(_fake_same_shape("gelu"))
register_fake("gelu_tanh")(_fake_same_shape("gelu_tanh"))
register_fake("silu")(_fake_same_shape("silu"))


def _check_and_mul(op, out, x):
    torch._check(x.dim() >= 1, lambda: f"ltx_kernels.{op}: x must have at least one dimension")
    torch._check(x.shape[-1] % 2 == 0, lambda: f"ltx_kernels.{op}: x's last dimension must be even")
    want = (*x.shape[:-1], x.shape[-1] // 2)
    torch._check(
        tuple(out.shape) == tuple(want),
        lambda: f"ltx_kernels.{op}: out must have shape x.shape[:-1] + [x.shape[-1] / 2]",
    )


@register_fake("gelu_and_mul")
def _gelu_and_mul_fake(out, x, approximate, act_first):
    torch._check(
        approximate in ("none", "tanh"),
        lambda: "ltx_kernels.gelu_and_mul: approximate must be 'none' or 'tanh'",
    )
    _check_and_mul("gelu_and_mul", out, x)


@register_fake("silu_and_mul")
def _silu_and_mul_fake(out, x, act_first):
    _check_and_mul("silu_and_mul", out, x)


@register_fake("gated_attention")
def _gated_attention_fake(out, x, gate_logits):
    torch._check(out.shape == x.shape, lambda: "ltx_kernels.gated_attention: out must have the shape of x")
    torch._check(
        gate_logits.dim() == x.dim() and gate_logits.shape[:-1] == x.shape[:-1],
        lambda: "ltx_kernels.gated_attention: gate_logits must be [..., heads] with the leading shape of x",
    )
