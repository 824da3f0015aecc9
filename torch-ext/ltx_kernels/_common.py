"""Helpers shared by the functional wrappers (standard library and torch only)."""

from typing import Optional

import torch

from ._ops import add_op_namespace_prefix


def out_like(x: torch.Tensor, out: Optional[torch.Tensor], shape=None, dtype=None) -> torch.Tensor:
    """`out` when given, else a fresh contiguous tensor of x's device (and shape/dtype)."""
    if out is not None:
        return out
    return torch.empty(
        x.shape if shape is None else shape,
        dtype=x.dtype if dtype is None else dtype,
        device=x.device,
    )


def call_out(op, x: torch.Tensor, out: Optional[torch.Tensor], *args) -> torch.Tensor:
    """Runs the out-variant op(out, x, *args) into `out` (a fresh tensor like x when None); returns out."""
    out = out_like(x, out)
    op(out, x, *args)
    return out


def register_fake(op_name: str):
    """torch.library.register_fake for this build's op, tolerating a second import of the
    same build (once through `import ltx_kernels`, once through `kernels.get_local_kernel`)."""
    qualname = add_op_namespace_prefix(op_name)

    def wrap(fn):
        try:
            from torch._library.simple_registry import singleton

            if singleton.find(qualname).fake_impl.kernel is not None:
                return fn
        except (ImportError, AttributeError):
            pass
        return torch.library.register_fake(qualname)(fn)

    return wrap
