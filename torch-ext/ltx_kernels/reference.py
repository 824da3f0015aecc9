"""Pure-PyTorch oracles written from the math, in fp32. Tests compare the kernels to these;
they never call the kernels. Each returns fp32 (cast to the kernel's dtype when comparing).
"""

from typing import Optional

import torch


def rms_norm(x: torch.Tensor, weight: Optional[torch.Tensor] = None, eps: float = 1e-6) -> torch.Tensor:
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    if weight is not None:
        y = y * weight.float()
    return y


# @family:activation

# @family:fused_norm

# @family:rope
