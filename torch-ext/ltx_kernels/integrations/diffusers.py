"""diffusers integration: fused kernels inside LTX-Video and LTX-2 transformers, in place.

    >>> import ltx_kernels.integrations.diffusers as lkd
    >>> pipe = LTXPipeline.from_pretrained(...).to("cuda")
    >>> lkd.optimize(pipe)                      # or lkd.optimize(pipe.transformer)
    >>> pipe.enable_model_cpu_offload()         # optional, after optimize()

`optimize` finds `LTXVideoTransformer3DModel` / `LTX2VideoTransformer3DModel` by class name (so
diffusers is never imported here) and swaps, without adding or moving any parameter:

- attention processors (`LTXVideoAttnProcessor`, `LTX2AudioVideoAttnProcessor`): q/k RMSNorm +
  RoPE in one kernel (`rms_norm_rope` for interleaved RoPE, `rms_norm_split_rope` for LTX-2's
  split RoPE, `rms_norm` where there is no RoPE, e.g. prompt cross-attention), then the same
  `dispatch_attention_fn` (SDPA by default, or the backend set on the processor), LTX-2's gate
  `x * 2 * sigmoid(logits)` via `gated_attention`, then `to_out`;
- block forwards (`LTXVideoTransformerBlock`, `LTX2VideoTransformerBlock`), same signatures as
  diffusers 0.42.1: `norm(x) * (1 + scale) + shift` -> `adaln_rms_norm`; a gated residual
  `h + y * gate` directly followed by the next norm -> `gated_residual_adaln_rms_norm` (gate 1 /
  scale 0 / shift 0 where the model has none);
- `FeedForward` whose activation is `GELU(approximate="tanh")`: the projection, then
  `gelu_tanh` in place.

Anything else (unknown block or processor classes, norms with a bias, modules that already carry
accelerate/diffusers hooks) is left untouched with one log line on logger "ltx_kernels".
Applying `optimize` twice is harmless. With `quantization="fp8" | "fp6" | "nvfp4"` the linears
inside the transformer blocks are replaced by `ltx_kernels.quantization.quantize_linears`
(LTX-2's policy); where a fused norm feeds FP8 linears directly (to_q/to_k/to_v after norm1 +
AdaLN, the feed-forward's first projection after norm2/norm3) the norm emits the FP8 codes and
scales itself (`out_dtype=torch.float8_e4m3fn`) when this build supports it.
"""

import inspect
import logging
import sys
from typing import Any, Optional

import torch
import torch.nn.functional as F

from ..activation import gated_attention, gelu_tanh
from ..fused_norm import adaln_rms_norm, gated_residual_adaln_rms_norm
from ..norm import rms_norm
from ..rope import rms_norm_rope, rms_norm_split_rope

__all__ = ["optimize", "LTXVideoFusedAttnProcessor", "LTX2FusedAttnProcessor"]

logger = logging.getLogger("ltx_kernels")

_FORMATS = ("fp8", "fp6", "nvfp4")
_TRANSFORMERS = ("LTXVideoTransformer3DModel", "LTX2VideoTransformer3DModel")
_PATCHED = "_ltx_kernels_patched"  # set on every module whose forward we replaced
_FP8 = torch.float8_e4m3fn


# ---- small helpers ---------------------------------------------------------------------------


