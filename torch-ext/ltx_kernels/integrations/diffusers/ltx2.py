"""diffusers' `LTX2VideoTransformerBlock.forward` (video and audio streams) on the fused norms."""

from typing import Optional

import torch

from .fused import attn_prequant, ff_gated_out, ff_prequant, norm_mod

# the block's norms, all of which must be weight-only RMSNorm for the fused forward
NORMS = (
    "norm1", "norm2", "norm3", "audio_norm1", "audio_norm2", "audio_norm3",
    "audio_to_video_norm", "video_to_audio_norm",
)


def _self_attention(block, attn, hidden_states, rotary_emb, attention_mask, perturbation_mask, all_perturbed):
    """One stream's self-attention call as the block makes it (perturbation arguments only on
    blocks built with perturbed attention)."""
    kwargs = {
        "hidden_states": hidden_states,
        "encoder_hidden_states": None,
        "query_rotary_emb": rotary_emb,
        "attention_mask": attention_mask,
    }
    if block.perturbed_attn:
        kwargs["perturbation_mask"] = perturbation_mask
        kwargs["all_perturbed"] = all_perturbed
    return attn(**kwargs)


def _text_attention(block, norm, attn, hidden_states, pending, scale_q, shift_q, encoder_hidden_states, scale_kv,
                    shift_kv, attention_mask):
    """One stream's prompt cross-attention: the pending gated residual and the norm (norm_mod), the
    prompt modulated when the block has cross-attention AdaLN, then the attention. Returns
    (hidden_states with the residual applied, the attention's output)."""
    hidden_states, normed = norm_mod(norm, hidden_states, pending, scale_q, shift_q)
    if block.cross_attn_adaln:
        encoder_hidden_states = encoder_hidden_states * (1 + scale_kv) + shift_kv
    out = attn(normed, encoder_hidden_states=encoder_hidden_states, query_rotary_emb=None,
               attention_mask=attention_mask)
    return hidden_states, out


def block_forward(
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

    _, norm_hidden_states = norm_mod(
        self.norm1, hidden_states, None, scale_msa, shift_msa, fp8=attn_prequant(self.attn1)
    )
    attn_hidden_states = _self_attention(self, self.attn1, norm_hidden_states, video_rotary_emb, self_attention_mask,
                                         perturbation_mask, all_perturbed)
    v_pending = (attn_hidden_states, gate_msa)  # h + attn * gate_msa, applied by norm2

    audio_ada_params = self.get_mod_params(self.audio_scale_shift_table, temb_audio, batch_size)
    audio_shift_msa, audio_scale_msa, audio_gate_msa, audio_shift_mlp, audio_scale_mlp, audio_gate_mlp = (
        audio_ada_params[:6]
    )
    audio_shift_text_q = audio_scale_text_q = audio_gate_text_q = None
    if self.audio_cross_attn_adaln:
        audio_shift_text_q, audio_scale_text_q, audio_gate_text_q = audio_ada_params[6:9]

    _, norm_audio_hidden_states = norm_mod(
        self.audio_norm1, audio_hidden_states, None, audio_scale_msa, audio_shift_msa,
        fp8=attn_prequant(self.audio_attn1),
    )
    attn_audio_hidden_states = _self_attention(self, self.audio_attn1, norm_audio_hidden_states, audio_rotary_emb,
                                               audio_self_attention_mask, perturbation_mask, all_perturbed)
    a_pending = (attn_audio_hidden_states, audio_gate_msa)

    # 2. Cross-attention with the text embeddings
    shift_text_kv = scale_text_kv = audio_shift_text_kv = audio_scale_text_kv = None
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
    hidden_states, attn_hidden_states = _text_attention(
        self, self.norm2, self.attn2, hidden_states, v_pending, scale_text_q, shift_text_q, encoder_hidden_states,
        scale_text_kv, shift_text_kv, encoder_attention_mask,
    )
    v_pending = (attn_hidden_states, gate_text_q)

    # 2.2. Audio-Text
    audio_hidden_states, attn_audio_hidden_states = _text_attention(
        self, self.audio_norm2, self.audio_attn2, audio_hidden_states, a_pending, audio_scale_text_q,
        audio_shift_text_q, audio_encoder_hidden_states, audio_scale_text_kv, audio_shift_text_kv,
        audio_encoder_attention_mask,
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
            hidden_states, y = norm_mod(
                self.audio_to_video_norm, hidden_states, v_pending if k == 0 else None, sc, sh
            )
            mod_v.append(y)
        for k, (sc, sh) in enumerate(mods_a):
            audio_hidden_states, y = norm_mod(
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
    hidden_states, norm_hidden_states = norm_mod(
        self.norm3, hidden_states, v_pending, scale_mlp, shift_mlp, fp8=ff_prequant(self.ff)
    )
    if ff_gated_out(self.ff):  # h + ff * gate_mlp in the down projection's FP8 GEMM epilogue
        hidden_states = self.ff(norm_hidden_states, residual=hidden_states, gate=gate_mlp)
    else:
        ff_output = self.ff(norm_hidden_states)
        hidden_states = hidden_states + ff_output * gate_mlp

    audio_hidden_states, norm_audio_hidden_states = norm_mod(
        self.audio_norm3, audio_hidden_states, a_pending, audio_scale_mlp, audio_shift_mlp,
        fp8=ff_prequant(self.audio_ff),
    )
    if ff_gated_out(self.audio_ff):
        audio_hidden_states = self.audio_ff(norm_audio_hidden_states, residual=audio_hidden_states,
                                            gate=audio_gate_mlp)
    else:
        audio_ff_output = self.audio_ff(norm_audio_hidden_states)
        audio_hidden_states = audio_hidden_states + audio_ff_output * audio_gate_mlp

    return hidden_states, audio_hidden_states
