"""Run LTX-2's video VAE diffusion decoder (``LTX2VideoVaeNeighborhoodAttention``
in ``diffusers.models.autoencoders.ltx2_diffusion_decoder``) on ltx_kernels' neighborhood attention.

    ltx_kernels.integrations.diffusers.vae.apply_to(vae)   # every neighborhood-attention module, or
    vae.set_attn_processor(ltx_kernels.integrations.diffusers.vae.LtxKernelsNeighborhoodAttnProcessor())

Per module call: the Q/K/V projections (the module's own Linear layers), then one fused pre-pass
per tensor, ``rms_norm_rope`` over rows of ``head_dim`` (q: ``norm_q`` with the ``1/sqrt(head_dim)``
query scale folded into its weight; k: ``norm_k``; both followed by the module's 3-D interleaved
RoPE from cached cos/sin tables), then ``na3d`` with ``scale=1`` (the scale is already in q, as
in the module's ``project_qkv``) and the module's ``to_out``. The processor is not the flex one,
so the decoder never builds a flex BlockMask for it. No diffusers import here: the module is
passed in by diffusers.
"""

from typing import Dict, Tuple

import torch

from ... import natten as _natten
from ... import rope as _rope

__all__ = ["LtxKernelsNeighborhoodAttnProcessor", "apply_to"]

_MODULE_CLASS = "LTX2VideoVaeNeighborhoodAttention"


def _inv_freqs(dim: int, base: float, device) -> torch.Tensor:
    # the module builds these in float64 and casts once; float64 is fine on CPU and CUDA
    exps = torch.arange(0, dim, 2, dtype=torch.float64, device=device) / dim
    return (1.0 / base**exps).to(torch.float32)


def rope_tables(attn, T: int, H: int, W: int, device) -> Tuple[torch.Tensor, torch.Tensor]:
    """Full-width interleaved cos/sin ``[T*H*W, head_dim]`` (fp32) of the module's 3-D RoPE: the
    head dim split into (T, H, W) chunks (``attn.rope.rope_dim_split``), pair i of chunk a rotated
    by ``position_a * base^(-2i / dim_a)``, both entries of a pair sharing the angle."""
    dims = attn.rope.rope_dim_split
    base = attn.rope.base
    grids = torch.meshgrid(
        *(torch.arange(n, dtype=torch.float32, device=device) for n in (T, H, W)), indexing="ij"
    )
    angles = [g.reshape(-1, 1) * _inv_freqs(dim, base, device)[None, :] for g, dim in zip(grids, dims)]
    ang = torch.cat(angles, dim=-1).repeat_interleave(2, dim=-1)  # [S, head_dim]
    return ang.cos(), ang.sin()


class LtxKernelsNeighborhoodAttnProcessor:
    """Processor for ``LTX2VideoVaeNeighborhoodAttention`` on ltx_kernels (CPU and CUDA)."""

    def __init__(self):
        self._tables: Dict[tuple, Tuple[torch.Tensor, torch.Tensor]] = {}

    def _cos_sin(self, attn, B, T, H, W, device):
        key = (B, T, H, W, attn.heads, attn.head_dim, tuple(attn.rope.rope_dim_split), attn.rope.base, str(device))
        if key not in self._tables:
            cos, sin = rope_tables(attn, T, H, W, device)
            S = T * H * W
            # rows of x are (token, head); the table is per token, broadcast over heads (stride 0)
            cos = cos.repeat(B, 1).view(B * S, 1, -1).expand(B * S, attn.heads, attn.head_dim)
            sin = sin.repeat(B, 1).view(B * S, 1, -1).expand(B * S, attn.heads, attn.head_dim)
            self._tables = {key: (cos, sin)}  # one grid at a time (a decoder stage)
        return self._tables[key]

    @staticmethod
    def _weight(norm, x, factor=1.0):
        w = norm.weight if getattr(norm, "weight", None) is not None else torch.ones(x.shape[-1], device=x.device)
        return (w.float() * factor).to(x.dtype)

    @staticmethod
    def _eps(norm, x):
        eps = getattr(norm, "eps", None)
        return torch.finfo(x.dtype).eps if eps is None else float(eps)

    def __call__(self, attn, hidden_states: torch.Tensor, block_mask=None) -> torch.Tensor:
        B, T, H, W, C = hidden_states.shape
        heads, d = attn.heads, attn.head_dim
        rows = (B * T * H * W, heads, d)
        q = attn.to_q(hidden_states).view(rows)
        k = attn.to_k(hidden_states).view(rows)
        v = attn.to_v(hidden_states)
        cos, sin = self._cos_sin(attn, B, T, H, W, hidden_states.device)
        q = _rope.rms_norm_rope(q, cos, sin, self._weight(attn.norm_q, q, attn.scale), self._eps(attn.norm_q, q), out=q)
        k = _rope.rms_norm_rope(k, cos, sin, self._weight(attn.norm_k, k), self._eps(attn.norm_k, k), out=k)
        shape = (B, T, H, W, heads, d)
        o = _natten.na3d(q.view(shape), k.view(shape), v.view(shape), tuple(attn.kernel_size), scale=1.0)
        return attn.to_out[0](o.reshape(B, T, H, W, C))


def apply_to(model: torch.nn.Module) -> int:
    """Sets a LtxKernelsNeighborhoodAttnProcessor on every LTX2VideoVaeNeighborhoodAttention
    inside `model`; returns how many modules were switched."""
    proc = LtxKernelsNeighborhoodAttnProcessor()
    n = 0
    for m in model.modules():
        if type(m).__name__ == _MODULE_CLASS:
            m.set_processor(proc)
            n += 1
    return n
