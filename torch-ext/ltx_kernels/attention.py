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

Backends: on an sm_90 GPU (H100/H200) a TMA + wgmma kernel for head dims 64 and 128 ("sm90");
elsewhere, and for other head dims, the inputs in fp32 through PyTorch's
``scaled_dot_product_attention`` ("torch", written below: correct, not fast); on the CPU a C++
backend ("cpu"). The op chooses, once per call (csrc/include/ltx_kernels/attention/heuristics.h
names the backends); ``attention_backend(...)`` says which one runs.

FP8: ``quantize_attention_fp8(q, k, v)`` returns the operands (q and k per token and head, k
after subtracting its mean over the keys, which softmax cancels exactly; v per channel, stored
transposed in the key order the kernel reads), by one op (C++ on the CPU, a CUDA kernel on GPUs;
its exact rule in its docstring). ``attention(*fp8_operands)`` then runs the FP8 kernel; its P is
rounded to E4M3 as well, so expect errors of ~1e-2 relative (see tests/test_attention.py for the
bounds).
"""

import math
from typing import NamedTuple, Optional

import torch

from ._common import register_fake
from ._ops import add_op_namespace_prefix, ops
from .reference import attention_fp8_dequantize

__all__ = ["attention", "attention_backend", "quantize_attention_fp8", "attention_keys_fp8", "attention_values_fp8",
           "AttentionFp8Operands"]

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


def _sizes(q: torch.Tensor, k: torch.Tensor, layout: str):
    """(B, Skv) for the mask, or None where the op refuses the layout or the ranks (it says why)."""
    if layout not in ("bshd", "bhsd") or q.dim() != 4 or k.dim() != 4:
        return None
    return q.shape[0], k.shape[1] if layout == "bshd" else k.shape[2]


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
    if m.dtype != torch.bool and not m.dtype.is_floating_point:
        raise ValueError(f"ltx_kernels.attention: attn_mask must be boolean or floating (got {attn_mask.dtype})")
    # One pass into rows padded to a multiple of 4 keys (16 bytes), the layout the sm_90a kernel
    # loads by TMA (the op pads any other layout itself, at the cost of another copy).
    m = m.to(device).expand(b, skv)
    bias = torch.empty(b, (skv + 3) // 4 * 4, dtype=torch.float32, device=device)[:, :skv]
    if m.dtype == torch.bool:
        return torch.log(m, out=bias)  # log(True) = 0, log(False) = -inf
    return bias.copy_(m)


def _prepare(q, k, scale, attn_mask, k_descale, out, out_dtype, layout):
    """The op's arguments that the wrapper makes (the op checks them all): out, the scale, the mask
    as a key bias, and k_block from k_descale's shape."""
    d = q.shape[-1] if q.dim() else 0
    if scale is None:
        scale = 1.0 / math.sqrt(d) if d > 0 else 1.0
    sizes = _sizes(q, k, layout)
    bias = _key_bias(attn_mask, *sizes, q.device) if sizes is not None else None
    k_block = 1
    if q.dtype == torch.float8_e4m3fn:
        if sizes is not None and k_descale is not None and k_descale.dim() == 3 and k_descale.shape[1] != sizes[1]:
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
    out, scale, bias, k_block = _prepare(q, k, scale, attn_mask, k_descale, out, out_dtype, layout)
    ops.attention(out, q, k, v, scale, kv_lengths, bias, q_descale, k_descale, v_descale, k_block, layout, backend)
    return out


def attention_backend(q, k, v, q_descale=None, k_descale=None, v_descale=None, *, scale=None, kv_lengths=None, attn_mask=None,
                      layout: str = "bshd", out_dtype=None, backend: str = "auto") -> str:
    """Which backend ``attention`` would run for these arguments: "cpu", "torch" or "sm90"."""
    out, scale, bias, k_block = _prepare(q, k, scale, attn_mask, k_descale, None, out_dtype, layout)
    return ops.attention_backend(out, q, k, v, scale, kv_lengths, bias, q_descale, k_descale, v_descale, k_block,
                                 layout, backend)


