"""Integrations with model libraries (transformers, diffusers).

Each integration is a submodule that works on the module objects the user passes in and never
imports the library itself; submodules load on first access, e.g.
`ltx_kernels.integrations.transformers.optimize(model)` after importing this package.
"""

import importlib
import os

# every integration module in this folder (transformers.py, diffusers.py, ...)
__all__ = sorted(
    f[: -len(".py")] for f in os.listdir(os.path.dirname(os.path.abspath(__file__)))
    if f.endswith(".py") and not f.startswith("_")
)


def __getattr__(name):
    if name in __all__:
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
