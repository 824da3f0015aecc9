"""Layers for `kernels.kernelize`: nn.Module classes with only `forward` (no `__init__`).
They read the attributes of the module they replace."""

import torch

from .._ops import ops


class RMSNorm(torch.nn.Module):
    """Drop-in forward for RMSNorm modules (torch.nn.RMSNorm, diffusers RMSNorm,
    transformers *RMSNorm): weight may be absent; eps from `eps` or `variance_epsilon`."""

    can_torch_compile = True  # the op has a fake implementation
    has_backward = False  # inference kernel: no autograd

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        weight = getattr(self, "weight", None)
        eps = getattr(self, "variance_epsilon", None)
        if eps is None:
            eps = getattr(self, "eps", None)
        if eps is None:
            eps = 1e-6
        if weight is not None and weight.dtype != hidden_states.dtype:
            weight = weight.to(hidden_states.dtype)
        out = torch.empty(hidden_states.shape, dtype=hidden_states.dtype, device=hidden_states.device)
        ops.rms_norm(out, hidden_states, weight, float(eps))
        return out


__all__ = ["RMSNorm"]
