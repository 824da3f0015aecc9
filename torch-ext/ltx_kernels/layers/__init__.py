"""Layers for `kernels.kernelize`: nn.Module classes with only `forward` (no `__init__`, no other
members than `can_torch_compile` / `has_backward`, as the Hub layer rules require). They read the
attributes of the module they replace, and call module-level helpers only (kernels forbids a
layer's forward from calling other methods of its class).

Names follow kernels-community/activation and the hub names transformers 5.x decorates its
modules with (`@use_kernel_forward_from_hub("...")`):

| layer | computes | replaces |
|---|---|---|
| RMSNorm | `x * rsqrt(mean(x^2) + eps) * weight` | transformers `*RMSNorm` (Llama kind), torch.nn.RMSNorm, diffusers RMSNorm |
| SiluAndMul | `silu(x[..., :d]) * x[..., d:]` | kernels-community SiluAndMul |
| MulAndSilu | `x[..., :d] * silu(x[..., d:])` | kernels-community MulAndSilu |
| GeluAndMul | `gelu(x[..., :d]) * x[..., d:]`, erf GELU unless the module has `approximate="tanh"` | kernels-community GeluAndMul |
| GeluTanhAndMul | as GeluAndMul with tanh GELU | kernels-community GeluTanhAndMul |
| Silu (alias SiLU) | `x * sigmoid(x)` | transformers SiLUActivation ("SiLU"), nn.SiLU |
| Gelu (alias GeLU) | erf GELU, or tanh when the module has `approximate="tanh"` (nn.GELU) | transformers GELUActivation ("GeLU"), nn.GELU |
| GeluTanh (aliases FastGELU, NewGELU) | tanh GELU | transformers GELUTanh ("GeluTanh"), FastGELUActivation, NewGELUActivation |

Not provided (no op computes them): QuickGELU (`x * sigmoid(1.702 x)`), FatreluAndMul, ReLU^2.
FastGELU / NewGELU use the same tanh formula as F.gelu(approximate="tanh"); their results
differ from transformers' Python expressions by fp32 rounding only.
"""

import torch

from .._ops import ops


def _rms_norm_forward(module, x: torch.Tensor) -> torch.Tensor:
    weight = getattr(module, "weight", None)
    eps = getattr(module, "variance_epsilon", None)
    if eps is None:
        eps = getattr(module, "eps", None)
    if eps is None:  # torch.nn.RMSNorm(eps=None): torch uses the input dtype's epsilon
        eps = torch.finfo(x.dtype).eps if isinstance(module, torch.nn.RMSNorm) else 1e-6
    out = _like(x)
    if weight is not None and weight.dtype != x.dtype:
        # transformers: `self.weight * normed.to(input_dtype)`: the normalised row is rounded
        # to x's dtype, then multiplied in the promoted dtype (e.g. an fp32 weight -> fp32 out).
        ops.rms_norm(out, x, None, float(eps))
        return weight * out
    ops.rms_norm(out, x, weight, float(eps))
    return out


def _half(x: torch.Tensor) -> torch.Tensor:
    return torch.empty((*x.shape[:-1], x.shape[-1] // 2), dtype=x.dtype, device=x.device)


def _like(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def _into(out: torch.Tensor, op, x: torch.Tensor, *args) -> torch.Tensor:
    """Runs the out-variant op(out, x, *args) and returns out."""
    op(out, x, *args)
    return out


def _approximate(module, default: str) -> str:
    approximate = getattr(module, "approximate", default)
    return approximate if approximate in ("none", "tanh") else default


class _Layer(torch.nn.Module):
    """What every layer here declares to `kernels`: its op has a fake implementation (so it runs
    under torch.compile) and no autograd (inference kernels)."""

    can_torch_compile = True
    has_backward = False


class RMSNorm(_Layer):
    """Drop-in forward for RMSNorm modules (torch.nn.RMSNorm, diffusers RMSNorm,
    transformers *RMSNorm of the Llama kind): weight may be absent; eps from `variance_epsilon`
    or `eps`. A weight whose dtype differs from x's is applied after the normalised row is
    rounded to x's dtype, as transformers does. Not for Gemma-style `(1 + weight)` norms."""

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return _rms_norm_forward(self, hidden_states)


class SiluAndMul(_Layer):
    """SwiGLU: `silu(x[..., :d]) * x[..., d:]`, x `[..., 2d]` -> `[..., d]`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _into(_half(x), ops.silu_and_mul, x, True)


class MulAndSilu(_Layer):
    """`x[..., :d] * silu(x[..., d:])`, x `[..., 2d]` -> `[..., d]`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _into(_half(x), ops.silu_and_mul, x, False)


class GeluAndMul(_Layer):
    """`gelu(x[..., :d]) * x[..., d:]`; erf GELU unless the replaced module has
    `approximate == "tanh"`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _into(_half(x), ops.gelu_and_mul, x, _approximate(self, "none"), True)


class GeluTanhAndMul(_Layer):
    """`gelu_tanh(x[..., :d]) * x[..., d:]`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _into(_half(x), ops.gelu_and_mul, x, "tanh", True)


class Silu(_Layer):
    """`x * sigmoid(x)`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _into(_like(x), ops.silu, x)


class Gelu(_Layer):
    """Erf GELU, or tanh GELU when the replaced module has `approximate == "tanh"` (nn.GELU)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _into(_like(x), ops.gelu_tanh if _approximate(self, "none") == "tanh" else ops.gelu, x)


class GeluTanh(_Layer):
    """Tanh GELU: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _into(_like(x), ops.gelu_tanh, x)


# Hub names used by transformers' activations (`@use_kernel_forward_from_hub(...)`) and by
# kernels-community/activation.
SiLU = Silu
GeLU = Gelu
FastGELU = GeluTanh
NewGELU = GeluTanh

__all__ = [
    "RMSNorm",
    "SiluAndMul",
    "MulAndSilu",
    "GeluAndMul",
    "GeluTanhAndMul",
    "Silu",
    "Gelu",
    "GeluTanh",
    "SiLU",
    "GeLU",
    "FastGELU",
    "NewGELU",
]
