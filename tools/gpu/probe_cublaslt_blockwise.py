"""Which shapes cuBLASLt's blockwise FP8 GEMM (torch._scaled_mm with 1x128 / 128x128 fp32 scales)
computes right on this GPU: calc_diff of its bf16 output against fp8_blockwise_gemm(backend="torch")
(exact dequantize + fp32 matmul) over M in (68, 1000), N in (128, 144, 256, 384, 2064, 2048),
K in (128 .. 2048); prints the shapes that are wrong (calc_diff >= 1e-5) or raise. It is what
set the K % 512 == 0 rule of the "cublaslt" GEMM backend (csrc/cuda/gemm/gemm_entry.cu).

    python3 tools/gpu/probe_cublaslt_blockwise.py
"""
import torch, ltx_kernels as lk
torch.manual_seed(0)
def cd(x, y):
    x, y = x.double(), y.double(); return float(1 - 2 * (x * y).sum() / ((x * x).sum() + (y * y).sum()))
res = []
for m in (68, 1000):
    for n in (128, 144, 256, 384, 2064, 2048):
        for k in (128, 256, 384, 512, 640, 1024, 2048):
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16); w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.05
            a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major"); b, sb = lk.quantize_fp8_block(w)
            ref = lk.fp8_blockwise_gemm(a, sa, b, sb, backend="torch")
            try:
                y = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb.t(), out_dtype=torch.bfloat16)
                torch.cuda.synchronize(); r = f"{cd(y, ref):.1e}"
            except Exception as e:
                r = "ERR " + str(e).splitlines()[0][:60]
            res.append((m, n, k, r))
bad = [t for t in res if not (t[3][0].isdigit() and float(t[3]) < 1e-5)]
print("bad:", len(bad), "of", len(res))
for t in bad: print(*t)
