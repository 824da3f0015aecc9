"""Nsight Compute target for the ops that trail their best alternative on the H200: each of ours
beside the alternative it is measured against, at one LTX shape each, between
torch.cuda.profiler.start() / stop() so that only those launches are profiled
(`ncu --profile-from-start off`; tools/profile/profile.sh runs it).

    python3 tools/profile/profile_heavy.py [attention] [cross] [gemm] [glue]     (default: all four)

- attention: ours (bf16, and FP8 with 128-key / per-key K factors; d64 LTX-Video and d128 LTX-2
  self-attention at 49x512x768) and cuDNN SDPA on the same operands;
- cross: ours (bf16, the persistent kernel) and cuDNN SDPA on LTX-Video's cross-attention (B 2,
  2688 queries against 128 text keys, 32 heads x 64), without a mask;
- gemm: ours (backend "sm90"), the CUTLASS-collective kernel ("sm90_cutlass") and cuBLASLt's
  blockwise FP8 GEMM (torch._scaled_mm with 1x128 / 128x128 scales) at 5376x2048x2048 and
  8192^3, and the bf16 GEMM beside cuBLAS;
- glue: adaln_rms_norm, gated_residual_adaln_rms_norm, gelu_tanh and gelu (erf) beside the
  Triton kernels torch.compile generates for the same compositions ([2, 6144, 4096] bf16).
Each call runs once unprofiled first (compilation, autotuning, module loading)."""

import sys

import torch
import torch.nn.functional as F

import ltx_kernels as lk

dev, bf = "cuda", torch.bfloat16


def attention_calls():
    calls = []
    for s, h, d in ((2688, 32, 64), (2688, 32, 128)):
        q, k, v = (torch.randn(2, s, h, d, device=dev, dtype=bf) for _ in range(3))
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        calls.append((f"ours d{d}", lambda q=q, k=k, v=v: lk.attention(q, k, v)))
        for kb in (128, 1):  # FP8 with one K factor per 128 keys / per key (quantizer not profiled)
            ops8 = lk.quantize_attention_fp8(q, k, v, k_block=kb)
            calls.append((f"ours fp8 kblock{kb} d{d}", lambda o=ops8: lk.attention(*o)))

        def cudnn(qt=qt, kt=kt, vt=vt):
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qt, kt, vt)

        calls.append((f"cudnn d{d}", cudnn))
    return calls


def cross_calls():
    q = torch.randn(2, 2688, 32, 64, device=dev, dtype=bf)
    k, v = (torch.randn(2, 128, 32, 64, device=dev, dtype=bf) for _ in range(2))
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))

    def cudnn():
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(qt, kt, vt)

    return [("ours cross d64", lambda: lk.attention(q, k, v)), ("cudnn cross d64", cudnn)]


def gemm_calls():
    calls = []
    for m, n, k in ((5376, 2048, 2048), (8192, 8192, 8192)):
        x = torch.randn(m, k, device=dev, dtype=bf)
        w = torch.randn(n, k, device=dev, dtype=bf) * 0.05
        a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
        b, sb = lk.quantize_fp8_block(w)
        sa_cm = sa.contiguous().t().contiguous().t()  # cuBLASLt wants the 1x128 scales M-major
        for backend in ("sm90", "sm90_cutlass"):
            calls.append((f"{backend} {m}x{n}x{k}",
                          lambda a=a, sa=sa, b=b, sb=sb, be=backend: lk.fp8_blockwise_gemm(a, sa, b, sb, backend=be)))
        calls.append((f"cublaslt blockwise {m}x{n}x{k}",
                      lambda a=a, sa=sa_cm, b=b, sb=sb: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb.t(),
                                                                         out_dtype=bf)))
        calls.append((f"bf16 ours {m}x{n}x{k}", lambda x=x, w=w: lk.bf16_gemm(x, w)))
        calls.append((f"bf16 cublas {m}x{n}x{k}", lambda x=x, w=w: F.linear(x, w)))
    return calls


def glue_calls():
    x = torch.randn(2, 6144, 4096, device=dev, dtype=bf)
    y = torch.randn_like(x)
    w = torch.randn(4096, device=dev, dtype=bf)
    sc, sh, g = (torch.randn(2, 1, 4096, device=dev, dtype=bf) * 0.1 for _ in range(3))

    def adaln(x, sc, sh, w):
        return F.rms_norm(x.float(), (x.shape[-1],), w.float(), 1e-6).mul(1 + sc.float()).add(sh.float()).to(bf)

    def gated(x, y, g, sc, sh, w):
        h = (x.float() + y.float() * g.float()).to(bf)
        return h, adaln(h, sc, sh, w)

    c_adaln, c_gated = torch.compile(adaln), torch.compile(gated)
    c_gelu_tanh = torch.compile(lambda x: F.gelu(x, approximate="tanh"))
    c_gelu = torch.compile(lambda x: F.gelu(x))
    return [
        ("ours adaln_rms_norm", lambda: lk.adaln_rms_norm(x, sc, sh, w, 1e-6)),
        ("compiled adaln_rms_norm", lambda: c_adaln(x, sc, sh, w)),
        ("ours gated_residual_adaln_rms_norm", lambda: lk.gated_residual_adaln_rms_norm(x, y, g, sc, sh, w, 1e-6)),
        ("compiled gated_residual_adaln_rms_norm", lambda: c_gated(x, y, g, sc, sh, w)),
        ("ours gelu_tanh", lambda: lk.gelu_tanh(x)),
        ("compiled gelu_tanh", lambda: c_gelu_tanh(x)),
        ("ours gelu", lambda: lk.gelu(x)),
        ("compiled gelu", lambda: c_gelu(x)),
    ]


def main(argv):
    families = argv or ["attention", "cross", "gemm", "glue"]
    makers = {"attention": attention_calls, "cross": cross_calls, "gemm": gemm_calls, "glue": glue_calls}
    unknown = [f for f in families if f not in makers]
    if unknown:
        sys.exit(f"profile_heavy.py: unknown family {unknown}; known: {sorted(makers)}")
    profile_calls("profile_heavy", [c for f in families for c in makers[f]()])


def profile_calls(tag, calls):
    """Each (name, fn) once unprofiled (compile, autotune, load modules), then once more between
    torch.cuda.profiler.start() / stop() inside an NVTX range of its name (what
    `ncu --profile-from-start off --nvtx` keeps and names)."""
    for _, fn in calls:
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for name, fn in calls:
        torch.cuda.nvtx.range_push(name)
        fn()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print(f"{tag}: profiled " + ", ".join(name for name, _ in calls))


if __name__ == "__main__":
    main(sys.argv[1:])
