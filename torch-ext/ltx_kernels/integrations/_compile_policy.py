"""Which fused kernels the integrations' replaced forwards run while torch.compile traces them.

In eager mode a replaced forward always runs our kernels: each one does the work of several
PyTorch launches and intermediate tensors. Under torch.compile, Inductor generates one Triton
kernel per chain of memory-bound ops, and for some of the compositions our kernels replace that
kernel is faster than ours. Our time against torch.compile of the same composition, measured in
one run on the H200 over every row of the families' benchmarks (LTX and LLM shapes, bf16 / fp16,
benchmarks/results/h200/results.md):

    adaln_rms_norm                 0.88 - 1.13x    gelu_tanh           0.95 - 0.98x
    gated_residual_adaln_rms_norm  0.95 - 1.09x    silu_and_mul        0.96 - 1.00x
    add_rms_norm                   0.97 - 1.06x    gelu_and_mul(tanh)  0.97 - 1.00x
    gated_attention                0.87 - 0.94x    quantize_fp8_per_token_group  0.81x

The three norms win at some LTX shapes and lose at others (per-token against per-sample
tables, 2688 against 6144+ tokens); inside a compiled graph Inductor also fuses them with
their neighbours, which a one-op comparison does not see, so they stay with Inductor until an
end-to-end run shows otherwise.

While Dynamo traces a forward, `use_kernel(op, x)` is False for those ops and the forward writes
the plain PyTorch composition (the original module's math), which Inductor then fuses with its
neighbours. Some ops win for some inputs only (COMPILED_RULES): `rms_norm` keeps our kernel for
16-bit rows of <= 4096 columns and more than 2^23 elements (1.05 - 1.27x at LTX shapes) and
leaves LLM decode rows, 8192 columns and fp32 to Inductor; the exact (erf) `gelu_and_mul`
(1.41 - 1.44x) keeps it in bf16 / fp16 only. Every other op keeps our kernel
under compile: `rms_norm_rope` and `rms_norm_split_rope` (1.23 - 2.96x compile), the attention
kernel when asked for, and the FP8 paths the integrations use (`adaln_rms_norm` and
`gated_residual_adaln_rms_norm` with FP8 output: 1.39 - 1.71x compile; FP8 GEMMs). The FP8
linears' activation quantizer (`quantize_fp8_per_token_group`, 0.81x compile at [12288, 4096]
and [32760, 4096] bf16) is written as the same rule in PyTorch ops while tracing
(`fp8._quantize_fp8_per_token_group_composed`: bit for bit the rule in eager and on the CPU;
on CUDA Inductor's approximate division can move a code by one step next to a rounding
midpoint). LTX-Video's gated residuals in the FP8 GEMM's epilogue ("gated_residual_epilogue":
1.19x / 1.10x the GEMM followed by an eager `addcmul` at 5376 x 2048 x 2048 / x 8192) are used
in eager mode only: under compile the fused path runs our sm_90a GEMM (0.76-0.9x the kernels
the plain GEMM runs) and Inductor fuses the residual add with its neighbours (attn1's into
attn2's input quantization), so by the same rows' arithmetic it would lose ~0.5 ms per LTX-Video
step there; an end-to-end run decides (`optimized+compile(all kernels)` uses it). In eager
mode every replaced forward runs our kernel except the fp32 tanh GELU (EAGER_RULES). The policy
names the tanh form of `gelu_and_mul` "gelu_and_mul(tanh)", as the benchmark tables do.

`LTX_KERNELS_COMPILE_ALL_KERNELS=1` (read at import) keeps every kernel under compile, to
measure the difference or to trace our ops' fake implementations; `LTX_KERNELS_COMPILE_KEEP=op,op`
keeps the named ones only (the names of LEFT_TO_INDUCTOR / COMPILED_RULES; an unknown name is
an error), to measure one entry of the policy at a time (benchmarks/e2e_ltx_video.py
`--keep-variants`).
"""

import os
from typing import Optional

import torch

LEFT_TO_INDUCTOR = frozenset({
    "adaln_rms_norm",
    "gated_residual_adaln_rms_norm",
    "add_rms_norm",
    "gelu_tanh",
    "silu_and_mul",
    "gelu_and_mul(tanh)",
    "gated_attention",
    "quantize_fp8_per_token_group",
    "gated_residual_epilogue",
})

KEEP_ALL = os.environ.get("LTX_KERNELS_COMPILE_ALL_KERNELS", "0") not in ("", "0")

