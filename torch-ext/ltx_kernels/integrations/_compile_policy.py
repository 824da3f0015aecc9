"""Which fused kernels the integrations' replaced forwards run while torch.compile traces them.

In eager mode a replaced forward always runs our kernels (except the fp32 tanh GELU,
EAGER_RULES): each one does the work of several PyTorch launches and intermediate tensors.
Under torch.compile, Inductor generates one Triton kernel per chain of memory-bound ops, and for
some of the compositions our kernels replace, that kernel alone is faster than ours. Our time
against torch.compile of the same composition, one op at a time, on the H200 over every row of
the families' benchmarks (LTX and LLM shapes, bf16 / fp16, benchmarks/results/h200/results.md):

    adaln_rms_norm                 0.88 - 1.13x    gelu_tanh           0.95 - 0.98x
    gated_residual_adaln_rms_norm  0.95 - 1.09x    silu_and_mul        0.96 - 1.00x
    add_rms_norm                   0.97 - 1.06x    gelu_and_mul(tanh)  0.97 - 1.00x
    gated_attention                0.87 - 0.94x    quantize_fp8_per_token_group  0.81x

One-op comparisons do not decide what a whole compiled model runs faster with, so the policy
follows end-to-end runs where there are some. The diffusers integration's ops (the AdaLN and
gated-residual norms, the GELU, the gated attention output, the FP8 linears' activation
quantizer and the gated residual in the FP8 GEMM's epilogue, "gated_residual_epilogue") keep
our kernels under compile: leaving them to Inductor measured slower end to end in each of these
H200 records (benchmarks/results/h200/experiments/e2e_ltx_video_keep_afc95e3.json,
e2e_ltx2_fp8_afc95e3.json, e2e_ltx_video.json, e2e_ltx_video_fp8_8e9b199.json):

    LTX-Video, FP8 linears + compile   38.4 ms/step kept, 41.2 left to Inductor (39.6 / 42.7
                                       and 38.8 / 41.4 in the other two files); kept one group
                                       at a time:
                                       the quantizer 39.4, the GEMM's gated residual 40.2, the
                                       glue norms and GELU 39.4
    LTX-Video, bf16 + compile          45.0 / 46.0 (45.8 / 46.0, 45.6 / 45.9)
    LTX-2 19B, FP8 linears + compile   233.9 / 245.6;  bf16 + compile 298.5 / 300.4

LEFT_TO_INDUCTOR keeps the ops that only the transformers integration uses (the gated MLPs'
`silu_and_mul` and tanh `gelu_and_mul`, and `add_rms_norm`), whose one-op ratios say Inductor
and no end-to-end run says otherwise. While Dynamo traces a forward, `use_kernel(op, x)` is
False for those and the forward writes the plain PyTorch composition (the original module's
math), which Inductor fuses with its neighbours. Some ops win for some inputs only
(COMPILED_RULES): `rms_norm` keeps our kernel for 16-bit rows of <= 4096 columns and more than
2^23 elements (1.05 - 1.27x at LTX shapes) and leaves LLM decode rows, 8192 columns and fp32 to
Inductor; the exact (erf) `gelu_and_mul` (1.41 - 1.44x) and the tanh GELU keep it in bf16 /
fp16 only. Every other op keeps our kernel under compile (`rms_norm_rope`, `rms_norm_split_rope`, the attention
kernel when asked for, the FP8-output norms, the FP8 GEMMs). The policy names the tanh form of
`gelu_and_mul` "gelu_and_mul(tanh)", as the benchmark tables do.

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


LEFT_TO_INDUCTOR = frozenset({
    "add_rms_norm",
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
    "gelu_and_mul": half_only,
    "gelu_tanh": half_only,  # fp32: PyTorch's own is faster even in eager mode
}
# ... and in eager mode: PyTorch's own fp32 tanh GELU (F.gelu(approximate="tanh")) measured 3%
# faster than ours ([2, 2688, 8192]: 84.8 against 87.2 us); in 16-bit ours wins (1.09x).
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
