"""Living with diffusers' model hooks (caches, group offloading, layerwise casting) and
accelerate's.

diffusers' `HookRegistry` wraps a module's `forward`: each registered hook replaces
`module.forward` by a wrapper that runs its `pre_forward`, the previous forward (or its own
`new_forward`, which calls the previous one when it does not skip the module), then its
`post_forward`. The first registered hook holds the class's own forward at the bottom of the
chain. So:

- a block that already carries hooks gets the fused forward at the bottom of the chain, in place
  of the class's forward (`install_forward`): the hooks keep running around it and can still
  skip it, and removing them (`disable_cache()`) leaves the fused forward in place;
- the fused forwards read some parameters without calling the module that owns them (the
  RMSNorm weights of the block norms and of the attention q/k norms). Hooks on such a module
  (leaf-level group offloading onloads a norm's weight only around the norm's own forward) are
  run around that read (`hooked_param`), as the module's forward would run them;
- modules with accelerate hooks (`_hf_hook`) are left as they are: accelerate keeps its own
  `_old_forward`, and `optimize()` is meant to run before `enable_model_cpu_offload()`.
"""

from typing import Optional


def registry(m) -> Optional[object]:
    """diffusers' HookRegistry on m (None when it has none). Both diffusers and accelerate keep
    their hook objects as plain instance attributes: a dict lookup, no nn.Module.__getattr__
    miss (this runs several times per block call)."""
    return m.__dict__.get("_diffusers_hook")


def diffusers_hooks(m) -> list:
    """m's diffusers hooks, innermost first (empty when none)."""
    reg = registry(m)
    if reg is None:
        return []
    return [reg.hooks[n] for n in getattr(reg, "_hook_order", ())]


def has_hooks(m) -> bool:
    """Whether calling m runs anything besides its own forward (accelerate or diffusers hooks)."""
    d = m.__dict__
    if "_hf_hook" in d:
        return True
    reg = d.get("_diffusers_hook")
    return reg is not None and bool(getattr(reg, "_hook_order", None))


def _is_class_forward(f, module) -> bool:
    return getattr(f, "__func__", None) is type(module).forward and getattr(f, "__self__", None) is module


def install_forward(module, bound) -> Optional[str]:
    """Make `bound` (a forward bound to module) what calling module runs, beneath any diffusers
    hooks already on it. Returns None on success, else why it was not installed."""
    if "_hf_hook" in module.__dict__:
        return "has accelerate hooks (apply optimize() before accelerate's offloading)"
    reg = registry(module)
    refs = getattr(reg, "_fn_refs", None) if reg is not None else None
    if refs:
        base = refs[0]  # the innermost hook: the one whose "previous forward" is the class's
        slot = "original_forward" if getattr(base, "original_forward", None) is not None else "forward"
        if not _is_class_forward(getattr(base, slot, None), module):
            return "its diffusers hooks wrap a forward that is not the class's own"
        setattr(base, slot, bound)
        return None
    module.forward = bound
    return None


def hooked_param(module, name: str = "weight"):
    """`module.<name>` as module's own forward would see it: the pre_forward of each diffusers
    hook on module runs before the read and its post_forward after (outermost hook first, as
    the hook wrappers nest). The tensor returned keeps the storage it had during the read (an
    offload afterwards swaps the parameter's data, not this tensor's). Without hooks: the
    parameter itself (None when the module has none). A hook that replaces the module's
    forward (a cache hook put on a norm) cannot be honoured by a kernel that never calls the
    module: RuntimeError."""
    reg = registry(module)
    if reg is None or not getattr(reg, "_hook_order", None):
        return getattr(module, name, None)
    hooks = diffusers_hooks(module)
    if any(hasattr(h, "new_forward") for h in hooks):
        names = ", ".join(type(h).__name__ for h in hooks)
        raise RuntimeError(
            "ltx_kernels.integrations.diffusers: a norm computed inside a fused kernel must not carry "
            "diffusers hooks that replace its forward (put them on blocks or attention modules, or use "
            f"an unoptimized model) (got {names} on {type(module).__name__})"
        )
    if getattr(module, name, None) is None:
        return None
    for h in reversed(hooks):
        h.pre_forward(module)
    try:
        p = getattr(module, name).detach()
    finally:
        for h in hooks:
            h.post_forward(module, None)
    return p


def layerwise_casting_modules(transformer) -> list:
    """Names of the modules under transformer that carry diffusers' layerwise casting hook."""
    return [
        n for n, m in transformer.named_modules()
        if any(type(h).__name__ == "LayerwiseCastingHook" for h in diffusers_hooks(m))
    ]


def group_offloaded_modules(transformer) -> list:
    """Names of the modules under transformer that carry diffusers' group offloading hook."""
    return [
        n for n, m in transformer.named_modules()
        if any(type(h).__name__ == "GroupOffloadingHook" for h in diffusers_hooks(m))
    ]


def check_quantization_compatible(transformer, quantization: Optional[str]) -> None:
    """Quantizing replaces linears by new modules built from their weights, which hooks on the
    model have already taken over:

    - layerwise casting stores weights in a low-precision dtype and casts them to the compute
      dtype around each forward: quantizing weights it stores in FP8 quantizes twice, and a cast
      of a quantized layer's codes and fp32 scales (a root-level hook casts every floating
      tensor) destroys them;
    - group offloading keeps weights on the offload device (or on disk) outside their group's
      forward: the quantized layers would be built from offloaded weights and be in no group.

    Both refused: quantize first (optimize(..., quantization=...)), then apply the hook."""
    if quantization is None:
        return
    for what, names in (("layerwise casting", layerwise_casting_modules(transformer)),
                        ("group offloading", group_offloaded_modules(transformer))):
        if names:
            raise ValueError(
                f"ltx_kernels.integrations.diffusers.optimize: quantization cannot be combined with "
                f"diffusers' {what} applied before it; quantize first, then apply {what} (got "
                f"quantization={quantization!r} on a model with {what} hooks on {len(names)} modules, "
                f"e.g. {names[0]!r})"
            )
