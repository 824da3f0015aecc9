"""End-to-end LTX-2 (audio + video) transformer benchmark: the denoising loop only.

  python benchmarks/e2e_ltx2.py [same flags as e2e_ltx_video.py] [--gated-attn] [--rope-type split]

Model: diffusers' LTX2VideoTransformer3DModel with its diffusers 0.42.1 defaults (the LTX-2
19B transformer: 48 layers, video 32 heads x 128 = 4096, audio 32 x 64 = 2048, caption 3840 from
the Gemma connector, text cross-attention 4096 / 2048) and split RoPE (LTX-2's default,
docs/semantics.md, section "Norms, RoPE and DiT glue"; `--rope-type interleaved` for the constructor's default). `--gated-attn` adds
LTX-2.3's per-head attention gates and prompt modulation. Random weights unless `--checkpoint`.
No VAEs, no text encoder: random video latents of the real shape (VAE 8x / 32x, 128 channels),
audio latents for the clip's duration (16 kHz, hop 160, 4x temporal compression -> 25 latents/s,
8 channels x 16 mel bins = 128), 1024 prompt tokens per stream, CFG doubling the batch, Euler
flow matching over `--steps` sigmas. Timing, memory and error as in e2e_ltx_video.py.

The 19B model in bf16 holds ~38 GB; one step at 49x512x768 with CFG is ~200 TFLOP, so on an
H200 prefer `--compare --steps 6 --warmup-iterations 1` (a few minutes with the compiles).
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import e2e_ltx_video as common  # noqa: E402

NAME = "ltx-2"
CONFIG_SOURCE = ("LTX-2 19B transformer: diffusers 0.42.1 LTX2VideoTransformer3DModel defaults "
                 "(48 layers, video 32x128, audio 32x64, caption 3840) with split RoPE")
REAL = dict(in_channels=128, out_channels=128, num_attention_heads=32, attention_head_dim=128,
            cross_attention_dim=4096, audio_in_channels=128, audio_out_channels=128, audio_num_attention_heads=32,
            audio_attention_head_dim=64, audio_cross_attention_dim=2048, num_layers=48, caption_channels=3840,
            rope_type="split")
TINY = dict(REAL, in_channels=16, out_channels=16, num_attention_heads=2, attention_head_dim=16,
            cross_attention_dim=32, audio_in_channels=8, audio_out_channels=8, audio_num_attention_heads=2,
            audio_attention_head_dim=8, audio_cross_attention_dim=16, num_layers=2, caption_channels=24)
VAE_T, VAE_S = 8, 32
FRAME_RATE = 24.0
AUDIO_LATENTS_PER_S = 16000 / 160 / 4
TEXT_TOKENS = 1024


def parser():
    p = common.base_parser(__doc__.splitlines()[0], "CPU-sized config (2 layers) for tests")
    p.add_argument("--rope-type", choices=["split", "interleaved"], default="split")
    p.add_argument("--gated-attn", action="store_true", help="LTX-2.3-style gated attention + prompt modulation")
    return p


def build_model(args, device, dtype):
    from diffusers import LTX2VideoTransformer3DModel

    if args.tiny:
        args.num_frames, args.height, args.width = min(args.num_frames, 17), min(args.height, 96), min(args.width, 128)
    cfg = dict(TINY if args.tiny else REAL, rope_type=args.rope_type)
    if args.gated_attn:
        cfg.update(gated_attn=True, audio_gated_attn=True, cross_attn_mod=True, audio_cross_attn_mod=True)
    return common.load_or_random(LTX2VideoTransformer3DModel, cfg, args, device, dtype)


class LTX2Problem:
    def __init__(self, args, model, device, dtype):
        cfg = model.config
        self.audio_tokens = max(1, round(args.num_frames / FRAME_RATE * AUDIO_LATENTS_PER_S))
        b = args.batch_size
        text = 16 if args.tiny else TEXT_TOKENS
        g = torch.Generator(device="cpu").manual_seed(args.seed)
        lat = common.packed_video_latents(self, args, cfg.in_channels, g, VAE_T, VAE_S)
        alat = torch.randn(b, self.audio_tokens, cfg.audio_in_channels, generator=g)
        self.latents0 = (lat.to(device), alat.to(device))
        two = args.guidance_scale > 1

        def prompts():
            cond = torch.randn(b, text, cfg.caption_channels, generator=g) * 0.2
            uncond = torch.randn(b, text, cfg.caption_channels, generator=g) * 0.2
            return (torch.cat([uncond, cond]) if two else cond).to(device, dtype)

        self.enc, self.audio_enc = prompts(), prompts()
        self.mask = torch.ones(self.enc.shape[:2], device=device, dtype=dtype)  # connector output: all valid
        self.dtype = dtype
        self.gated = bool(cfg.cross_attn_mod)

    def velocity(self, model, lat, sigma, guidance):
        x, a = (t.to(self.dtype) for t in lat)
        if guidance > 1:
            x, a = torch.cat([x, x]), torch.cat([a, a])
        t = torch.full((x.shape[0],), sigma * 1000.0, device=x.device)
        v, va = model(
            hidden_states=x, audio_hidden_states=a, encoder_hidden_states=self.enc,
            audio_encoder_hidden_states=self.audio_enc, timestep=t, sigma=(t / 1000.0) if self.gated else None,
            encoder_attention_mask=self.mask, audio_encoder_attention_mask=self.mask, num_frames=self.f,
            height=self.h, width=self.w, fps=FRAME_RATE, audio_num_frames=self.audio_tokens, return_dict=False,
        )
        return common.cfg_combine(v, guidance), common.cfg_combine(va, guidance)


def make_problem(args, model, device, dtype):
    return LTX2Problem(args, model, device, dtype)


def describe(problem, args):
    return (f"{args.num_frames}x{args.height}x{args.width} -> latent {problem.f}x{problem.h}x{problem.w} "
            f"= {problem.tokens} video + {problem.audio_tokens} audio tokens, batch {args.batch_size}")


def main(argv=None):
    return common.common_main(argv, common.spec_of(globals()))


if __name__ == "__main__":
    sys.exit(main())
