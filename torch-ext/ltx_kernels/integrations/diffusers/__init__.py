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
  `dispatch_attention_fn` (SDPA by default, or the backend set on the processor; with
  `attention="bf16" | "fp8"` our own attention kernel instead), LTX-2's gate
  `x * 2 * sigmoid(logits)` via `gated_attention`, then `to_out`;
- block forwards (`LTXVideoTransformerBlock`, `LTX2VideoTransformerBlock`), same signatures as
  diffusers 0.42.1: `norm(x) * (1 + scale) + shift` -> `adaln_rms_norm`; a gated residual
  `h + y * gate` directly followed by the next norm -> `gated_residual_adaln_rms_norm` (gate 1 /
  scale 0 / shift 0 where the model has none);
- `FeedForward` whose activation is `GELU(approximate="tanh")`: the projection, then `gelu_tanh`
  in place (with `fuse_gemm_epilogues=True`: the tanh-GELU in the up projection's GEMM epilogue);
- LTX-Video's rotary embedding (`LTXVideoRotaryPosEmbed`): where every batch row's cos / sin
  are the same by construction (coordinates from the latent grid, scalar interpolation scales)
  it computes and returns one [1, S, C] table pair that broadcasts over the batch instead of B
  equal ones (with per-sample `video_coords` it is unchanged).

Anything else (unknown block or processor classes, norms with a bias, modules that carry
accelerate hooks) is left untouched with one log line on logger "ltx_kernels".

diffusers' hooks compose with `optimize` in either order (`hooks` module): caches
(`transformer.enable_cache(...)`), group offloading and layerwise casting. A block that already
carries hooks gets the fused forward beneath them, so a cache still skips it and
`disable_cache()` leaves it fused; norm weights the fused kernels read directly are read through
the norm's own hooks (leaf-level offloading). Quantizing a model that already carries layerwise
casting or group offloading hooks is refused (ValueError): quantize first.
Applying `optimize` twice is harmless. With `quantization="fp8" | "fp8_rowwise" | "fp6" |
"nvfp4"` the linears inside the transformer blocks are replaced by
`ltx_kernels.quantization.quantize_linears` (LTX-2's policy); where a fused norm feeds blockwise
FP8 linears ("fp8") directly (to_q/to_k/to_v after norm1 +
AdaLN, the feed-forward's first projection after norm2/norm3) the norm emits the FP8 codes and
scales itself (`out_dtype=torch.float8_e4m3fn`) when this build supports it. With "fp8" and
"fp8_rowwise" each attention module's to_q / to_k / to_v also run as one GEMM
(`processors.FusedProjections`: a child module whose rows the original layers' weights become
views of, so nothing is held twice and state_dict is unchanged).

LTX-2's video VAE decoder (neighborhood attention) is covered by `vae.apply_to(vae_model)`
(`ltx_kernels.integrations.diffusers.vae`).

Modules: `processors` (attention processors), `ltx_video` and `ltx2` (the block forwards),
`fused` (the fused norm / feed-forward pieces both blocks use), `discovery` (what can be
replaced, quantization), `vae` (the VAE decoder's neighborhood attention).
"""

from typing import Optional

from . import ltx2, ltx_video, vae  # noqa: F401 (vae: lkd.vae.apply_to)
from ._common import FP8_OUT, PATCHED, logger
from .discovery import FORMATS, TRANSFORMERS, find_transformer, patch_forward, quantize, rms_norm_supported
from .fused import ff_configure, ff_forward, ff_supported
from .processors import PROCESSORS, LTX2FusedAttnProcessor, LTXVideoFusedAttnProcessor, install_processor

__all__ = ["optimize", "LTXVideoFusedAttnProcessor", "LTX2FusedAttnProcessor", "vae"]

# which fused norms of this build can emit FP8 (q, scales) directly (name -> takes scale_layout)
_FP8_OUT = FP8_OUT

# block class -> (our forward, the norms that must be weight-only RMSNorm for it)
_BLOCKS = {
    "LTXVideoTransformerBlock": (ltx_video.block_forward, ltx_video.NORMS),
    "LTX2VideoTransformerBlock": (ltx2.block_forward, ltx2.NORMS),
}


def optimize(model_or_pipeline, quantization: Optional[str] = None, attention: Optional[str] = None,
             fuse_gemm_epilogues: bool = False):
    """Install the fused kernels into an LTX-Video / LTX-2 transformer (or a pipeline's
    `.transformer`) in place and return the same object. See the module docstring.

    attention: None (diffusers' attention dispatcher, SDPA by default), "bf16"
    (`ltx_kernels.attention` in the model's dtype: the sm_90 kernel on H100/H200) or "fp8"
    (the FP8 kernel; ~1e-2 relative error per attention call; on self-attention with a rotation
    its operands come from the passes that produce q, k and v: norm + RoPE with FP8 output for q,
    `attention_keys_fp8` for k, `attention_values_fp8` for v; elsewhere from
    `quantize_attention_fp8`).
    End to end (LTX-Video under torch.compile, benchmarks/results/h200/e2e_ltx_video.json) "bf16"
    is a small gain over SDPA; "fp8" is SDPA there: at 2688 tokens its rule
    (_compile_policy.use_kernel_attention: >= 8192 keys, since the quantization pass costs more
    than the kernel saves below that) leaves every call to the dispatcher. Considered for the
    self- and cross-attention of every LTX attention module whose mask is per key (padding of the
    prompt); others keep the dispatcher. Under diffusers' context parallelism in
    its Ulysses form (`enable_parallelism(config=ContextParallelConfig(ulysses_degree=N))`, before
    or after optimize()) the processors run Ulysses with our all-to-all around the kernel; ring
    attention stays with diffusers (docs/integrations.md, "Context parallelism").

    fuse_gemm_epilogues: apply the feed-forward's tanh-GELU (and, with FP8 linears, the down
    projection's input quantization) in the up projection's GEMM epilogue (our sm_90a GEMM). Off by
    default: at LTX-Video's feed-forward shape that GEMM is slower than the plain GEMM followed by
    the separate activation (the fp8_gemm+gelu rows of benchmarks/results/h200/gemm.json)."""
    if quantization in ("none", ""):
        quantization = None
    if attention in ("none", ""):
        attention = None
    if attention not in (None, "bf16", "fp8"):
        raise ValueError(
            "ltx_kernels.integrations.diffusers.optimize: attention must be None, 'bf16' or 'fp8' "
            f"(got {attention!r})"
        )
    if quantization is not None and quantization not in FORMATS:
        raise ValueError(
            "ltx_kernels.integrations.diffusers.optimize: quantization must be None, 'fp8', 'fp8_rowwise', "
            f"'fp6' or 'nvfp4' (got {quantization!r})"
        )
    transformer = find_transformer(model_or_pipeline)
    if transformer is None:
        logger.info(
            "ltx_kernels: %s is not (and has no .transformer that is) one of %s, left as is",
            type(model_or_pipeline).__name__, ", ".join(TRANSFORMERS),
        )
        return model_or_pipeline

    if quantization is not None:
        quantize(transformer, quantization)

    counts = {"blocks": 0, "processors": 0, "ff": 0, "rope": 0, "skipped": 0}
    for name, module in transformer.named_modules():
        cls = type(module).__name__
        if cls in PROCESSORS:
            install_processor(name, module, counts, attention)
        elif cls == "FeedForward":
            if ff_supported(module):
                patch_forward(name, module, ff_forward, counts, "ff")
                if getattr(module, PATCHED, False):
                    ff_configure(module, fuse_gemm_epilogues)
            elif not getattr(module, PATCHED, False):
                logger.info("ltx_kernels: %s: feed-forward activation is not GELU(tanh), left as is", name)
                counts["skipped"] += 1
        elif cls in _BLOCKS:
            fn, norms = _BLOCKS[cls]
            if all(rms_norm_supported(getattr(module, n, None)) for n in norms):
                patch_forward(name, module, fn, counts, "blocks")
            elif not getattr(module, PATCHED, False):
                logger.info("ltx_kernels: %s: norms are not weight-only RMSNorm, left as is", name)
                counts["skipped"] += 1
        elif cls == "LTXVideoRotaryPosEmbed":
            patch_forward(name, module, ltx_video.rope_forward, counts, "rope")
        elif cls.endswith("TransformerBlock") and not getattr(module, PATCHED, False):
            logger.info("ltx_kernels: %s: block class %s not supported, left as is", name, cls)
            counts["skipped"] += 1
    logger.info(
        "ltx_kernels: optimized %s: %d blocks, %d attention processors, %d feed-forwards "
        "(%d modules left as is, quantization=%s, attention=%s)",
        type(transformer).__name__, counts["blocks"], counts["processors"], counts["ff"],
        counts["skipped"], quantization, attention,
    )
    return model_or_pipeline
