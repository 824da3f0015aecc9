"""Attention processors for diffusers' LTX-Video and LTX-2 attention modules: the FP8 q/k/v
projections in one GEMM (`FusedProjections`), q/k RMSNorm and RoPE in one kernel, LTX-2's
per-head gate in one kernel, the attention itself chosen in one place (`_FusedAttnBase._attend`)."""

import sys
from typing import Optional

import torch
import torch.nn.functional as F

from ...activation import gated_attention
from ...attention import attention as kernel_attention
from ...attention import attention_keys_fp8, attention_values_fp8, quantize_attention_fp8
from ...distributed import SequenceParallelComm
from ...norm import rms_norm
from ...quantization import concat_fp8_linears, fp8_linear_rows, share_concat_rows
from ...rope import rms_norm_rope, rms_norm_split_rope
from .. import _compile_policy
from .._compile_policy import use_kernel
from ._common import cast_weight, fp8_input_group, is_prequant, logger, nn_rms_eps
from .fused import is_inert_dropout, linear_then_gated, no_hooks
from .hooks import hooked_param


def _rope_tables(freqs, rope_type: str):
    """cos, sin as the RoPE kernels take them: interleaved [B or 1, S, C] (each frequency repeated
    twice), split [B, H, S, d/2] (a 3-D table rotates the whole row as one head)."""
    cos, sin = freqs
    if rope_type == "split" and cos.dim() == 3:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return cos, sin


def qk_norm_rope(norm: torch.nn.RMSNorm, x: torch.Tensor, freqs, rope_type: Optional[str]) -> torch.Tensor:
    """`norm(x)` (torch.nn.RMSNorm over the whole row) then the RoPE diffusers would apply."""
    w, eps = cast_weight(hooked_param(norm), x), nn_rms_eps(norm, x)
    if freqs is None or rope_type is None:
        return rms_norm(x, w, eps)
    cos, sin = _rope_tables(freqs, rope_type)
    if rope_type == "interleaved":
        return rms_norm_rope(x, cos, sin, w, eps)
    return rms_norm_split_rope(x, cos, sin, w, eps)


# The keys whose mean attention_keys_fp8 subtracts from every key (one 128-key block): softmax is
# invariant to any vector shared by all keys, and the producer of k has only its leading keys.
FP8_SMOOTH_KEYS = 128


def _fp8_producers_apply(heads: int, query, key, k_freqs, rope_type: Optional[str]) -> bool:
    """Whether the FP8 operands can come from the passes that produce q, k and v: a rotation the
    kernels take per head (interleaved, or split with one d/2-wide table per head), q and k of the
    same width, and a head dim FP8 attention runs our kernel at (KERNEL_ATTENTION_HEAD_DIMS, which
    every producer's CUDA kernel takes)."""
    if rope_type is None or k_freqs is None or query.shape[-1] != key.shape[-1] or query.shape[-1] % heads:
        return False
    d = query.shape[-1] // heads
    if d not in _compile_policy.KERNEL_ATTENTION_HEAD_DIMS["fp8"]:
        return False
    if rope_type == "interleaved":
        return True
    cos = k_freqs[0]
    return rope_type == "split" and cos.dim() == 4 and 2 * cos.shape[-1] == d


