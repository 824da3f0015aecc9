"""Which fused kernels the integrations' replaced forwards run while torch.compile traces them.

In eager mode a replaced forward always runs our kernels (except the fp32 tanh GELU,
EAGER_RULES): each one does the work of several PyTorch launches and intermediate tensors.
Under torch.compile, Inductor generates one Triton kernel per chain of memory-bound ops, and for
some of the compositions our kernels replace, that kernel alone is faster than ours (one op at a
time against torch.compile of the same composition: benchmarks/results/h200/results.md).

One-op comparisons do not decide what a whole compiled model runs faster with, so the policy
follows end-to-end runs where there are some. The diffusers integration's ops (the AdaLN and
gated-residual norms, the GELU, the gated attention output, the FP8 linears' activation
quantizer and the gated residual in the FP8 GEMM's epilogue, "gated_residual_epilogue") keep
our kernels under compile: leaving them to Inductor measured slower end to end on the H200.
benchmarks/check_policy.py holds this against every end-to-end record
(benchmarks/results/h200/e2e_ltx_video.json, e2e_ltx2.json) whose compiled rows name the policy
they ran under (benchmarks/e2e_ltx_video.py --compare --leave-variants OPS measures it).

The ops only the transformers integration uses follow their one-op ratios, as no end-to-end LLM
run has been made: LEFT_TO_INDUCTOR holds those whose rows measured Inductor's kernel faster
(the gated MLPs' `silu_and_mul` and tanh `gelu_and_mul`: benchmarks/results/h200/activation.json),
and `add_rms_norm`, faster than Inductor's over its rows (fused_norm.json), keeps ours. While
Dynamo traces a forward, `use_kernel(op, x)` is False for the LEFT_TO_INDUCTOR ops and the
forward writes the plain PyTorch composition (the original module's math), which Inductor fuses
with its neighbours. Some ops win for some inputs only (COMPILED_RULES): `rms_norm` keeps our
kernel for 16-bit rows of <= 4096 columns and more than 2^23 elements (LTX shapes, long LLM
prompts) and leaves LLM decode rows, wider rows and fp32 to Inductor (norm.json); the exact
(erf) `gelu_and_mul` and the tanh GELU keep it in bf16 / fp16 only (activation.json). Every
other op keeps our kernel under compile (`rms_norm_rope`, `rms_norm_split_rope`, the attention
kernel when asked for, the FP8-output norms, the FP8 GEMMs). The policy names the tanh form of
`gelu_and_mul` "gelu_and_mul(tanh)", as the benchmark tables do.

benchmarks/check_policy.py re-derives every decision here (and the attention thresholds below)
out of the records named beside it and fails where one disagrees; the docs' tables of these
measurements are generated out of the same records (docs/integrations.md, "Under torch.compile").

Knobs (read at import): `LTX_KERNELS_COMPILE_ALL_KERNELS=1` keeps every kernel under compile (to
measure the difference or to trace our ops' fake implementations);
`LTX_KERNELS_COMPILE_KEEP=op,op` keeps the named ones; `LTX_KERNELS_COMPILE_LEAVE=op,op` leaves
the named ones to Inductor as well (e.g. `quantize_fp8_per_token_group`, whose traced form
`fp8._quantize_fp8_per_token_group_composed` is bit for bit the rule in eager mode and on the
CPU; on CUDA Inductor's approximate division can move a code by one step next to a rounding
midpoint). The names are those of POLICY_OPS; an unknown name is an error.
"""

import os
from typing import Optional

import torch

# Every name a replaced forward passes to use_kernel.
POLICY_OPS = frozenset({
    "rms_norm", "adaln_rms_norm", "gated_residual_adaln_rms_norm", "add_rms_norm", "gelu_tanh",
    "silu_and_mul", "gelu_and_mul", "gelu_and_mul(tanh)", "gated_attention",
    "quantize_fp8_per_token_group", "gated_residual_epilogue",
})


def parse_ops(spec: str, knob: str = "LTX_KERNELS_COMPILE_KEEP") -> frozenset:
    """The ops named in a comma-separated list, checked against POLICY_OPS so that a typo is an
    error, not a measurement of nothing."""
    names = frozenset(n.strip() for n in spec.split(",") if n.strip())
    unknown = sorted(names - POLICY_OPS)
    if unknown:
        raise ValueError(f"{knob}: unknown op(s) {unknown}; the policy names {sorted(POLICY_OPS)}")
    return names


# Left to Inductor under compile: the transformers-only ops whose benchmark rows measured
# Inductor's kernel faster (benchmarks/results/h200/activation.json; benchmarks/check_policy.py:
# the median of ours over torch.compile across the op's rows, a tie within 2% either way).
LEFT_TO_INDUCTOR = frozenset({
    "silu_and_mul",
    "gelu_and_mul(tanh)",
}) | parse_ops(os.environ.get("LTX_KERNELS_COMPILE_LEAVE", ""), "LTX_KERNELS_COMPILE_LEAVE")

KEEP_ALL = os.environ.get("LTX_KERNELS_COMPILE_ALL_KERNELS", "0") not in ("", "0")

_HALF = (torch.float16, torch.bfloat16)


def half_only(x: torch.Tensor) -> bool:
    """The rule of the ops whose kernel wins in bf16 / fp16 and loses in fp32."""
    return x.dtype in _HALF
RMS_NORM_MIN_NUMEL = 1 << 23
RMS_NORM_MAX_COLS = 4096


