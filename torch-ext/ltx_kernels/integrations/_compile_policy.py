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
    gated_attention                0.87 - 0.94x

The three norms win at some LTX shapes and lose at others (per-token against per-sample
tables, 2688 against 6144+ tokens); inside a compiled graph Inductor also fuses them with
their neighbours, which a one-op comparison does not see, so they stay with Inductor until an
end-to-end run shows otherwise.

While Dynamo traces a forward, `use_kernel(op)` is False for those ops and the forward writes
the plain PyTorch composition (the original module's math), which Inductor then fuses with its
neighbours. Every other op keeps our kernel under compile: `rms_norm_rope` and
`rms_norm_split_rope` (1.24 - 2.99x compile), `rms_norm` (1.05 - 1.12x at LTX shapes), the exact
(erf) `gelu` (1.74 - 1.80x) and `gelu_and_mul` (1.44 - 1.46x) in bf16 / fp16, the attention
kernel when asked for, and every FP8 path (quantized norms, FP8 GEMMs). The policy names the tanh
form of `gelu_and_mul` "gelu_and_mul(tanh)", as the benchmark tables do.

`LTX_KERNELS_COMPILE_ALL_KERNELS=1` (read at import) keeps every kernel under compile, to
measure the difference or to trace our ops' fake implementations.
"""

import os

import torch

LEFT_TO_INDUCTOR = frozenset({
    "adaln_rms_norm",
    "gated_residual_adaln_rms_norm",
    "add_rms_norm",
    "gelu_tanh",
    "silu_and_mul",
    "gelu_and_mul(tanh)",
    "gated_attention",
})

KEEP_ALL = os.environ.get("LTX_KERNELS_COMPILE_ALL_KERNELS", "0") not in ("", "0")


def use_kernel(op: str) -> bool:
    """Whether a replaced forward runs our kernel for `op` here: always in eager mode; while
    torch.compile traces, unless `op` is one that Inductor's own kernel runs faster."""
    if KEEP_ALL or op not in LEFT_TO_INDUCTOR:
        return True
    return not torch.compiler.is_compiling()


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