def _table(t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A modulation table (scale / shift / gate) in the form the fused ops take: x's dtype and
    either [B, C], [B, 1, .., 1, C] (per sample) or x.shape (per token). Anything else that
    broadcasts against x (as eager PyTorch would) is expanded to x.shape."""
    if t.dtype != x.dtype:
        t = t.to(x.dtype)
    if t.shape == x.shape:
        return t
    if t.dim() == x.dim() and t.shape[0] == x.shape[0] and t.shape[-1] == x.shape[-1]:
        if all(s == 1 for s in t.shape[1:-1]):
            return t
    return t.expand(x.shape)


def _const(x: torch.Tensor, value: float) -> torch.Tensor:
    """A per-sample table [B, 1, .., 1, C] filled with `value` (gate 1, scale 0, shift 0)."""
    return x.new_full((x.shape[0],) + (1,) * (x.dim() - 2) + (x.shape[-1],), value)


def _weight(w: Optional[torch.Tensor], x: torch.Tensor) -> Optional[torch.Tensor]:
    return None if w is None else w.to(x.dtype)


def _nn_rms_eps(norm: torch.nn.RMSNorm, x: torch.Tensor) -> float:
    return norm.eps if norm.eps is not None else torch.finfo(x.dtype).eps


def _is_prequant(x: Any) -> bool:
    return isinstance(x, tuple)


def _params(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


# which fused norms of this build can emit FP8 (q, scales) directly, decided once at import
# (never inside a traced forward): name -> accepts scale_layout
_FP8_OUT = {
    f.__name__: "scale_layout" in _params(f)
    for f in (rms_norm, adaln_rms_norm, gated_residual_adaln_rms_norm)
    if "out_dtype" in _params(f)
}


def _supports_fp8_out(fn) -> bool:
    return fn.__name__ in _FP8_OUT


def _fp8_kwargs(fn, x: torch.Tensor) -> dict:
    """out_dtype e4m3 and, on CUDA, the M-major scale layout FP8BlockwiseLinear itself uses there."""
    kw = {"out_dtype": _FP8}
    if x.is_cuda and _FP8_OUT[fn.__name__]:
        kw["scale_layout"] = "mn_major"
    return kw


def _is_fp8_linear(m: Any) -> bool:
    """ltx_kernels.quantization's FP8BlockwiseLinear or a subclass (FP6BlockwiseLinear): layers
    whose forward also takes FP8 activations pre-quantized as (q, scales)."""
    return any(c.__name__ == "FP8BlockwiseLinear" for c in type(m).__mro__)


def _has_hooks(m: torch.nn.Module) -> bool:
    return hasattr(m, "_hf_hook") or hasattr(m, "_diffusers_hook")


def _qk_norm_rope(norm: torch.nn.RMSNorm, x: torch.Tensor, freqs, rope_type: Optional[str]) -> torch.Tensor:
    """`norm(x)` (torch.nn.RMSNorm over the whole row) then the RoPE diffusers would apply."""
    w, eps = _weight(norm.weight, x), _nn_rms_eps(norm, x)
    if freqs is None or rope_type is None:
        return rms_norm(x, w, eps)
    cos, sin = freqs
    if rope_type == "interleaved":  # cos/sin [B or 1, S, C], each frequency repeated twice
        return rms_norm_rope(x, cos, sin, w, eps)
    # split: cos/sin [B, H, S, d/2] (a 3-D table rotates the whole row as one head)
    if cos.dim() == 3:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return rms_norm_split_rope(x, cos, sin, w, eps)


# ---- attention processors --------------------------------------------------------------------


class _FusedAttnBase:
    _attention_backend = None
    _parallel_config = None
    _ltx_kernels_fused = True

    def __init__(self, dispatch=None, prequant: bool = False):
        # diffusers' dispatch_attention_fn (taken from the replaced processor's module, so the
        # backend chosen with set_attention_backend / the attention_backend context still holds)
        self._dispatch = dispatch
        # the block may hand hidden_states as FP8 (q, scales) from its fused norm
        self.accepts_prequant = prequant

    def _attend(self, query, key, value, attention_mask):
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

    @staticmethod
    def _prepare_mask(attn, attention_mask, hidden_states, encoder_hidden_states):
        ref = hidden_states[0] if _is_prequant(hidden_states) else hidden_states
        ref = ref if encoder_hidden_states is None else encoder_hidden_states
        batch_size, sequence_length, _ = (ref[0] if _is_prequant(ref) else ref).shape
        if attention_mask is not None:
            attention_mask = attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)
            attention_mask = attention_mask.view(batch_size, attn.heads, -1, attention_mask.shape[-1])
        return attention_mask


class LTXVideoFusedAttnProcessor(_FusedAttnBase):
    """`LTXVideoAttnProcessor` with norm_q/norm_k + interleaved RoPE fused (`rms_norm_rope`)."""

    def __call__(
        self,
        attn,
        hidden_states: torch.Tensor,
        encoder_hidden_states: Optional[torch.Tensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        image_rotary_emb: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        attention_mask = self._prepare_mask(attn, attention_mask, hidden_states, encoder_hidden_states)
        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states

        query = attn.to_q(hidden_states)  # [B, S, H*D]
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)

        rope = "interleaved" if image_rotary_emb is not None else None
        query = _qk_norm_rope(attn.norm_q, query, image_rotary_emb, rope)
        key = _qk_norm_rope(attn.norm_k, key, image_rotary_emb, rope)

        query = query.unflatten(2, (attn.heads, -1))  # [B, S, H, D]
        key = key.unflatten(2, (attn.heads, -1))
        value = value.unflatten(2, (attn.heads, -1))

        hidden_states = self._attend(query, key, value, attention_mask)
        hidden_states = hidden_states.flatten(2, 3)
        hidden_states = hidden_states.to(query.dtype)

        hidden_states = attn.to_out[0](hidden_states)
        hidden_states = attn.to_out[1](hidden_states)
        return hidden_states


class LTX2FusedAttnProcessor(_FusedAttnBase):
    """`LTX2AudioVideoAttnProcessor` with norm_q/norm_k + RoPE fused (split: `rms_norm_split_rope`,
    interleaved: `rms_norm_rope`) and the per-head gate via `gated_attention`."""

    def __call__(
        self,
        attn,
        hidden_states: torch.Tensor,
        encoder_hidden_states: Optional[torch.Tensor] = None,
        attention_mask: Optional[torch.Tensor] = None,
        query_rotary_emb: Optional[tuple] = None,
        key_rotary_emb: Optional[tuple] = None,
    ) -> torch.Tensor:
        attention_mask = self._prepare_mask(attn, attention_mask, hidden_states, encoder_hidden_states)
        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states

        gate_logits = None
        if attn.to_gate_logits is not None:
            gate_logits = attn.to_gate_logits(hidden_states)  # [B, S, H], from the original input

        query = attn.to_q(hidden_states)
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)

        rope = None
        if query_rotary_emb is not None and attn.rope_type in ("interleaved", "split"):
            rope = attn.rope_type
        query = _qk_norm_rope(attn.norm_q, query, query_rotary_emb, rope)
        key_freqs = key_rotary_emb if key_rotary_emb is not None else query_rotary_emb
        key = _qk_norm_rope(attn.norm_k, key, key_freqs, rope)

        query = query.unflatten(2, (attn.heads, -1))
        key = key.unflatten(2, (attn.heads, -1))
        value = value.unflatten(2, (attn.heads, -1))

        hidden_states = self._attend(query, key, value, attention_mask)
        hidden_states = hidden_states.flatten(2, 3)
        hidden_states = hidden_states.to(query.dtype)

        if gate_logits is not None:  # x * 2 * sigmoid(logits), per head
            hidden_states = gated_attention(hidden_states, gate_logits.to(hidden_states.dtype))

        hidden_states = attn.to_out[0](hidden_states)
        hidden_states = attn.to_out[1](hidden_states)
        return hidden_states


_PROCESSORS = {
    # attention module class -> (diffusers processor class it replaces, our processor class)
    "LTXAttention": ("LTXVideoAttnProcessor", LTXVideoFusedAttnProcessor),
    "LTX2Attention": ("LTX2AudioVideoAttnProcessor", LTX2FusedAttnProcessor),
}


def _norms_supported(attn) -> bool:
    for name in ("norm_q", "norm_k"):
        n = getattr(attn, name, None)
        if not isinstance(n, torch.nn.RMSNorm) or len(n.normalized_shape) != 1:
            return False
    return True


def _install_processor(name: str, attn, counts) -> None:
    replaced_cls, ours = _PROCESSORS[type(attn).__name__]
    proc = getattr(attn, "processor", None)
    if getattr(proc, "_ltx_kernels_fused", False):
        return  # already ours
    if type(proc).__name__ != replaced_cls:
        logger.info("ltx_kernels: %s: attention processor %s not recognised, left as is", name, type(proc).__name__)
        counts["skipped"] += 1
        return
    if not _norms_supported(attn):
        logger.info("ltx_kernels: %s: norm_q/norm_k are not torch.nn.RMSNorm, left as is", name)
        counts["skipped"] += 1
        return
    dispatch = getattr(sys.modules.get(type(proc).__module__), "dispatch_attention_fn", None)
    prequant = all(_is_fp8_linear(getattr(attn, p, None)) for p in ("to_q", "to_k", "to_v"))
    prequant = prequant and getattr(attn, "to_gate_logits", None) is None  # gate logits need x
    new = ours(dispatch, prequant=prequant)
    new._attention_backend = getattr(proc, "_attention_backend", None)
    new._parallel_config = getattr(proc, "_parallel_config", None)
    if hasattr(attn, "set_processor"):
        attn.set_processor(new)
    else:
        attn.processor = new
    counts["processors"] += 1


# ---- fused norm helpers used by the block forwards -------------------------------------------


def _fp8_ok(x: torch.Tensor) -> bool:
    return x.shape[-1] % 128 == 0 and x.dtype in (torch.float16, torch.bfloat16)


def _norm_mod(norm, h, pending, scale, shift, fp8: bool = False):
    """Flush a pending gated residual into h and normalise: returns (h_new, y) with
    h_new = h + y_p * gate_p (pending = (y_p, gate_p or None); h itself when pending is None)
    and y = rms_norm(h_new, norm.weight, norm.eps) * (1 + scale) + shift (plain RMSNorm when
    scale/shift are None). With fp8=True (and this build's fused norms able to emit FP8), y is
    the tuple (q, scales) for an FP8 linear."""
    w, eps = _weight(norm.weight, h), norm.eps
    fp8 = fp8 and _fp8_ok(h)
    if pending is None:
        if scale is None:
            if fp8 and _supports_fp8_out(rms_norm):
                return h, tuple(rms_norm(h, w, eps, **_fp8_kwargs(rms_norm, h)))
            return h, rms_norm(h, w, eps)
        sc, sh = _table(scale, h), _table(shift, h)
        if fp8 and _supports_fp8_out(adaln_rms_norm):
            return h, tuple(adaln_rms_norm(h, sc, sh, w, eps, **_fp8_kwargs(adaln_rms_norm, h)))
        return h, adaln_rms_norm(h, sc, sh, w, eps)
    y, gate = pending
    if gate is None:
        gate = _const(h, 1.0)
    if scale is None:
        scale = shift = _const(h, 0.0)
    args = (h, y.to(h.dtype), _table(gate, h), _table(scale, h), _table(shift, h), w, eps)
    if fp8 and _supports_fp8_out(gated_residual_adaln_rms_norm):
        h_new, q, s = gated_residual_adaln_rms_norm(*args, **_fp8_kwargs(gated_residual_adaln_rms_norm, h))
        return h_new, (q, s)
    return gated_residual_adaln_rms_norm(*args)


def _attn_prequant(attn) -> bool:
    return bool(getattr(getattr(attn, "processor", None), "accepts_prequant", False))


def _ff_prequant(ff) -> bool:
    return bool(getattr(ff, _PATCHED, False)) and _is_fp8_linear(getattr(ff.net[0], "proj", None))


# ---- LTX-Video block -------------------------------------------------------------------------


def _ltx_video_block_forward(
    self,
    hidden_states: torch.Tensor,
    encoder_hidden_states: torch.Tensor,
    temb: torch.Tensor,
    image_rotary_emb: Optional[tuple] = None,
    encoder_attention_mask: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """diffusers 0.42.1 `LTXVideoTransformerBlock.forward`, same math, fused norms."""
    batch_size = hidden_states.size(0)

    num_ada_params = self.scale_shift_table.shape[0]
    ada_values = self.scale_shift_table[None, None].to(temb.device) + temb.reshape(
        batch_size, temb.size(1), num_ada_params, -1
    )
    shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = ada_values.unbind(dim=2)

    # norm1(h) * (1 + scale_msa) + shift_msa
    _, norm_hidden_states = _norm_mod(
        self.norm1, hidden_states, None, scale_msa, shift_msa, fp8=_attn_prequant(self.attn1)
    )
    attn_hidden_states = self.attn1(
        hidden_states=norm_hidden_states,
        encoder_hidden_states=None,
        image_rotary_emb=image_rotary_emb,
    )
    # h + attn * gate_msa feeds attn2 directly (no norm in between): plain PyTorch
    hidden_states = hidden_states + attn_hidden_states * gate_msa

    attn_hidden_states = self.attn2(
        hidden_states,
        encoder_hidden_states=encoder_hidden_states,
        image_rotary_emb=None,
        attention_mask=encoder_attention_mask,
    )
    # h + attn2, then norm2(h) * (1 + scale_mlp) + shift_mlp: one pass
    hidden_states, norm_hidden_states = _norm_mod(
        self.norm2, hidden_states, (attn_hidden_states, None), scale_mlp, shift_mlp,
        fp8=_ff_prequant(self.ff),
    )

    ff_output = self.ff(norm_hidden_states)
    hidden_states = hidden_states + ff_output * gate_mlp

    return hidden_states


# ---- LTX-2 block -----------------------------------------------------------------------------


def _ltx2_block_forward(
    self,
    hidden_states: torch.Tensor,
    audio_hidden_states: torch.Tensor,
    encoder_hidden_states: torch.Tensor,
    audio_encoder_hidden_states: torch.Tensor,
    temb: torch.Tensor,
    temb_audio: torch.Tensor,
    temb_ca_scale_shift: torch.Tensor,
    temb_ca_audio_scale_shift: torch.Tensor,
    temb_ca_gate: torch.Tensor,
    temb_ca_audio_gate: torch.Tensor,
    temb_prompt: Optional[torch.Tensor] = None,
    temb_prompt_audio: Optional[torch.Tensor] = None,
    video_rotary_emb: Optional[tuple] = None,
    audio_rotary_emb: Optional[tuple] = None,
    ca_video_rotary_emb: Optional[tuple] = None,
    ca_audio_rotary_emb: Optional[tuple] = None,
    encoder_attention_mask: Optional[torch.Tensor] = None,
    audio_encoder_attention_mask: Optional[torch.Tensor] = None,
    self_attention_mask: Optional[torch.Tensor] = None,
    audio_self_attention_mask: Optional[torch.Tensor] = None,
    a2v_cross_attention_mask: Optional[torch.Tensor] = None,
    v2a_cross_attention_mask: Optional[torch.Tensor] = None,
    use_a2v_cross_attention: bool = True,
    use_v2a_cross_attention: bool = True,
    perturbation_mask: Optional[torch.Tensor] = None,
    all_perturbed: Optional[bool] = None,
) -> torch.Tensor:
    """diffusers 0.42.1 `LTX2VideoTransformerBlock.forward`, same math, fused norms.

    Each gated residual `h + y * gate` is kept pending until the next norm of the same stream,
    which applies it in the same pass (`gated_residual_adaln_rms_norm`); the video and audio
    streams are independent between their cross-modal attentions, so the order of the
    (independent) steps is the eager one."""
    batch_size = hidden_states.size(0)

    # 1. Video and Audio Self-Attention
    video_ada_params = self.get_mod_params(self.scale_shift_table, temb, batch_size)
    shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = video_ada_params[:6]
    shift_text_q = scale_text_q = gate_text_q = None
    if self.video_cross_attn_adaln:
        shift_text_q, scale_text_q, gate_text_q = video_ada_params[6:9]

    _, norm_hidden_states = _norm_mod(
        self.norm1, hidden_states, None, scale_msa, shift_msa, fp8=_attn_prequant(self.attn1)
    )
    video_self_attn_args = {
        "hidden_states": norm_hidden_states,
        "encoder_hidden_states": None,
        "query_rotary_emb": video_rotary_emb,
        "attention_mask": self_attention_mask,
    }
    if self.perturbed_attn:
        video_self_attn_args["perturbation_mask"] = perturbation_mask
        video_self_attn_args["all_perturbed"] = all_perturbed
    attn_hidden_states = self.attn1(**video_self_attn_args)
    v_pending = (attn_hidden_states, gate_msa)  # h + attn * gate_msa, applied by norm2

    audio_ada_params = self.get_mod_params(self.audio_scale_shift_table, temb_audio, batch_size)
    audio_shift_msa, audio_scale_msa, audio_gate_msa, audio_shift_mlp, audio_scale_mlp, audio_gate_mlp = (
        audio_ada_params[:6]
    )
    audio_shift_text_q = audio_scale_text_q = audio_gate_text_q = None
    if self.audio_cross_attn_adaln:
        audio_shift_text_q, audio_scale_text_q, audio_gate_text_q = audio_ada_params[6:9]

    _, norm_audio_hidden_states = _norm_mod(
        self.audio_norm1, audio_hidden_states, None, audio_scale_msa, audio_shift_msa,
        fp8=_attn_prequant(self.audio_attn1),
    )
    audio_self_attn_args = {
        "hidden_states": norm_audio_hidden_states,
        "encoder_hidden_states": None,
        "query_rotary_emb": audio_rotary_emb,
        "attention_mask": audio_self_attention_mask,
    }
    if self.perturbed_attn:
        audio_self_attn_args["perturbation_mask"] = perturbation_mask
        audio_self_attn_args["all_perturbed"] = all_perturbed
    attn_audio_hidden_states = self.audio_attn1(**audio_self_attn_args)
    a_pending = (attn_audio_hidden_states, audio_gate_msa)

    # 2. Cross-attention with the text embeddings
    if self.cross_attn_adaln:
        if temb_prompt is not None:
            shift_text_kv, scale_text_kv = self.get_mod_params(self.prompt_scale_shift_table, temb_prompt, batch_size)
        else:
            shift_text_kv, scale_text_kv = (
                self.prompt_scale_shift_table[None, None]
                .to(device=hidden_states.device, dtype=hidden_states.dtype)
                .unbind(dim=2)
            )
        if temb_prompt_audio is not None:
            audio_shift_text_kv, audio_scale_text_kv = self.get_mod_params(
                self.audio_prompt_scale_shift_table, temb_prompt_audio, batch_size
            )
        else:
            audio_shift_text_kv, audio_scale_text_kv = (
                self.audio_prompt_scale_shift_table[None, None]
                .to(device=audio_hidden_states.device, dtype=audio_hidden_states.dtype)
                .unbind(dim=2)
            )

    # 2.1. Video-Text
    hidden_states, norm_hidden_states = _norm_mod(self.norm2, hidden_states, v_pending, scale_text_q, shift_text_q)
    if self.cross_attn_adaln:
        encoder_hidden_states = encoder_hidden_states * (1 + scale_text_kv) + shift_text_kv
    attn_hidden_states = self.attn2(
        norm_hidden_states,
        encoder_hidden_states=encoder_hidden_states,
        query_rotary_emb=None,
        attention_mask=encoder_attention_mask,
    )
    v_pending = (attn_hidden_states, gate_text_q)

    # 2.2. Audio-Text
    audio_hidden_states, norm_audio_hidden_states = _norm_mod(
        self.audio_norm2, audio_hidden_states, a_pending, audio_scale_text_q, audio_shift_text_q
    )
    if self.cross_attn_adaln:
        audio_encoder_hidden_states = audio_encoder_hidden_states * (1 + audio_scale_text_kv) + audio_shift_text_kv
    attn_audio_hidden_states = self.audio_attn2(
        norm_audio_hidden_states,
        encoder_hidden_states=audio_encoder_hidden_states,
        query_rotary_emb=None,
        attention_mask=audio_encoder_attention_mask,
    )
    a_pending = (attn_audio_hidden_states, audio_gate_text_q)

    # 3. Audio-to-Video (a2v) and Video-to-Audio (v2a) cross-attention
    if use_a2v_cross_attention or use_v2a_cross_attention:
        video_per_layer_ca_scale_shift = self.video_a2v_cross_attn_scale_shift_table[:4, :]
        video_per_layer_ca_gate = self.video_a2v_cross_attn_scale_shift_table[4:, :]
        video_ca_ada_params = self.get_mod_params(video_per_layer_ca_scale_shift, temb_ca_scale_shift, batch_size)
        video_ca_gate_param = self.get_mod_params(video_per_layer_ca_gate, temb_ca_gate, batch_size)
        video_a2v_ca_scale, video_a2v_ca_shift, video_v2a_ca_scale, video_v2a_ca_shift = video_ca_ada_params
        a2v_gate = video_ca_gate_param[0].squeeze(2)

        audio_per_layer_ca_scale_shift = self.audio_a2v_cross_attn_scale_shift_table[:4, :]
        audio_per_layer_ca_gate = self.audio_a2v_cross_attn_scale_shift_table[4:, :]
        audio_ca_ada_params = self.get_mod_params(
            audio_per_layer_ca_scale_shift, temb_ca_audio_scale_shift, batch_size
        )
        audio_ca_gate_param = self.get_mod_params(audio_per_layer_ca_gate, temb_ca_audio_gate, batch_size)
        audio_a2v_ca_scale, audio_a2v_ca_shift, audio_v2a_ca_scale, audio_v2a_ca_shift = audio_ca_ada_params
        v2a_gate = audio_ca_gate_param[0].squeeze(2)

        # both attentions read norm(h) of the streams as they are now (before either residual):
        # the first modulation flushes the pending residual, the second re-reads the new h
        mods_v, mods_a = [], []
        if use_a2v_cross_attention:
            mods_v.append((video_a2v_ca_scale.squeeze(2), video_a2v_ca_shift.squeeze(2)))
            mods_a.append((audio_a2v_ca_scale.squeeze(2), audio_a2v_ca_shift.squeeze(2)))
        if use_v2a_cross_attention:
            mods_v.append((video_v2a_ca_scale.squeeze(2), video_v2a_ca_shift.squeeze(2)))
            mods_a.append((audio_v2a_ca_scale.squeeze(2), audio_v2a_ca_shift.squeeze(2)))
        mod_v, mod_a = [], []
        for k, (sc, sh) in enumerate(mods_v):
            hidden_states, y = _norm_mod(
                self.audio_to_video_norm, hidden_states, v_pending if k == 0 else None, sc, sh
            )
            mod_v.append(y)
        for k, (sc, sh) in enumerate(mods_a):
            audio_hidden_states, y = _norm_mod(
                self.video_to_audio_norm, audio_hidden_states, a_pending if k == 0 else None, sc, sh
            )
            mod_a.append(y)
        v_pending = a_pending = None

        if use_a2v_cross_attention:
            a2v_attn_hidden_states = self.audio_to_video_attn(
                mod_v[0],
                encoder_hidden_states=mod_a[0],
                query_rotary_emb=ca_video_rotary_emb,
                key_rotary_emb=ca_audio_rotary_emb,
                attention_mask=a2v_cross_attention_mask,
            )
            v_pending = (a2v_attn_hidden_states, a2v_gate)

        if use_v2a_cross_attention:
            v2a_attn_hidden_states = self.video_to_audio_attn(
                mod_a[-1],
                encoder_hidden_states=mod_v[-1],
                query_rotary_emb=ca_audio_rotary_emb,
                key_rotary_emb=ca_video_rotary_emb,
                attention_mask=v2a_cross_attention_mask,
            )
            a_pending = (v2a_attn_hidden_states, v2a_gate)

    # 4. Feedforward
    hidden_states, norm_hidden_states = _norm_mod(
        self.norm3, hidden_states, v_pending, scale_mlp, shift_mlp, fp8=_ff_prequant(self.ff)
    )
    ff_output = self.ff(norm_hidden_states)
    hidden_states = hidden_states + ff_output * gate_mlp

    audio_hidden_states, norm_audio_hidden_states = _norm_mod(
        self.audio_norm3, audio_hidden_states, a_pending, audio_scale_mlp, audio_shift_mlp,
        fp8=_ff_prequant(self.audio_ff),
    )
    audio_ff_output = self.audio_ff(norm_audio_hidden_states)
    audio_hidden_states = audio_hidden_states + audio_ff_output * audio_gate_mlp

    return hidden_states, audio_hidden_states


# ---- feed-forward ----------------------------------------------------------------------------


def _ff_forward(self, hidden_states: torch.Tensor, *args, **kwargs) -> torch.Tensor:
    """diffusers `FeedForward.forward` for net = [GELU(tanh), Dropout, Linear(, ...)]: the first
    projection, then tanh-GELU in place (`gelu_tanh`), then the rest of `net` unchanged. The
    deprecated `scale` argument is ignored, as diffusers does."""
    act = self.net[0]
    hidden_states = act.proj(hidden_states)
    hidden_states = gelu_tanh(hidden_states, out=hidden_states)
    for module in self.net[1:]:
        hidden_states = module(hidden_states)
    return hidden_states


def _ff_supported(ff) -> bool:
    net = getattr(ff, "net", None)
    if net is None or len(net) < 1:
        return False
    act = net[0]
    return (
        type(act).__name__ == "GELU"
        and getattr(act, "approximate", None) == "tanh"
        and isinstance(getattr(act, "proj", None), torch.nn.Module)
    )


# ---- block recognition -----------------------------------------------------------------------


_BLOCKS = {
    "LTXVideoTransformerBlock": (_ltx_video_block_forward, ("norm1", "norm2")),
    "LTX2VideoTransformerBlock": (
        _ltx2_block_forward,
        ("norm1", "norm2", "norm3", "audio_norm1", "audio_norm2", "audio_norm3",
         "audio_to_video_norm", "video_to_audio_norm"),
    ),
}


def _rms_norm_supported(n) -> bool:
    """diffusers' RMSNorm (weight optional, no bias) over one trailing dimension."""
    return (
        type(n).__name__ == "RMSNorm"
        and not isinstance(n, torch.nn.RMSNorm)
        and isinstance(getattr(n, "eps", None), float)
        and getattr(n, "bias", None) is None
        and len(getattr(n, "dim", (0, 0))) == 1
    )


def _patch_forward(name: str, module, fn, counts, kind: str) -> None:
    if getattr(module, _PATCHED, False):
        return
    if _has_hooks(module):
        logger.info("ltx_kernels: %s: has offload/cache hooks (apply optimize() before them), left as is", name)
        counts["skipped"] += 1
        return
    module.forward = fn.__get__(module, type(module))
    setattr(module, _PATCHED, True)
    counts[kind] += 1


def _find_transformer(obj):
    for cand in (obj, getattr(obj, "transformer", None)):
        cand = getattr(cand, "_orig_mod", cand)  # torch.compile(model) wrapper
        if cand is not None and type(cand).__name__ in _TRANSFORMERS:
            return cand
    return None


def _quantize(transformer, fmt: str) -> None:
    if getattr(transformer, "_ltx_kernels_quantization", None) is not None:
        if transformer._ltx_kernels_quantization != fmt:
            raise ValueError(
                "ltx_kernels.integrations.diffusers.optimize: the transformer is already quantized "
                f"to {transformer._ltx_kernels_quantization} (got quantization={fmt!r})"
            )
        return
    try:
        from .. import quantization
    except ImportError as e:
        raise RuntimeError(
            "ltx_kernels.integrations.diffusers.optimize: quantization needs "
            f"ltx_kernels.quantization, which this build does not have ({e})"
        ) from e
    # LTX-2's policy: linears inside transformer blocks; gate logits, AdaLN tables, patchify,
    # caption projection and proj_out stay in high precision (quantize_linears' default policy)
    quantization.quantize_linears(transformer, fmt)
    transformer._ltx_kernels_quantization = fmt


def optimize(model_or_pipeline, quantization: Optional[str] = None):
    """Install the fused kernels into an LTX-Video / LTX-2 transformer (or a pipeline's
    `.transformer`) in place and return the same object. See the module docstring."""
    if quantization in ("none", ""):
        quantization = None
    if quantization is not None and quantization not in _FORMATS:
        raise ValueError(
            "ltx_kernels.integrations.diffusers.optimize: quantization must be None, 'fp8', 'fp6' "
            f"or 'nvfp4' (got {quantization!r})"
        )
    transformer = _find_transformer(model_or_pipeline)
    if transformer is None:
        logger.info(
            "ltx_kernels: %s is not (and has no .transformer that is) one of %s, left as is",
            type(model_or_pipeline).__name__, ", ".join(_TRANSFORMERS),
        )
        return model_or_pipeline

    if quantization is not None:
        _quantize(transformer, quantization)

    counts = {"blocks": 0, "processors": 0, "ff": 0, "skipped": 0}
    for name, module in transformer.named_modules():
        cls = type(module).__name__
        if cls in _PROCESSORS:
            _install_processor(name, module, counts)
        elif cls == "FeedForward":
            if _ff_supported(module):
                _patch_forward(name, module, _ff_forward, counts, "ff")
            elif not getattr(module, _PATCHED, False):
                logger.info("ltx_kernels: %s: feed-forward activation is not GELU(tanh), left as is", name)
                counts["skipped"] += 1
        elif cls in _BLOCKS:
            fn, norms = _BLOCKS[cls]
            if all(_rms_norm_supported(getattr(module, n, None)) for n in norms):
                _patch_forward(name, module, fn, counts, "blocks")
            elif not getattr(module, _PATCHED, False):
                logger.info("ltx_kernels: %s: norms are not weight-only RMSNorm, left as is", name)
                counts["skipped"] += 1
        elif cls.endswith("TransformerBlock") and not getattr(module, _PATCHED, False):
            logger.info("ltx_kernels: %s: block class %s not supported, left as is", name, cls)
            counts["skipped"] += 1
    logger.info(
        "ltx_kernels: optimized %s: %d blocks, %d attention processors, %d feed-forwards "
        "(%d modules left as is, quantization=%s)",
        type(transformer).__name__, counts["blocks"], counts["processors"], counts["ff"],
        counts["skipped"], quantization,
    )
    return model_or_pipeline
