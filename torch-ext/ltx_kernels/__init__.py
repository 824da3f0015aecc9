"""ltx-kernels: fused CUDA kernels (with a C++ CPU backend) for video DiTs and LLMs.

Every function takes `out=None`: pass a tensor to write into (same shape and dtype as the
result, stride 1 in its last dimension); otherwise one is allocated. The ops are registered
in C++ under this build's namespace (see `_ops.py`) and have fake implementations, so they
work under `torch.compile(fullgraph=True)`.
"""

from typing import Optional

import torch

from . import _fake  # noqa: F401  (registers the fake implementations)
from ._ops import add_op_namespace_prefix, ops
from . import layers, reference

__all__ = ["ops", "add_op_namespace_prefix", "layers", "reference", "rms_norm", "rmsnorm"]


def _out_like(x: torch.Tensor, out: Optional[torch.Tensor]) -> torch.Tensor:
    if out is not None:
        return out
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


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
    out = _out_like(x, out)
    ops.rms_norm(out, x, weight, float(eps))
    return out


rmsnorm = rms_norm  # the seed document's name
