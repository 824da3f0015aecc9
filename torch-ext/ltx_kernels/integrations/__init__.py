"""Integrations with model libraries (transformers, diffusers).

Each integration is a submodule that works on the module objects the user passes in and never
imports the library itself; submodules load on first access, e.g.
`ltx_kernels.integrations.transformers.optimize(model)` after importing this package.
"""

import importlib
import os

_HERE = os.path.dirname(os.path.abspath(__file__))

# every integration in this folder: a module (transformers.py) or a package (diffusers/)
__all__ = sorted(
    f[: -len(".py")] if f.endswith(".py") else f
    for f in os.listdir(_HERE)
    if not f.startswith("_")
    and (f.endswith(".py") or os.path.isfile(os.path.join(_HERE, f, "__init__.py")))
)


def __getattr__(name):
    if name in __all__:
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
