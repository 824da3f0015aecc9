"""Dense attention forward (inference, non-causal): bf16 / fp16, and FP8 E4M3 with per-token and
per-channel dequantization factors.

``attention(q, k, v, *, scale=None, kv_lengths=None, attn_mask=None, layout="bshd", ...)``
computes, per batch row b and head h (key/value head ``h // (H // Hkv)``, so grouped-query
attention works)::

    out[b, i, h] = sum_j softmax_j(scale * <q[b, i, h], k[b, j]> + bias[b, j]) v[b, j]

over the keys ``j < kv_lengths[b]`` (all keys when ``kv_lengths`` is None). ``attn_mask`` is a
per-key mask of the batch row (the padding mask of text tokens in cross-attention): boolean
(True = attend) or an additive float bias, of shape ``[B, Skv]`` or anything that broadcasts that
way (``[B, 1, Skv]``, ``[B, 1, 1, Skv]``: what diffusers' processors hold). A query row with no
valid key returns 0 (not NaN).

Layouts: ``"bshd"`` (``[B, S, H, D]``, what diffusers' attention processors hold before their
transpose) or ``"bhsd"`` (``[B, H, S, D]``, PyTorch SDPA's). ``out`` has q's shape and layout.

Backends: on an sm_90 GPU (H100/H200) a TMA + wgmma kernel for head dims 64 and 128; elsewhere,
and for other head dims, the inputs in fp32 through PyTorch's ``scaled_dot_product_attention``
(correct, not fast); on the CPU a C++ backend. ``attention_backend(...)`` says which one runs.

FP8: ``quantize_attention_fp8(q, k, v)`` returns the operands (q and k per token and head, k
after subtracting its mean over the keys, which softmax cancels exactly; v per channel, stored
transposed in the key order the kernel reads). ``attention(*fp8_operands)`` then runs the FP8
kernel; its P is rounded to E4M3 as well, so expect errors of ~1e-2 relative (see
tests/test_attention.py for the bounds).
"""

import math
from typing import NamedTuple, Optional

import torch

from ._common import register_fake
from ._ops import ops

__all__ = ["attention", "attention_backend", "quantize_attention_fp8", "AttentionFp8Operands"]