def _attention_torch(out, q, k, v, scale, kv_lengths, key_bias, q_descale, k_descale, v_descale, k_block, layout):
    """The "torch" backend (the op attention_torch, which ops.attention calls on arguments it has
    checked, with Skv > 0): the inputs in fp32 (FP8: codes times their factors, v's keys put back
    in order: reference.attention_fp8_dequantize), grouped heads repeated, the key bias and the
    keys past kv_lengths (-inf) as SDPA's additive mask; a batch row without a valid key gives 0.
    k_block is implied by k_descale's shape."""
    if q.dtype == torch.float8_e4m3fn:
        q, k, v = attention_fp8_dequantize(q, k, v, q_descale, k_descale, v_descale, layout, dtype=torch.float32)
    else:
        q, k, v = q.float(), k.float(), v.float()
    if layout == "bshd":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, S, D]
    b, h, _, _ = q.shape
    hk, skv = k.shape[1], k.shape[2]
    if hk != h:
        k = k.repeat_interleave(h // hk, 1)
        v = v.repeat_interleave(h // hk, 1)
    mask = torch.zeros(b, 1, 1, skv, dtype=torch.float32, device=q.device)
    if key_bias is not None:
        mask = mask + key_bias[:, None, None, :]
    if kv_lengths is not None:
        beyond = torch.arange(skv, device=q.device).view(1, 1, 1, skv) >= kv_lengths.long().view(b, 1, 1, 1)
        mask = mask.masked_fill(beyond, float("-inf"))
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    o = torch.where((mask > float("-inf")).any(-1, keepdim=True), o, torch.zeros((), dtype=o.dtype, device=o.device))
    out.copy_(o.transpose(1, 2) if layout == "bshd" else o)


def _register_torch_backend():
    """attention_torch's implementation, once per process (a second import of the same build, as
    `kernels.get_local_kernel` makes, finds it registered)."""
    qualname = add_op_namespace_prefix("attention_torch")
    if not torch._C._dispatch_has_kernel_for_dispatch_key(qualname, "CompositeExplicitAutograd"):
        torch.library.impl(qualname, "default", _attention_torch)


_register_torch_backend()


def _quant_dims(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: str):
    """(B, Sq, H, D, Skv, Hkv) for the output allocation; the op itself checks everything else."""
    op = "ltx_kernels.quantize_attention_fp8"
    if layout not in ("bshd", "bhsd"):
        raise ValueError(f"{op}: layout must be 'bshd' ([B, S, H, D]) or 'bhsd' ([B, H, S, D]) (got {layout!r})")
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"{op}: q, k and v must be 4-D (got shapes {list(q.shape)}, {list(k.shape)}, "
                         f"{list(v.shape)})")
    b, sq, h, d = q.shape if layout == "bshd" else (q.shape[0], q.shape[2], q.shape[1], q.shape[3])
    skv, hk = (k.shape[1], k.shape[2]) if layout == "bshd" else (k.shape[2], k.shape[1])
    return b, sq, h, d, skv, hk


def quantize_attention_fp8(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, layout: str = "bshd",
                           smooth_k: bool = True, smooth_keys: int = 0, k_block: int = 128) -> AttentionFp8Operands:
    """FP8 E4M3 operands for ``attention`` from bf16/fp16/fp32 q, k, v (same layouts, any strides,
    head dim a multiple of 8 in [8, 256]).

    Every code is ``e4m3(x / s)`` with ``s = amax / 448`` over its group (a true fp32 division,
    round to nearest even, saturating at 448); an all-zero group gets ``s = 0`` and the codes of
    its values themselves (+-0, the sign kept). The groups:

    - q: one factor per token and head over its D values (``q_descale [B, Sq, H]``).
    - k: when ``smooth_k``, a mean of the keys (per batch row, head and channel) subtracted
      first: ``mean = float32(sum_j float64(k_j) / n)`` over the first ``n`` keys (the sum in fp64,
      in a fixed chunked order, divided in fp64, rounded once to fp32), ``kc = float32(float32(k)
      - mean)``; ``n = Skv`` when ``smooth_keys`` is 0 (the exact mean), else
      ``min(smooth_keys, Skv)`` (a positive multiple of 64: the mean of the leading keys, which
      spares the kernel a pass over all of k). Softmax is invariant to one vector subtracted from
      all the keys (``<q, k_j - mu> = <q, k_j> - <q, mu>`` shifts a whole row of scores), so any
      such vector is exact in real arithmetic; it only decides how much of the keys' shared
      offset leaves the quantization range. Then one factor per ``k_block`` keys and head (1: per key,
      ``[B, Skv, Hkv]``; 128: per 128 keys over the block's keys and all D channels,
      ``[B, ceil(Skv / 128), Hkv]``, free in the kernel).
    - v: one factor per channel over all keys (``v_descale [B, Hkv, D]``, 0 when Skv = 0), stored
      transposed ``[B, Hkv, D, Skv_pad]`` (``Skv_pad = 32 ceil(max(Skv, 1) / 32)``, code 0 past Skv)
      with position p of each 32-key block holding key ``KEY_ORDER[p]`` of the block.

    q8 / k8 have q's / k's shape (contiguous, same layout). One op on every device (a C++ CPU
    backend, a CUDA kernel); ``ltx_kernels.reference.quantize_attention_fp8`` is the definition
    they match bit for bit.
    """
    if k_block not in (1, 128):
        raise ValueError(f"ltx_kernels.quantize_attention_fp8: k_block must be 1 or 128 (got {k_block})")
    b, sq, h, d, skv, hk = _quant_dims(q, k, v, layout)
    dev = q.device
    f8 = torch.float8_e4m3fn
    spad = -(-max(skv, 1) // 32) * 32
    q8 = torch.empty(q.shape, dtype=f8, device=dev)
    k8 = torch.empty(k.shape, dtype=f8, device=dev)
    v8 = torch.empty(b, hk, d, spad, dtype=f8, device=dev)
    q_descale = torch.empty(b, sq, h, dtype=torch.float32, device=dev)
    k_descale = torch.empty(b, skv if k_block == 1 else -(-skv // 128), hk, dtype=torch.float32, device=dev)
    v_descale = torch.empty(b, hk, d, dtype=torch.float32, device=dev)
    ops.quantize_attention_fp8(q8, k8, v8, q_descale, k_descale, v_descale, q, k, v, layout, bool(smooth_k),
                               int(smooth_keys), int(k_block))
    return AttentionFp8Operands(q8, k8, v8, q_descale, k_descale, v_descale)


def attention_values_fp8(v: torch.Tensor, *, layout: str = "bshd"):
    """v's FP8 operand alone, exactly as ``quantize_attention_fp8`` makes it: ``(v8, v_descale)``,
    v8 float8_e4m3fn ``[B, Hkv, D, Skv_pad]`` (keys in ``KEY_ORDER`` within 32-key blocks, code 0
    past Skv), v_descale fp32 ``[B, Hkv, D]`` (one factor per channel over all keys). For a
    pipeline whose q and k operands come from the passes that produce them (``rms_norm_rope`` with
    ``out_dtype=torch.float8_e4m3fn, group_size=D`` for q, ``attention_keys_fp8`` for k)."""
    if layout not in ("bshd", "bhsd"):
        raise ValueError(f"ltx_kernels.attention_values_fp8: layout must be 'bshd' ([B, S, H, D]) or 'bhsd' "
                         f"([B, H, S, D]) (got {layout!r})")
    if v.dim() != 4:
        raise ValueError(f"ltx_kernels.attention_values_fp8: v must be 4-D (got shape {list(v.shape)})")
    b, d = v.shape[0], v.shape[3]
    skv, hk = (v.shape[1], v.shape[2]) if layout == "bshd" else (v.shape[2], v.shape[1])
    spad = -(-max(skv, 1) // 32) * 32
    v8 = torch.empty(b, hk, d, spad, dtype=torch.float8_e4m3fn, device=v.device)
    v_descale = torch.empty(b, hk, d, dtype=torch.float32, device=v.device)
    ops.attention_values_fp8(v8, v_descale, v, layout)
    return v8, v_descale


def attention_keys_fp8(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, weight: Optional[torch.Tensor] = None,
                       eps: float = 1e-6, *, heads: int, split_rope: bool = False, smooth_keys: int = 128):
    """k's FP8 operand straight from the key projection's output ``x [B, S, C]`` (C = heads x D):
    ``(k8, k_descale)`` with k8 float8_e4m3fn ``[B, S, heads, D]`` and k_descale fp32
    ``[B, ceil(S / 128), heads]``, the operand ``quantize_attention_fp8(..., k_block=128)``
    gives, without the 16-bit RoPE output and the pass over it.

    y is ``rms_norm_rope(x, cos, sin, weight, eps)`` (``split_rope``: ``rms_norm_split_rope``,
    cos / sin ``[B or 1, heads, S, D/2]``), computed in fp32 and never rounded to x's dtype. With
    ``smooth_keys = n`` (a positive multiple of 64) the mean of y over the first ``min(n, S)``
    keys (per batch row and channel: an fp64 sum in key order, one division, one rounding to
    fp32) is subtracted: softmax is invariant to one vector subtracted from every key, so this
    only takes the keys' shared offset out of the quantization range (0: no smoothing). Then per
    128 keys and head ``s = amax / 448`` and ``code = e4m3(kc / s)`` (fp32 division, round to
    nearest even, saturating). ``ltx_kernels.reference.attention_keys_fp8`` is the definition."""
    if x.dim() != 3:
        raise ValueError(f"ltx_kernels.attention_keys_fp8: x must be 3-D [B, S, C] (got shape {list(x.shape)})")
    b, s, c = x.shape
    if not isinstance(heads, int) or heads <= 0 or c % heads != 0:
        raise ValueError(f"ltx_kernels.attention_keys_fp8: heads must be a positive int dividing x.shape[-1] = {c} "
                         f"(got {heads!r})")
    k8 = torch.empty(b, s, c, dtype=torch.float8_e4m3fn, device=x.device)
    k_descale = torch.empty(b, -(-s // 128), heads, dtype=torch.float32, device=x.device)
    ops.attention_keys_fp8(k8, k_descale, x, cos, sin, weight, float(eps), int(heads), bool(split_rope),
                           int(smooth_keys))
    return k8.view(b, s, heads, c // heads), k_descale


@register_fake("attention")
def _attention_fake(out, q, k, v, scale, kv_lengths, key_bias, q_descale, k_descale, v_descale, k_block, layout,
                    backend):
    torch._check(out.shape == q.shape, lambda: "ltx_kernels.attention: out must have q's shape")


@register_fake("quantize_attention_fp8")
def _quantize_attention_fp8_fake(q8, k8, v8, q_descale, k_descale, v_descale, q, k, v, layout, smooth_k, smooth_keys,
                                 k_block):
    torch._check(q8.shape == q.shape and k8.shape == k.shape,
                 lambda: "ltx_kernels.quantize_attention_fp8: q8 and k8 must have q's and k's shapes")


@register_fake("attention_values_fp8")
def _attention_values_fp8_fake(v8, v_descale, v, layout):
    torch._check(v8.dim() == 4 and v_descale.dim() == 3,
                 lambda: "ltx_kernels.attention_values_fp8: v8 must be 4-D and v_descale 3-D")


@register_fake("attention_keys_fp8")
def _attention_keys_fp8_fake(k8, k_descale, x, cos, sin, weight, eps, heads, split, smooth_keys):
    torch._check(k8.shape == x.shape, lambda: "ltx_kernels.attention_keys_fp8: k8 must have x's shape")