def rms_norm_wins_compiled(x: torch.Tensor) -> bool:
    """Where `rms_norm` measured faster than torch.compile's kernel for the same composition
    (benchmarks/results/h200/norm.json): 16-bit rows of <= 4096 columns and more than 2^23
    elements (LTX shapes, long LLM prompts). Elsewhere Inductor's was faster: few rows (launch
    and latency bound), 8192 columns and fp32. benchmarks/check_policy.py re-derives both bounds
    out of norm.json."""
    return (x.dtype in _HALF and x.shape[-1] <= RMS_NORM_MAX_COLS
            and x.numel() > RMS_NORM_MIN_NUMEL)


# Ops whose kernel wins under torch.compile only for some inputs (beyond LEFT_TO_INDUCTOR):
# op -> the test, given the op's main input. The erf gelu_and_mul wins in 16-bit and loses in
# fp32 (the accurate erfc; benchmarks/results/h200/activation.json).
COMPILED_RULES = {
    "rms_norm": rms_norm_wins_compiled,
    "gelu_and_mul": half_only,
    "gelu_tanh": half_only,  # fp32: PyTorch's own is faster even in eager mode
}
# ... and in eager mode: PyTorch's own fp32 tanh GELU (F.gelu(approximate="tanh")) measured
# faster than ours; in 16-bit ours wins (the gelu_tanh rows of benchmarks/results/h200/activation.json).
EAGER_RULES = {
    "gelu_tanh": half_only,
}
KEEP = parse_ops(os.environ.get("LTX_KERNELS_COMPILE_KEEP", ""))


def use_kernel(op: str, x: Optional[torch.Tensor] = None) -> bool:
    """Whether a replaced forward runs our kernel for `op` on the input `x` here. In eager mode:
    yes, unless EAGER_RULES says PyTorch's own op is faster for x. While torch.compile traces:
    no for the ops Inductor runs faster (LEFT_TO_INDUCTOR), and for the others what
    COMPILED_RULES says of x (under dynamic shapes the test becomes a guard). Without `x`, the
    rules that need it are not applied."""
    if KEEP_ALL:
        return True
    if not torch.compiler.is_compiling():
        rule = EAGER_RULES.get(op)
        return rule is None or x is None or bool(rule(x))
    if op in KEEP:
        return True
    if op in LEFT_TO_INDUCTOR:
        return False
    rule = COMPILED_RULES.get(op)
    return rule is None or x is None or bool(rule(x))


# ltx_kernels.attention against PyTorch's SDPA (cuDNN), each as the attention processors call it.
# Records: benchmarks/results/h100/attention.json (benchmarks/bench_attention.py: the LTX shapes,
# FP8 with its quantization pass timed beside it) and benchmarks/results/h100/attention_kv_sweep.json
# (tools/tune/attention_kv_sweep.py: B 2, 2688 queries, 32 heads against 128 to 2688 keys, with
# and without a key mask); they time the current kernels (the key bias loaded with K, the
# persistent schedule for few keys), which the H200 records predate:
# - with a key mask (a prompt's padding), bf16: faster at every key count measured, head dim 64
#   and 128 (cuDNN pays for its mask, ours reads the bias from shared memory); FP8 with its
#   quantization pass: slower below 2048 keys, level or a little faster above;
# - unmasked, bf16: at head dim 64 faster from 256 keys on, slower at 128; at head dim 128 slower
#   at every key count measured;
# - unmasked, FP8 with its quantization pass: faster from 8192 keys on.
# So optimize(attention=...) runs our kernel only where it measured faster, SDPA (or diffusers'
# dispatcher) elsewhere, in the processor's dtype ("fp8" falls back to the 16-bit kernel where only
# that one pays: kernel_attention_mode). benchmarks/check_policy.py re-derives every key threshold
# and the head dims from those records; docs/integrations.md ("Which attentions run our kernel")
# has the generated table.
MIN_KERNEL_ATTENTION_KEYS = {"bf16": 256, "fp8": 8192}  # unmasked
KERNEL_ATTENTION_HEAD_DIMS = {"bf16": (64,), "fp8": (64, 128)}
MIN_MASKED_KERNEL_ATTENTION_KEYS = {"bf16": 128}  # with a key mask (a mode not listed: never)
MASKED_KERNEL_ATTENTION_HEAD_DIMS = {"bf16": (64, 128)}


def use_kernel_attention(mode: str, num_keys: int, head_dim: int, masked: bool) -> bool:
    """Whether an attention over `num_keys` keys of `head_dim` (with a key mask: `masked`) runs
    ltx_kernels.attention in `mode` ("bf16" / "fp8") when optimize(attention=mode) asked for it."""
    if masked:
        return (mode in MIN_MASKED_KERNEL_ATTENTION_KEYS and num_keys >= MIN_MASKED_KERNEL_ATTENTION_KEYS[mode]
                and head_dim in MASKED_KERNEL_ATTENTION_HEAD_DIMS[mode])
    return num_keys >= MIN_KERNEL_ATTENTION_KEYS[mode] and head_dim in KERNEL_ATTENTION_HEAD_DIMS[mode]


def kernel_attention_mode(mode: str, num_keys: int, head_dim: int, masked: bool) -> Optional[str]:
    """The ltx_kernels.attention mode a call of optimize(attention=mode) runs: `mode` where
    use_kernel_attention takes it; for "fp8" where FP8 does not pay, the 16-bit kernel where that
    one does (it runs in the model's dtype, as SDPA would: no accuracy is given up); None: SDPA."""
    if use_kernel_attention(mode, num_keys, head_dim, masked):
        return mode
    if mode == "fp8" and use_kernel_attention("bf16", num_keys, head_dim, masked):
        return "bf16"
    return None
