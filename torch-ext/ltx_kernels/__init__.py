"""ltx-kernels: fused CUDA kernels (with a C++ CPU backend) for video DiTs and LLMs.

Every function takes `out=None`: pass a tensor to write into (same shape and dtype as the
result, stride 1 in its last dimension); otherwise one is allocated. The ops are registered
in C++ under this build's namespace (see `_ops.py`), each with a fake implementation, so they
work under `torch.compile(fullgraph=True)`. One module per op family; each registers its
fakes on import.
"""

from ._ops import add_op_namespace_prefix, ops
from . import reference
from .norm import *  # noqa: F401,F403
from .norm import __all__ as _norm_all
from .activation import *  # noqa: F401,F403
from .activation import __all__ as _activation_all
from .fused_norm import *  # noqa: F401,F403
from .fused_norm import __all__ as _fused_norm_all
from .rope import *  # noqa: F401,F403
from .rope import __all__ as _rope_all
from .fp8 import *  # noqa: F401,F403
from .fp8 import __all__ as _fp8_all
from .lowbit import *  # noqa: F401,F403
from .lowbit import __all__ as _lowbit_all
from .fused_fp8 import *  # noqa: F401,F403
from .fused_fp8 import __all__ as _fused_fp8_all
from .natten import *  # noqa: F401,F403
from .natten import __all__ as _natten_all
from .distributed import *  # noqa: F401,F403
from .distributed import __all__ as _distributed_all
from .gemm import *  # noqa: F401,F403
from .gemm import __all__ as _gemm_all
from .attention import *  # noqa: F401,F403
from .attention import __all__ as _attention_all
from .quantization import *  # noqa: F401,F403
from .quantization import __all__ as _quantization_all
from .developer import *  # noqa: F401,F403
from .developer import __all__ as _developer_all
from . import layers

__all__ = ["ops", "add_op_namespace_prefix", "layers", "reference", *_norm_all]
__all__ += _activation_all
__all__ += _fused_norm_all
__all__ += _rope_all
__all__ += _fp8_all
__all__ += _lowbit_all
__all__ += _fused_fp8_all
__all__ += _natten_all
__all__ += _distributed_all
__all__ += _gemm_all + _quantization_all + _attention_all
__all__ += _developer_all