def _fp8_attend_from_producers(attn, query, key, value, q_freqs, k_freqs, rope_type: str):
    """FP8 attention whose operands the passes that produce q, k and v write, with no pass over
    16-bit q and k: q's from norm_q + RoPE with FP8 output (a factor per token and head), k's from
    attention_keys_fp8 (norm_k + RoPE, the leading FP8_SMOOTH_KEYS keys' mean subtracted, a factor
    per 128 keys and head), v's from attention_values_fp8. The projections [B, S, H*D] in, the
    attention [B, S, H, D] out in q's dtype."""
    h = attn.heads
    b, s, c = query.shape
    d = c // h
    norm_rope = rms_norm_rope if rope_type == "interleaved" else rms_norm_split_rope
    cq, sq = _rope_tables(q_freqs, rope_type)
    ck, sk = _rope_tables(k_freqs, rope_type)
    wq, eq = cast_weight(hooked_param(attn.norm_q), query), nn_rms_eps(attn.norm_q, query)
    wk, ek = cast_weight(hooked_param(attn.norm_k), key), nn_rms_eps(attn.norm_k, key)
    q8, qd = norm_rope(query, cq, sq, wq, eq, out_dtype=torch.float8_e4m3fn, group_size=d)
    k8, kd = attention_keys_fp8(key, ck, sk, wk, ek, heads=h, split_rope=rope_type == "split",
                                smooth_keys=FP8_SMOOTH_KEYS)
    v8, vd = attention_values_fp8(value.unflatten(2, (h, -1)))
    odt = query.dtype if query.dtype in (torch.bfloat16, torch.float16) else torch.bfloat16
    out = kernel_attention(q8.view(b, s, h, d), k8, v8, qd.view(b, s, h), kd, vd, out_dtype=odt)
    return out.to(query.dtype)


# ---- the projections in one GEMM --------------------------------------------------------------

PROJECTIONS = "ltx_kernels_projections"  # the child module of an attention module holding them


class FusedProjections(torch.nn.Module):
    """An attention module's FP8 projections as one layer per call (quantization.concat_fp8_linears):
    `qkv` = [to_q | to_k | to_v] for self-attention (one input), `kv` = [to_k | to_v] for
    cross-attention (its rows of qkv, or its own layer where to_q reads another width). One GEMM
    with N = the sum, and one input quantization, instead of three (two): at LTX-Video's
    self-attention (5376 x 2048 x 2048 each) the 6144-wide GEMM runs at a higher rate than three
    2048-wide ones (the 5376-row shapes of benchmarks/results/h100/gemm_rowwise.json), and the
    step has fewer launches. The original layers stay where they are,
    their weights views of these rows (held once; a `.to()` or `.cuda()` of the module points them
    at the moved copy again); their buffers stay the state_dict's, these are not saved."""

    def __init__(self, attn):
        super().__init__()
        layers = (attn.to_q, attn.to_k, attn.to_v)
        object.__setattr__(self, "layers", layers)  # attn's children, not this module's
        q, k, v = layers
        self.qkv = concat_fp8_linears(layers, persistent=False)
        if self.qkv is not None:  # to_k's and to_v's rows of qkv, no copy
            self.kv = fp8_linear_rows(self.qkv, q.out_features, k.out_features + v.out_features, persistent=False)
        else:
            self.kv = concat_fp8_linears((k, v), persistent=False)
        if self.qkv is not None or self.kv is not None:
            self._share()

    def _share(self):
        q, k, v = self.layers
        if self.qkv is None:
            share_concat_rows(self.kv, (k, v))
            return
        share_concat_rows(self.qkv, (q, k, v))
        if self.kv is not None:  # to_k's and to_v's rows of qkv
            share_concat_rows(self.qkv, (self.kv,), first_row=q.out_features)

    def _apply(self, fn, recurse=True):
        super()._apply(fn, recurse)
        self._share()  # the layers were moved on their own: views of the moved rows again
        return self

    def current(self, attn) -> bool:
        """Still attn's layers (nothing replaced them since)."""
        q, k, v = self.layers
        return attn.to_q is q and attn.to_k is k and attn.to_v is v

    def layer_for(self, cross: bool):
        """The layer that runs the call's projections (`kv` for cross-attention, `qkv` for
        self-attention), None where there is none or a hook sits on a layer it replaces (a hook
        expects its own layer to be called)."""
        q, k, v = self.layers
        fused = self.kv if cross else self.qkv
        if fused is None or not (no_hooks(k) and no_hooks(v) and (cross or no_hooks(q))):
            return None
        return fused


