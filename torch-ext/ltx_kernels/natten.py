"""Neighborhood attention (NATTEN semantics): functional wrappers and fake implementation.

``na1d``/``na2d``/``na3d(q, k, v, kernel_size, dilation=1, is_causal=False, scale=None)``
with q, k, v ``[B, L, heads, d]``, ``[B, H, W, heads, d]`` or ``[B, T, H, W, heads, d]``
(NATTEN's layout, heads after the spatial dims). Per axis of extent n, query i attends to:

- non-causal: the ``kernel_size`` keys starting at ``clamp(i - kernel_size // 2, 0, n - kernel_size)``
  (near an edge the window keeps its full size, shifted inward);
- causal (NATTEN's causal NA, as its flex mask defines it): keys ``j`` with ``0 <= i - j <
  kernel_size`` (the first positions see fewer keys; nothing is shifted);
- dilation ``r``: the same rules inside the residue group of ``i`` (positions ``i % r + r m``),
  as NATTEN does: requires ``n >= kernel_size * r``.

``scale`` defaults to ``d ** -0.5``. CPU: float32/float16/bfloat16, any head dim. CUDA: a fused
tensor-core kernel for float16/bfloat16 and head dims 32, 64, 128.
"""

from typing import Optional, Sequence, Union

import torch

from ._common import out_like, register_fake
from ._ops import ops

__all__ = ["na1d", "na2d", "na3d"]

IntOrSeq = Union[int, Sequence[int]]
BoolOrSeq = Union[bool, Sequence[bool]]


def _per_axis(value, n: int, name: str, kind):
    if isinstance(value, (bool, int)) and not (kind is int and isinstance(value, bool)):
        return [kind(value)] * n
    vals = list(value)
    if len(vals) != n:
        raise ValueError(f"ltx_kernels.na{n}d: {name} must be a {kind.__name__} or {n} of them (got {value!r})")
    return [kind(v) for v in vals]


def _na(n: int, q, k, v, kernel_size, dilation, is_causal, scale, out):
    if q.dim() != n + 3:
        raise ValueError(
            f"ltx_kernels.na{n}d: q must have {n + 3} dims [B, {n} spatial, heads, d] (got shape {list(q.shape)})"
        )
    ks = _per_axis(kernel_size, n, "kernel_size", int)
    dil = _per_axis(dilation, n, "dilation", int)
    causal = _per_axis(is_causal, n, "is_causal", bool)
    if scale is None:
        scale = q.shape[-1] ** -0.5
    out = out_like(q, out)
    ops.natten_forward(out, q, k, v, ks, dil, causal, float(scale))
    return out


def na1d(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kernel_size: IntOrSeq, dilation: IntOrSeq = 1,
         is_causal: BoolOrSeq = False, scale: Optional[float] = None,
         out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """1-D neighborhood attention, q/k/v ``[B, L, heads, d]``."""
    return _na(1, q, k, v, kernel_size, dilation, is_causal, scale, out)


def na2d(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kernel_size: IntOrSeq, dilation: IntOrSeq = 1,
         is_causal: BoolOrSeq = False, scale: Optional[float] = None,
         out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """2-D neighborhood attention, q/k/v ``[B, H, W, heads, d]``."""
    return _na(2, q, k, v, kernel_size, dilation, is_causal, scale, out)


def na3d(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kernel_size: IntOrSeq, dilation: IntOrSeq = 1,
         is_causal: BoolOrSeq = False, scale: Optional[float] = None,
         out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """3-D neighborhood attention, q/k/v ``[B, T, H, W, heads, d]`` (LTX-2's VAE decoder:
    kernel (3, 7, 7) or (3, 5, 5), d = 64)."""
    return _na(3, q, k, v, kernel_size, dilation, is_causal, scale, out)


@register_fake("natten_forward")
def _natten_forward_fake(out, q, k, v, kernel_size, dilation, is_causal, scale):
    torch._check(out.shape == q.shape, lambda: "ltx_kernels.natten_forward: out must have the shape of q")
