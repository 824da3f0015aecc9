"""Few-token GEMM (backend "skinny") under compute-sanitizer: split-K shapes, every n8-tile count.
  compute-sanitizer --tool racecheck python3 tools/sanitize/sanitize_skinny.py  (also memcheck, synccheck)
"""
import torch, ltx_kernels as lk
dev = "cuda"
for m, n, k in [(1, 4096, 4096), (16, 1000, 4096), (33, 264, 1024), (64, 520, 2048), (5, 8, 128)]:
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
    a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
    b, sb = lk.quantize_fp8_block(w)
    lk.fp8_blockwise_gemm(a, sa, b, sb, torch.randn(n, device=dev), backend="skinny")
torch.cuda.synchronize()
print("skinny sanitize: done")
