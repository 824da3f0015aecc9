"""The sm_90a GEMM kernel under compute-sanitizer (memcheck): every tile configuration, clusters of 1
and 2, every epilogue and the FP8 output, M-major and row-major activation scales, on small ragged
shapes (M, N, K not multiples of the tile).
A call a configuration cannot run (the kernel refuses it: e.g. 256x128 cannot also stage a per-token
gate tile) is listed as skipped; any other error stops the script.
  compute-sanitizer --tool memcheck --error-exitcode 3 python3 tools/sanitize/sanitize_gemm.py
"""

import torch

import ltx_kernels as lk

FP8_TILES = [(128, 128), (128, 144), (128, 160), (128, 192), (256, 128), (64, 128), (64, 256)]
BF16_TILES = [(128, 128), (128, 192), (128, 256), (256, 128), (64, 256)]
F8 = torch.float8_e4m3fn
dev = "cuda"
torch.manual_seed(0)
if torch.cuda.get_device_capability() != (9, 0):
    raise SystemExit("sanitize_gemm: needs compute capability 9.0")
for op, tiles in (("fp8", FP8_TILES), ("bf16", BF16_TILES)):
    for bm, bn in tiles:
        for c in (1, 2):
            lk.set_developer_setting("LTX_KERNELS_GEMM_CONFIG", f"{bm}x{bn}:c{c}")
            B, tokens = 2, bm + 9
            n = bn + 40
            k = 256 if op == "fp8" else 200
            bias = torch.randn(n, device=dev)
            h = torch.randn(B, tokens, n, device=dev).to(torch.bfloat16)
            g = torch.randn(B, n, device=dev).to(torch.bfloat16)
            gt = torch.randn(B, tokens, n, device=dev).to(torch.bfloat16)
            if op == "fp8":
                x = torch.randn(B, tokens, k, device=dev, dtype=torch.bfloat16)
                a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
                b, sb = lk.quantize_fp8_block(torch.randn(n, k, device=dev) * 0.05)
                g_ = lambda **kw: lk.fp8_blockwise_gemm(a, sa, b, sb, bias, backend="sm90", **kw)
            else:
                a = torch.randn(B, tokens, k, device=dev, dtype=torch.bfloat16)
                b = (torch.randn(n, k, device=dev) * 0.05).to(torch.bfloat16)
                g_ = lambda **kw: lk.bf16_gemm(a, b, bias, backend="sm90", **kw)

            def f(_g=g_, _tag=f"{op} {bm}x{bn}:c{c}", **kw):
                try:
                    _g(**kw)
                except RuntimeError as e:
                    if "cannot run this call" not in str(e):
                        raise
                    print(f"skipped {_tag} {kw.get('epilogue', 'none')}: {str(e).splitlines()[0][-90:]}")
            f()
            if op == "fp8":  # row-major activation scales: the loader's cp.async path instead of TMA
                sa_row = sa.contiguous()
                f(_g=lambda **kw: lk.fp8_blockwise_gemm(a, sa_row, b, sb, bias, backend="sm90", **kw))
            f(epilogue="gelu_tanh", out_dtype=torch.float16)
            f(epilogue="gated_residual", residual=h, gate=g)
            f(epilogue="gated_residual", residual=gt.clone(), gate=gt)
            hh = h.clone()
            f(epilogue="gated_residual", residual=hh, gate=g, out=hh)
            if (bm == 64 and bn == 256) or (bm != 64 and bn in (128, 256)):
                if op == "fp8":
                    b3, sb3 = lk.quantize_fp8_block(torch.randn(384, k, device=dev) * 0.05)
                    lk.fp8_blockwise_gemm(a, sa, b3, sb3, backend="sm90", epilogue="gelu_tanh", out_dtype=F8)
                else:
                    b3 = (torch.randn(384, k, device=dev) * 0.05).to(torch.bfloat16)
                    lk.bf16_gemm(a, b3, backend="sm90", epilogue="gelu_tanh", out_dtype=F8, scale_layout="row")
            torch.cuda.synchronize()
lk.set_developer_setting("LTX_KERNELS_GEMM_CONFIG", "")
print("sanitize_gemm: done")
