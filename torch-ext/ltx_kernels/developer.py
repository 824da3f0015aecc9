"""Developer settings: overrides of the kernels' own choices, for tests, sweeps and profiling.

No user needs one for correct or fast results. Each setting is named after the environment
variable that gives its initial value (read once, when the library first needs a setting);
``docs/knobs.md`` lists them. Change them at run time with::

    with ltx_kernels.developer_config(LTX_KERNELS_GEMM_CONFIG="128x192:c2"):
        ...  # GEMMs here run the forced tile configuration

``set_developer_setting(name, value)`` sets one for the rest of the process ("" restores the
kernels' own choice); ``developer_setting(name)`` reads one. An unknown name raises.
"""

import contextlib

from ._ops import ops

__all__ = ["developer_config", "developer_setting", "set_developer_setting"]


def set_developer_setting(name: str, value) -> None:
    ops.set_developer_setting(str(name), "" if value is None else str(value))


def developer_setting(name: str) -> str:
    return ops.developer_setting(str(name))


@contextlib.contextmanager
def developer_config(**settings):
    """Sets the given developer settings for the duration of the block, then restores them."""
    before = {name: developer_setting(name) for name in settings}
    try:
        for name, value in settings.items():
            set_developer_setting(name, value)
        yield
    finally:
        for name, value in before.items():
            set_developer_setting(name, value)
