"""Finding what `optimize` can change: the transformer inside a pipeline, the norms the fused
block forwards take, and swapping a forward in place; plus quantizing the transformer's linears."""

import torch

from ._common import PATCHED, logger
from .hooks import check_quantization_compatible, install_forward

FORMATS = ("fp8", "fp8_rowwise", "fp6", "nvfp4")
TRANSFORMERS = ("LTXVideoTransformer3DModel", "LTX2VideoTransformer3DModel")


def rms_norm_supported(n) -> bool:
    """diffusers' RMSNorm (weight optional, no bias) over one trailing dimension."""
    return (
        type(n).__name__ == "RMSNorm"
        and not isinstance(n, torch.nn.RMSNorm)
        and isinstance(getattr(n, "eps", None), float)
        and getattr(n, "bias", None) is None
        and len(getattr(n, "dim", (0, 0))) == 1
    )


def patch_forward(name: str, module, fn, counts, kind: str) -> None:
    if getattr(module, PATCHED, False):
        return
    why = install_forward(module, fn.__get__(module, type(module)))
    if why is not None:
        logger.info("ltx_kernels: %s: %s, left as is", name, why)
        counts["skipped"] += 1
        return
    setattr(module, PATCHED, True)
    counts[kind] += 1


def find_transformer(obj):
    for cand in (obj, getattr(obj, "transformer", None)):
        cand = getattr(cand, "_orig_mod", cand)  # torch.compile(model) wrapper
        if cand is not None and type(cand).__name__ in TRANSFORMERS:
            return cand
    return None


def quantize(transformer, fmt: str) -> None:
    if getattr(transformer, "_ltx_kernels_quantization", None) is not None:
        if transformer._ltx_kernels_quantization != fmt:
            raise ValueError(
                "ltx_kernels.integrations.diffusers.optimize: the transformer is already quantized "
                f"to {transformer._ltx_kernels_quantization} (got quantization={fmt!r})"
            )
        return
    check_quantization_compatible(transformer, fmt)
    try:
        from ... import quantization
    except ImportError as e:
        raise RuntimeError(
            "ltx_kernels.integrations.diffusers.optimize: quantization needs "
            f"ltx_kernels.quantization, which this build does not have ({e})"
        ) from e
    # LTX-2's policy: linears inside transformer blocks; gate logits, AdaLN tables, patchify,
    # caption projection and proj_out stay in high precision (quantize_linears' default policy)
    quantization.quantize_linears(transformer, fmt)
    transformer._ltx_kernels_quantization = fmt
