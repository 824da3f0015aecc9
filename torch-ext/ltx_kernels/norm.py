"""Norm family: functional wrappers and fake implementations."""

from typing import Optional

import torch

from ._common import out_like, register_fake
from ._ops import ops

__all__ = ["rms_norm", "rmsnorm"]


def rms_norm(
    x: torch.Tensor,
    weight: Optional[torch.Tensor] = None,
    eps: float = 1e-6,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """RMSNorm over the last dimension: `x * rsqrt(mean(x^2, -1) + eps) * weight`.

    x: any leading shape, float32/float16/bfloat16, any strides (rows with a uniform stride
    are read in place; other layouts are copied once). weight: `[x.shape[-1]]` of x's dtype,
    or None (diffusers' `RMSNorm(elementwise_affine=False)`). Arithmetic in fp32.
    `out` may be `x` itself (in place).
    """
    out = out_like(x, out)
    ops.rms_norm(out, x, weight, float(eps))
    return out


rmsnorm = rms_norm  # the seed document's name


@register_fake("rms_norm")
def _rms_norm_fake(out, x, weight, eps):
    torch._check(out.shape == x.shape, lambda: "ltx_kernels.rms_norm: out must have the shape of x")