_BACKENDS = ("cpu", "torch", "sm90")
# Position p of each 32-key block of an FP8 V^T row holds key KEY_ORDER[p] of the block (the k
# index wgmma's 8-bit A fragment gives the P values a thread computes: no register shuffles).
KEY_ORDER = [16 * (p // 16) + 8 * ((p % 4) // 2) + 2 * ((p % 16) // 4) + (p % 2) for p in range(32)]


class AttentionFp8Operands(NamedTuple):
    """FP8 operands for ``attention``: pass them as ``attention(*ops)`` (plus keyword options)."""

    q: torch.Tensor  # float8_e4m3fn, q's shape and layout
    k: torch.Tensor  # float8_e4m3fn, k's shape and layout (mean-subtracted when smoothed)
    v: torch.Tensor  # float8_e4m3fn [B, Hkv, D, Skv_pad], keys in KEY_ORDER within 32-key blocks
    q_descale: torch.Tensor  # fp32 [B, Sq, H]
    k_descale: torch.Tensor  # fp32 [B, Skv, Hkv] (per key) or [B, ceil(Skv / 128), Hkv]
    v_descale: torch.Tensor  # fp32 [B, Hkv, D]


def _dims(q: torch.Tensor, layout: str):
    if layout not in ("bshd", "bhsd"):
        raise ValueError(f"ltx_kernels.attention: layout must be 'bshd' or 'bhsd' (got {layout!r})")
    if q.dim() != 4:
        raise ValueError(f"ltx_kernels.attention: q must be 4-D (got shape {list(q.shape)})")
    b, s, h, d = q.shape if layout == "bshd" else (q.shape[0], q.shape[2], q.shape[1], q.shape[3])
    return b, s, h, d


def _key_bias(attn_mask: Optional[torch.Tensor], b: int, skv: int, device) -> Optional[torch.Tensor]:
    """A per-key mask as an fp32 additive bias [B, Skv] (boolean: 0 / -inf)."""
    if attn_mask is None:
        return None
    m = attn_mask
    if m.dim() >= 2 and all(x == 1 for x in m.shape[1:-1]):
        m = m.reshape(m.shape[0], m.shape[-1])
    elif m.dim() == 1:
        m = m.reshape(1, -1)
    if m.dim() != 2 or m.shape[-1] != skv or m.shape[0] not in (1, b):
        raise ValueError(
            "ltx_kernels.attention: attn_mask must be a per-key mask broadcastable to [B, Skv] = "
            f"[{b}, {skv}] (e.g. [B, Skv], [B, 1, Skv], [B, 1, 1, Skv]); masks that differ per query or "
            f"head are not supported (got shape {list(attn_mask.shape)})"
        )
    if m.dtype == torch.bool:
        m = torch.zeros(m.shape, dtype=torch.float32, device=m.device).masked_fill(~m, float("-inf"))
    elif m.dtype.is_floating_point:
        m = m.float()
    else:
        raise ValueError(f"ltx_kernels.attention: attn_mask must be boolean or floating (got {attn_mask.dtype})")
    return m.expand(b, skv).to(device)


def _prepare(q, k, v, scale, kv_lengths, attn_mask, q_descale, k_descale, v_descale, layout, out, out_dtype):
    b, sq, h, d = _dims(q, layout)
    skv = (k.shape[1] if layout == "bshd" else k.shape[2]) if k.dim() == 4 else 0
    if scale is None:
        scale = 1.0 / math.sqrt(d) if d > 0 else 1.0
    bias = _key_bias(attn_mask, b, skv, q.device)
    k_block = 1
    if q.dtype == torch.float8_e4m3fn:
        if k_descale is not None and k_descale.dim() == 3 and k_descale.shape[1] != skv:
            k_block = 128
        odt = out_dtype or torch.bfloat16
    else:
        odt = q.dtype
        if out_dtype is not None and out_dtype != q.dtype:
            raise ValueError(f"ltx_kernels.attention: out_dtype is q's dtype for {q.dtype} inputs (got {out_dtype})")
    if out is None:
        out = torch.empty(q.shape, dtype=odt, device=q.device)
    return out, float(scale), bias, k_block


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, q_descale: Optional[torch.Tensor] = None,
              k_descale: Optional[torch.Tensor] = None, v_descale: Optional[torch.Tensor] = None, *,
              scale: Optional[float] = None, kv_lengths: Optional[torch.Tensor] = None,
              attn_mask: Optional[torch.Tensor] = None, layout: str = "bshd", out: Optional[torch.Tensor] = None,
              out_dtype: Optional[torch.dtype] = None, backend: str = "auto") -> torch.Tensor:
    """Attention forward; see the module docstring. ``scale`` defaults to ``D ** -0.5``.

    q ``[B, Sq, H, D]``, k and v ``[B, Skv, Hkv, D]`` (``layout="bshd"``; ``"bhsd"`` swaps the S
    and H axes), bf16 / fp16 / fp32 (fp32 runs the C++ CPU backend or the fp32 torch path), or the
    FP8 operands of ``quantize_attention_fp8`` with their three descale tensors (``out_dtype``
    bf16 by default). ``kv_lengths`` int ``[B]``; ``attn_mask`` per key (boolean or additive).
    ``backend``: "auto", "sm90", "torch" or "cpu".
    """
    out, scale, bias, k_block = _prepare(q, k, v, scale, kv_lengths, attn_mask, q_descale, k_descale, v_descale,
                                         layout, out, out_dtype)
    ops.attention(out, q, k, v, scale, kv_lengths, bias, q_descale, k_descale, v_descale, k_block, layout, backend)
    return out


def attention_backend(q, k, v, q_descale=None, k_descale=None, v_descale=None, *, scale=None, kv_lengths=None, attn_mask=None,
                      layout: str = "bshd", out_dtype=None, backend: str = "auto") -> str:
    """Which backend ``attention`` would run for these arguments: "cpu", "torch" or "sm90"."""
    out, scale, bias, k_block = _prepare(q, k, v, scale, kv_lengths, attn_mask, q_descale, k_descale, v_descale,
                                         layout, None, out_dtype)
    return _BACKENDS[int(ops.attention_backend(out, q, k, v, scale, kv_lengths, bias, q_descale, k_descale,
                                               v_descale, k_block, layout, backend))]


_ORDER_CACHE = {}


def _key_order_index(n: int, device) -> torch.Tensor:
    """[n] source key of each position of an FP8 V^T row (KEY_ORDER per 32-key block), cached per
    device so that quantizing under CUDA-graph capture copies nothing from the host."""
    key = (str(device), n)
    if key not in _ORDER_CACHE:
        _ORDER_CACHE[key] = torch.tensor([(p // 32) * 32 + KEY_ORDER[p % 32] for p in range(n)], device=device)
    return _ORDER_CACHE[key]


def _e4m3(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """The FP8 rule of every quantizer here: code = e4m3(x / s) (a true fp32 division, round to
    nearest even; |x / s| <= 448 since s = amax / 448); s == 0 (an all-zero group) -> codes 0."""
    safe = torch.where(s == 0, torch.ones_like(s), s)
    return torch.where(s == 0, x, x / safe).to(torch.float8_e4m3fn)


def quantize_attention_fp8(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, layout: str = "bshd",
                           smooth_k: bool = True, k_block: int = 128) -> AttentionFp8Operands:
    """FP8 E4M3 operands for ``attention`` from bf16/fp16/fp32 q, k, v (same layouts).

    q: one factor per token and head (``amax / 448`` over the head's D values). k: its mean over
    the keys (per batch row, head and channel) subtracted first when ``smooth_k`` (softmax is
    invariant to adding the same vector to every key: ``<q, k_j - mu> = <q, k_j> - <q, mu>``
    shifts a whole row of scores), then one factor per ``k_block`` keys and head (1 or 128; 128 is
    free in the kernel, 1 costs a multiply per score). v: one factor per channel over all keys,
    stored transposed ``[B, Hkv, D, Skv_pad]`` (Skv rounded up to 32, zeros beyond) with the keys
    of each 32-key block in ``KEY_ORDER``. Every code is ``e4m3(x / s)`` (fp32 division, round to
    nearest even); an all-zero group gets ``s = 0`` and codes 0.
    """
    if k_block not in (1, 128):
        raise ValueError(f"ltx_kernels.quantize_attention_fp8: k_block must be 1 or 128 (got {k_block})")
    b, sq, h, d = _dims(q, layout)
    _, skv, hk, _ = _dims(k, layout)
    seq_dim = 1 if layout == "bshd" else 2
    # q: per token and head
    qf = q.float()
    q_s = qf.abs().amax(-1, keepdim=True) / 448.0
    q8 = _e4m3(qf, q_s)
    q_descale = q_s.squeeze(-1)
    if layout == "bhsd":
        q_descale = q_descale.transpose(1, 2)
    # k: smoothed, per key or per 128 keys
    kf = k.float()
    if smooth_k and skv > 0:
        kf = kf - kf.mean(dim=seq_dim, keepdim=True)
    if k_block == 1:
        k_s = kf.abs().amax(-1, keepdim=True) / 448.0
        k8 = _e4m3(kf, k_s)
        k_descale = k_s.squeeze(-1)
        if layout == "bhsd":
            k_descale = k_descale.transpose(1, 2)
    else:
        nb = -(-skv // 128)
        kb = kf if layout == "bshd" else kf.transpose(1, 2)  # [B, Skv, Hk, D]
        pad = torch.zeros(b, nb * 128 - skv, hk, d, dtype=kb.dtype, device=kb.device)
        blocks = torch.cat([kb, pad], 1).reshape(b, nb, 128, hk, d)
        k_descale = blocks.abs().amax(dim=(2, 4)) / 448.0  # [B, nb, Hk]
        s_full = k_descale.repeat_interleave(128, 1)[:, :skv].unsqueeze(-1)  # [B, Skv, Hk, 1]
        if layout == "bhsd":
            s_full = s_full.transpose(1, 2)
        k8 = _e4m3(kf, s_full)
    # v: per channel, transposed, keys reordered within 32-key blocks
    vf = v.float()
    vt = vf.permute(0, 2, 3, 1) if layout == "bshd" else vf.permute(0, 1, 3, 2)  # [B, Hk, D, Skv]
    v_s = vt.abs().amax(-1, keepdim=True) / 448.0 if skv > 0 else torch.zeros(*vt.shape[:3], 1, device=v.device)
    spad = -(-max(skv, 1) // 32) * 32
    vt = torch.cat([vt, torch.zeros(*vt.shape[:3], spad - skv, dtype=vt.dtype, device=vt.device)], -1)
    order = _key_order_index(spad, v.device)
    v8 = _e4m3(vt.index_select(-1, order), v_s).contiguous()
    return AttentionFp8Operands(q8, k8, v8, q_descale, k_descale, v_s.squeeze(-1))


@register_fake("attention")
def _attention_fake(out, q, k, v, scale, kv_lengths, key_bias, q_descale, k_descale, v_descale, k_block, layout,
                    backend):
    torch._check(out.shape == q.shape, lambda: "ltx_kernels.attention: out must have q's shape")


@register_fake("attention_backend")
def _attention_backend_fake(out, q, k, v, scale, kv_lengths, key_bias, q_descale, k_descale, v_descale, k_block,
                            layout, backend):
    return 0