def attach_projections(attn) -> None:
    """Give attention module `attn` its FusedProjections where its to_q / to_k / to_v can be one
    layer (concat_fp8_linears), replacing one built for layers it no longer has; removes it where
    they cannot."""
    old = attn._modules.get(PROJECTIONS)
    if old is not None and old.current(attn):
        return
    new = FusedProjections(attn) if all(hasattr(attn, n) for n in ("to_q", "to_k", "to_v")) else None
    if new is not None and new.qkv is None and new.kv is None:
        new = None
    if old is not None or new is not None:
        attn._modules.pop(PROJECTIONS, None)
        if new is not None:
            attn.add_module(PROJECTIONS, new)


def project_qkv(attn, hidden_states, encoder_hidden_states):
    """q, k, v = to_q(hidden_states), to_k(kv), to_v(kv) with kv = encoder_hidden_states, or
    hidden_states for self-attention (None): in one GEMM where `attn` has current FusedProjections
    (views of its output, [B, S, N] each), else the three layers."""
    p = attn._modules.get(PROJECTIONS)
    cross = encoder_hidden_states is not None
    fused = None if p is None or not p.current(attn) else p.layer_for(cross)
    if fused is None:
        kv = encoder_hidden_states if cross else hidden_states
        return attn.to_q(hidden_states), attn.to_k(kv), attn.to_v(kv)
    q, k, v = p.layers
    if cross:
        key, value = fused(encoder_hidden_states).split([k.out_features, v.out_features], dim=-1)
        return attn.to_q(hidden_states), key, value
    return fused(hidden_states).split([q.out_features, k.out_features, v.out_features], dim=-1)


# ---- attention processors --------------------------------------------------------------------


def _kernel_attend(mode: str, query, key, value, key_mask):
    """ltx_kernels.attention on [B, S, heads, d] operands: in their dtype ("bf16") or on
    quantize_attention_fp8 operands ("fp8", output in the operands' 16-bit dtype)."""
    if mode == "fp8":
        odt = query.dtype if query.dtype in (torch.bfloat16, torch.float16) else torch.bfloat16
        out = kernel_attention(*quantize_attention_fp8(query, key, value), attn_mask=key_mask, out_dtype=odt)
        return out.to(query.dtype)
    return kernel_attention(query, key, value, attn_mask=key_mask)


_COMMS = {}


def ulysses_comm(parallel_config) -> Optional[SequenceParallelComm]:
    """Our communicator over the Ulysses group of diffusers' context parallelism
    (`transformer.enable_parallelism(config=ContextParallelConfig(ulysses_degree=N))`), one per
    group; None for anything else (ring attention, "Ulysses anything"): diffusers' dispatcher
    runs those. Transport "nccl": torch.distributed's all_to_all on the group (NCCL on GPUs, gloo
    on the CPU) around our pack / unpack kernels."""
    cp = getattr(parallel_config, "context_parallel_config", None)
    if cp is None or (getattr(cp, "ring_degree", 1) or 1) != 1 or getattr(cp, "ulysses_anything", False):
        return None
    mesh = getattr(cp, "_ulysses_mesh", None)
    if mesh is None or (getattr(cp, "ulysses_degree", 1) or 1) <= 1:
        return None
    group = mesh.get_group()
    comm = _COMMS.get(group)
    if comm is None:
        comm = _COMMS[group] = SequenceParallelComm(group, transport="nccl")
    return comm