_HALF = (torch.float16, torch.bfloat16)
RMS_NORM_MIN_NUMEL = 1 << 23
RMS_NORM_MAX_COLS = 4096


def parse_keep(spec: str) -> frozenset:
    """The ops named in a comma-separated list (LTX_KERNELS_COMPILE_KEEP), checked against the
    policy's names so that a typo is an error, not a measurement of nothing."""
    names = frozenset(n.strip() for n in spec.split(",") if n.strip())
    unknown = sorted(names - LEFT_TO_INDUCTOR - frozenset(COMPILED_RULES))
    if unknown:
        raise ValueError(f"LTX_KERNELS_COMPILE_KEEP: unknown op(s) {unknown}; the policy names "
                         f"{sorted(LEFT_TO_INDUCTOR | frozenset(COMPILED_RULES))}")
    return names


def rms_norm_wins_compiled(x: torch.Tensor) -> bool:
    """Where `rms_norm` measured faster than torch.compile's kernel for the same composition
    (benchmarks/results/h200/norm.json): 16-bit rows of <= 4096 columns and more than 2^23
    elements (1.05 - 1.27x: [2, 2688, 2048] to [1, 32760, 4096]). Elsewhere Inductor's was
    faster: few rows ([1, 4096] 0.78x, [32, 4096] 0.81x, [4, 1024, 2048] 0.97x: launch and
    latency bound), 8192 columns ([16384, 8192] 0.93x) and fp32 ([2, 6144, 4096] 0.97x)."""
    return (x.dtype in _HALF and x.shape[-1] <= RMS_NORM_MAX_COLS
            and x.numel() > RMS_NORM_MIN_NUMEL)


# Ops whose kernel wins under torch.compile only for some inputs (beyond LEFT_TO_INDUCTOR):
# op -> the test, given the op's main input. The erf gelu_and_mul wins in 16-bit (1.41 - 1.44x
# compile) and loses in fp32 (0.91x: the accurate erfc).
COMPILED_RULES = {
    "rms_norm": rms_norm_wins_compiled,
    "gelu_and_mul": lambda x: x.dtype in _HALF,
}
# ... and in eager mode: PyTorch's own fp32 tanh GELU (F.gelu(approximate="tanh")) measured 3%
# faster than ours ([2, 2688, 8192]: 84.8 against 87.2 us); in 16-bit ours wins (1.09x).
EAGER_RULES = {
    "gelu_tanh": lambda x: x.dtype in _HALF,
}
KEEP = parse_keep(os.environ.get("LTX_KERNELS_COMPILE_KEEP", ""))


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


# ltx_kernels.attention against PyTorch's SDPA (cuDNN on the H200), each as the attention
# processors call it (B 2, 2688 queries, 32 heads; scripts/attention_kv_sweep.py,
# benchmarks/results/h200/experiments/attention_kv_sweep_0564ee8.json, and
# benchmarks/bench_attention.py for the FP8 rows):
# - with a key mask (a prompt's padding): 0.76-0.93x at 128 to 2688 keys, head dim 64 and 128
#   (FP8 with its quantization pass: 0.34-0.81x);
# - unmasked, bf16, head dim 64: 0.71x at 128 keys, 0.90x at 512, 1.00x at 1024, 1.06x at 2048,
#   1.10x at 2688; head dim 128: 0.63-0.88x (with few keys each query tile sees one or two key
#   blocks and its Q load and O store are not amortized);
# - unmasked, FP8 with its quantization pass: 0.79x (head dim 64) and 0.84x (128) at 2688 keys,
#   1.09x at 14080 (64), 1.12x at 8192 and 1.21x at 16384 (128).
# So optimize(attention=...) runs our kernel only where it measured faster, SDPA (or diffusers'
# dispatcher) elsewhere, in the processor's dtype.
MIN_KERNEL_ATTENTION_KEYS = {"bf16": 2048, "fp8": 8192}
KERNEL_ATTENTION_HEAD_DIMS = {"bf16": (64,), "fp8": (64, 128)}


def use_kernel_attention(mode: str, num_keys: int, head_dim: int, masked: bool) -> bool:
    """Whether an attention over `num_keys` keys of `head_dim` (with a key mask: `masked`) runs
    ltx_kernels.attention in `mode` ("bf16" / "fp8") when optimize(attention=mode) asked for it."""
    return (not masked and num_keys >= MIN_KERNEL_ATTENTION_KEYS[mode]
            and head_dim in KERNEL_ATTENTION_HEAD_DIMS[mode])
