"""Fake (meta) implementations, so the ops trace under torch.compile.

Every op is an out-variant that returns nothing, so a fake implementation checks what it
can from metadata and returns None; the full checks run in C++ on real tensors.
"""

import torch

from ._ops import add_op_namespace_prefix


def _register_fake(op_name):
    """register_fake, tolerating a second import of the same build (e.g. once through
    `import ltx_kernels` and once through `kernels.get_local_kernel`)."""
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


@_register_fake("rms_norm")
def _rms_norm_fake(out, x, weight, eps):
    torch._check(out.shape == x.shape, lambda: "ltx_kernels.rms_norm: out must have the shape of x")
    return None