def _ulysses(comm: SequenceParallelComm, mode: str, query, key, value, key_mask):
    """Ulysses attention on this rank's tokens q [B, Sq_r, H, d], k / v [B, Skv_r, H, d]: every
    rank's tokens of H/W heads in (send_recv_heads), our kernel over the whole sequence, this
    rank's tokens of every head back (gather_heads). A per-key mask is sharded with the keys, so
    it is all-gathered in the same token order. diffusers shards evenly (its sharder requires
    it), so every rank holds the same counts."""
    W = comm.world
    tq, tk = [query.shape[1]] * W, [key.shape[1]] * W
    q = comm.send_recv_heads(query.contiguous(), tq)
    k = comm.send_recv_heads(key.contiguous(), tk)
    v = comm.send_recv_heads(value.contiguous(), tk)
    mask = None
    if key_mask is not None:
        m = key_mask.reshape(key_mask.shape[0], key_mask.shape[-1]).contiguous()
        mask = comm.all_gather(m.view(torch.uint8) if m.dtype == torch.bool else m, tk)
        mask = mask.view(torch.bool) if m.dtype == torch.bool else mask
    out = _kernel_attend(mode, q, k, v, mask)
    return comm.gather_heads(out.contiguous(), tq)


class _FusedAttnBase:
    """What both processors share: how attention is computed (`_attend`) and the mask."""

    _attention_backend = None
    _parallel_config = None
    _ltx_kernels_fused = True

    def __init__(self, dispatch=None, prequant: int = 0, attention: Optional[str] = None):
        # diffusers' dispatch_attention_fn (taken from the replaced processor's module, so the
        # backend chosen with set_attention_backend / the attention_backend context still holds)
        self._dispatch = dispatch
        # the block may hand hidden_states as FP8 (q, scales) from its fused norm, quantized per
        # this many columns (128, or the row width for rowwise projections; 0: never)
        self.accepts_prequant = int(prequant)
        # None: diffusers' dispatcher / SDPA; "bf16": ltx_kernels.attention on the processor's
        # dtype; "fp8": ltx_kernels.attention on quantize_attention_fp8 operands
        self.kernel_attention = attention

    @staticmethod
    def _per_key_mask(mask, query, key) -> bool:
        """Whether the model's mask (as the processor receives it) is one bias per key of each
        batch row, the form ltx_kernels.attention takes ([B, Skv], [B, 1, Skv], [B, 1, 1, Skv])."""
        if mask is None:
            return True
        if mask.dim() < 2 or mask.shape[-1] != key.shape[1] or mask.shape[0] not in (1, query.shape[0]):
            return False
        return all(d == 1 for d in mask.shape[1:-1])

    def _attend(self, query, key, value, attention_mask, key_mask=None):
        """The one place that picks the attention function: q, k, v [B, S, heads, d] ->
        [B, S, heads, d]. ltx_kernels.attention when optimize() asked for it and it applies
        (a per-key mask; where it is faster than SDPA, `_compile_policy.kernel_attention_mode`:
        unmasked attention over many keys, with "fp8" falling back to the 16-bit kernel where
        only that one pays; under diffusers' context parallelism only in its
        Ulysses form, with our all-to-all, whatever the key count, since diffusers' Ulysses
        attention fails on a prompt mask: `_ulysses`); otherwise diffusers' dispatcher when the replaced processor's
        module has one (its backend and parallel config carried over), PyTorch SDPA otherwise.
        `key_mask` is the mask before prepare_attention_mask."""
        mode = self.kernel_attention
        if mode is not None and self._per_key_mask(key_mask, query, key):
            if self._parallel_config is None:
                run = _compile_policy.kernel_attention_mode(mode, key.shape[1], key.shape[3], key_mask is not None)
                if run is not None and (run == mode or query.dtype in (torch.bfloat16, torch.float16)):
                    return _kernel_attend(run, query, key, value, key_mask)
            else:
                comm = ulysses_comm(self._parallel_config)
                if comm is not None and query.shape[2] % comm.world == 0:
                    return _ulysses(comm, mode, query, key, value, key_mask)
        if self._dispatch is not None:
            return self._dispatch(
                query, key, value, attn_mask=attention_mask, dropout_p=0.0, is_causal=False,
                backend=self._attention_backend, parallel_config=self._parallel_config,
            )
        out = F.scaled_dot_product_attention(  # [B, H, S, D]
            query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2),
            attn_mask=attention_mask, dropout_p=0.0, is_causal=False,
        )
        return out.transpose(1, 2)

    def _attend_projections(self, attn, query, key, value, attention_mask, key_mask, q_freqs, k_freqs,
                            rope_type: Optional[str]):
        """The projections [B, S, H*D] -> the attention [B, S, H, D]: norm_q / norm_k + RoPE, then
        `_attend`; where FP8 attention runs our kernel on self-attention with a rotation (no key
        mask, no context parallelism), its operands come from the passes that produce q, k and v
        instead (`_fp8_attend_from_producers`: the same kernel, no pass over 16-bit q and k;
        tools/tune/attention_step.py measures both)."""
        h = attn.heads
        if (self.kernel_attention == "fp8" and self._parallel_config is None and key_mask is None
                and _fp8_producers_apply(h, query, key, k_freqs, rope_type)
                and _compile_policy.use_kernel_attention("fp8", key.shape[1], query.shape[-1] // h, False)):
            return _fp8_attend_from_producers(attn, query, key, value, q_freqs, k_freqs, rope_type)
        query = qk_norm_rope(attn.norm_q, query, q_freqs, rope_type).unflatten(2, (h, -1))  # [B, S, H, D]
        key = qk_norm_rope(attn.norm_k, key, k_freqs, rope_type).unflatten(2, (h, -1))
        return self._attend(query, key, value.unflatten(2, (h, -1)), attention_mask, key_mask)

    @staticmethod
    def _prepare_mask(attn, attention_mask, hidden_states, encoder_hidden_states):
        ref = hidden_states[0] if is_prequant(hidden_states) else hidden_states
        ref = ref if encoder_hidden_states is None else encoder_hidden_states
        batch_size, sequence_length, _ = (ref[0] if is_prequant(ref) else ref).shape
        if attention_mask is not None:
            attention_mask = attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)
            attention_mask = attention_mask.view(batch_size, attn.heads, -1, attention_mask.shape[-1])
        return attention_mask


class LTXVideoFusedAttnProcessor(_FusedAttnBase):
    """`LTXVideoAttnProcessor` with norm_q/norm_k + interleaved RoPE fused (`rms_norm_rope`). With
    `residual` and `gate` (the block's `h + attn(...) * gate`), returns residual + gate * attn(...):
    in the output projection's GEMM epilogue where that is a plain FP8 linear
    (fused.linear_then_gated), else computed after it."""

    def __call__(self, attn, hidden_states: torch.Tensor, encoder_hidden_states: Optional[torch.Tensor] = None,
                 attention_mask: Optional[torch.Tensor] = None,
                 image_rotary_emb: Optional[torch.Tensor] = None, residual: Optional[torch.Tensor] = None,
                 gate: Optional[torch.Tensor] = None) -> torch.Tensor:
        key_mask = attention_mask
        attention_mask = self._prepare_mask(attn, attention_mask, hidden_states, encoder_hidden_states)
        query, key, value = project_qkv(attn, hidden_states, encoder_hidden_states)  # [B, S, H*D]

        rope = "interleaved" if image_rotary_emb is not None else None
        hidden_states = self._attend_projections(attn, query, key, value, attention_mask, key_mask,
                                                 image_rotary_emb, image_rotary_emb, rope)
        hidden_states = hidden_states.flatten(2, 3)
        hidden_states = hidden_states.to(query.dtype)

        if is_inert_dropout(attn.to_out[1]):
            return linear_then_gated(attn.to_out[0], hidden_states, residual, gate)
        hidden_states = attn.to_out[0](hidden_states)
        hidden_states = attn.to_out[1](hidden_states)
        return hidden_states if residual is None else residual + hidden_states * gate


class LTX2FusedAttnProcessor(_FusedAttnBase):
    """`LTX2AudioVideoAttnProcessor` with norm_q/norm_k + RoPE fused (split: `rms_norm_split_rope`,
    interleaved: `rms_norm_rope`) and the per-head gate via `gated_attention`."""

    def __call__(self, attn, hidden_states: torch.Tensor, encoder_hidden_states: Optional[torch.Tensor] = None,
                 attention_mask: Optional[torch.Tensor] = None, query_rotary_emb: Optional[tuple] = None,
                 key_rotary_emb: Optional[tuple] = None) -> torch.Tensor:
        key_mask = attention_mask
        attention_mask = self._prepare_mask(attn, attention_mask, hidden_states, encoder_hidden_states)

        gate_logits = None
        if attn.to_gate_logits is not None:
            gate_logits = attn.to_gate_logits(hidden_states)  # [B, S, H], from the original input

        query, key, value = project_qkv(attn, hidden_states, encoder_hidden_states)

        rope = None
        if query_rotary_emb is not None and attn.rope_type in ("interleaved", "split"):
            rope = attn.rope_type
        key_freqs = key_rotary_emb if key_rotary_emb is not None else query_rotary_emb
        hidden_states = self._attend_projections(attn, query, key, value, attention_mask, key_mask,
                                                 query_rotary_emb, key_freqs, rope)
        hidden_states = hidden_states.flatten(2, 3)
        hidden_states = hidden_states.to(query.dtype)

        if gate_logits is not None and use_kernel("gated_attention"):  # x * 2 * sigmoid(logits), per head
            hidden_states = gated_attention(hidden_states, gate_logits.to(hidden_states.dtype))
        elif gate_logits is not None:  # traced by torch.compile (_compile_policy): diffusers' composition
            gates = 2.0 * torch.sigmoid(gate_logits)
            hidden_states = (hidden_states.unflatten(2, (attn.heads, -1)) * gates.unsqueeze(-1)).flatten(2, 3)

        hidden_states = attn.to_out[0](hidden_states)
        hidden_states = attn.to_out[1](hidden_states)
        return hidden_states


PROCESSORS = {
    # attention module class -> (diffusers processor class it replaces, our processor class)
    "LTXAttention": ("LTXVideoAttnProcessor", LTXVideoFusedAttnProcessor),
    "LTX2Attention": ("LTX2AudioVideoAttnProcessor", LTX2FusedAttnProcessor),
}


def norms_supported(attn) -> bool:
    for name in ("norm_q", "norm_k"):
        n = getattr(attn, name, None)
        if not isinstance(n, torch.nn.RMSNorm) or len(n.normalized_shape) != 1:
            return False
    return True


def install_processor(name: str, attn, counts, attention: Optional[str] = None) -> None:
    replaced_cls, ours = PROCESSORS[type(attn).__name__]
    proc = getattr(attn, "processor", None)
    if getattr(proc, "_ltx_kernels_fused", False):
        proc.kernel_attention = attention  # already ours: a second optimize() sets the attention
        attach_projections(attn)  # (and the projections of layers quantized since)
        return
    if type(proc).__name__ != replaced_cls:
        logger.info("ltx_kernels: %s: attention processor %s not recognised, left as is", name, type(proc).__name__)
        counts["skipped"] += 1
        return
    if not norms_supported(attn):
        logger.info("ltx_kernels: %s: norm_q/norm_k are not torch.nn.RMSNorm, left as is", name)
        counts["skipped"] += 1
        return
    dispatch = getattr(sys.modules.get(type(proc).__module__), "dispatch_attention_fn", None)
    # the projections' common FP8 input group (all three read the same (q, scales)), 0 for none
    groups = {fp8_input_group(getattr(attn, p, None)) for p in ("to_q", "to_k", "to_v")}
    prequant = groups.pop() if len(groups) == 1 else 0
    prequant = prequant if getattr(attn, "to_gate_logits", None) is None else 0  # gate logits need x
    new = ours(dispatch, prequant=prequant, attention=attention)
    new._attention_backend = getattr(proc, "_attention_backend", None)
    new._parallel_config = getattr(proc, "_parallel_config", None)
    if hasattr(attn, "set_processor"):
        attn.set_processor(new)
    else:
        attn.processor = new
    attach_projections(attn)
    counts["processors"] += 1
