"""Norm family: functional wrappers and fake implementations."""

from typing import Optional

import torch

from ._common import call_out, register_fake
from ._ops import ops
from . import fused_fp8 as _fp8

__all__ = ["rms_norm", "rmsnorm"]


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6,
             out: Optional[torch.Tensor] = None, *, out_dtype: Optional[torch.dtype] = None, group_size: int = 128,
             scale_layout: str = "row"):
    """RMSNorm over the last dimension: `x * rsqrt(mean(x^2, -1) + eps) * weight`.

    x: any leading shape, float32/float16/bfloat16, any strides (rows with a uniform stride
    are read in place; other layouts are copied once). weight: `[x.shape[-1]]` of x's dtype,
    or None (diffusers' `RMSNorm(elementwise_affine=False)`). Arithmetic in fp32.
    `out` may be `x` itself (in place).

    FP8 output: `out_dtype=torch.float8_e4m3fn` returns `(q, scales)`: the fp32 result (NOT
    rounded to x's dtype first) quantized per token per `group_size` columns (x.shape[-1] a
    multiple of it): scales fp32 `[M, C / group_size]` = amax / 448, q = e4m3(y / scale);
    scale_layout "row" (row-major) or "mn_major" (strides (1, M_pad), M_pad = M rounded up to 4,
    padding 0). out_dtype None or x.dtype: the plain result.
    """
    if _fp8.wants_fp8("rms_norm", x, out_dtype, out):
        return _fp8.rms_norm_fp8(x, weight, eps, group_size, scale_layout)
    return call_out(ops.rms_norm, x, out, weight, float(eps))


rmsnorm = rms_norm  # alias: the name some kernel collections use


@register_fake("rms_norm")
def _rms_norm_fake(out, x, weight, eps):
    torch._check(out.shape == x.shape, lambda: "ltx_kernels.rms_norm: out must have the shape of x")
