"""Runs every kernel path once on small shapes, for compute-sanitizer (memcheck, racecheck).
Covers: vector and scalar paths, warp-per-row, block-per-row and looping kernels, strided
rows, in place, every dtype."""

import torch

import ltx_kernels as lk

torch.manual_seed(0)
dev = "cuda"
for dtype in [torch.float32, torch.float16, torch.bfloat16]:
    for rows, cols in [(5, 8), (3, 111), (4, 256), (3, 769), (2, 2048), (2, 5125), (2, 16384), (2, 40000), (1, 300000)]:
        x = torch.randn(rows, cols + 8, device=dev, dtype=dtype)[:, :cols]
        w = torch.randn(cols, device=dev, dtype=dtype)
        y = lk.rms_norm(x, w)
        y2 = lk.rms_norm(x.contiguous(), None)
        lk.rms_norm(y2, w, out=y2)
for dtype in [torch.float32, torch.float16, torch.bfloat16]:  # activation family
    for rows, cols in [(1, 1), (3, 7), (5, 83), (2, 769), (3, 1024), (1, 5125)]:
        x = torch.randn(rows, 2 * cols + 16, device=dev, dtype=dtype)
        for f in [lk.gelu, lk.gelu_tanh, lk.silu]:
            f(x[:, : 2 * cols].contiguous())  # flat vector path + tail
            f(x.view(-1)[1 : 1 + rows * cols])  # flat scalar path (misaligned)
            f(x[:, :cols])  # strided rows, vector when cols allows
            f(x[:, 1 : cols + 1])  # strided rows, scalar
        for af in [True, False]:
            lk.gelu_and_mul(x[:, : 2 * cols], "none", af)  # vector when cols allows
            lk.gelu_and_mul(x[:, 1 : 2 * cols + 1], "tanh", af)  # scalar
            lk.silu_and_mul(x[:, : 2 * cols].contiguous(), af)
    for heads, hd in [(1, 1), (3, 7), (4, 64), (32, 8)]:
        x = torch.randn(5, heads * hd + 8, device=dev, dtype=dtype)
        g = torch.randn(5, heads, device=dev, dtype=dtype)
        lk.gated_attention(x[:, : heads * hd], g)
        lk.gated_attention(x[:, 1 : heads * hd + 1], g)
        y = x[:, : heads * hd].contiguous()
        lk.gated_attention(y, g, out=y)
# @family:activation
# @family:fused_norm
# fused norms: warp / block / looping kernels, vector and scalar (misaligned) paths,
# per-sample and per-token tables, in place
for dtype in [torch.float32, torch.float16, torch.bfloat16]:
    for B, S, C in [(2, 3, 8), (1, 5, 111), (2, 2, 769), (1, 3, 2048), (2, 1, 5125), (1, 2, 40000)]:
        x = torch.randn(B, S, C + 8, device=dev, dtype=dtype)[..., :C]
        r = torch.randn(B, S, C, device=dev, dtype=dtype)
        w = torch.randn(C, device=dev, dtype=dtype)
        ps = torch.randn(B, C, device=dev, dtype=dtype)
        pt = torch.randn(B, S, C, device=dev, dtype=dtype)
        xm = torch.randn(B * S * C + 1, device=dev, dtype=dtype)[1:].view(B, S, C)  # misaligned
        for xx in [x, xm]:
            lk.add_rms_norm(xx, r, w)
            lk.layer_norm(xx, w, w)
            lk.adaln_rms_norm(xx, ps, pt, w)
            lk.adaln_layer_norm(xx, pt, ps, w, w)
            lk.gated_residual_adaln_rms_norm(xx, r, ps, pt, ps, w)
        h = r.clone()
        lk.gated_residual_adaln_rms_norm(h, x, pt, ps, pt, None, h_out=h)
        lk.add_rms_norm(x, h, None, residual_out=h)
# rope: warp-per-row, block-per-row and looping norm kernels, vector and element paths,
# interleaved and split, fp32 and x-dtype tables, batch broadcast, strided tables, in place
for dtype in [torch.float32, torch.float16, torch.bfloat16]:
    for b, s, heads, d in [(2, 7, 1, 64), (2, 5, 32, 64), (1, 3, 32, 128), (2, 3, 3, 6), (1, 2, 1, 40000), (2, 3, 4, 2)]:
        c = heads * d
        x = torch.randn(b, s, c, device=dev, dtype=dtype)
        w = torch.randn(c, device=dev, dtype=dtype)
        for tdt in {torch.float32, dtype}:
            ci, si = torch.randn(1, s, c, device=dev, dtype=tdt), torch.randn(1, s, c, device=dev, dtype=tdt)
            cs = torch.randn(b, s, heads, d // 2, device=dev, dtype=tdt).transpose(1, 2)
            ss = torch.randn(b, s, heads, d // 2, device=dev, dtype=tdt).transpose(1, 2)
            lk.rms_norm_rope(x, ci, si, w, 1e-5)
            lk.rms_norm_split_rope(x, cs, ss, None)
            lk.apply_rope(x, ci, si, True)
            lk.apply_rope(x.view(b, s, heads, d), cs, ss, False)
            xm = torch.randn(b * s * c + 1, device=dev, dtype=dtype)[1:].view(b, s, c)  # element path
            lk.rms_norm_rope(xm, ci, si, w)
            lk.rms_norm_split_rope(xm, cs, ss, w)
            x2 = x.clone()
            lk.apply_rope(x2, cs, ss, False, out=x2)
            lk.rms_norm_split_rope(x2, cs, ss, w, out=x2)
# @family:rope
# fp8 / lowbit: only when this build registered their CUDA kernels (not yet GPU-validated; see
# LTX_KERNELS_EXPERIMENTAL_QUANT_CUDA)
if torch._C._dispatch_has_kernel_for_dispatch_key(lk.add_op_namespace_prefix("quantize_fp8_block"), "CUDA"):
    # @family:fp8
    # fp8: per-token groups (register path for several group widths, loop path, scalar/misaligned),
    # both scale layouts, block tiles (regs NV 8/16, loop, ragged edges), per tensor (computed and
    # given scale, vector and scalar), and the dequantizers
    for dtype in [torch.float32, torch.float16, torch.bfloat16]:
        for f8 in [torch.float8_e4m3fn, torch.float8_e5m2]:
            for rows, cols, group in [(1, 128, 128), (7, 384, 64), (5, 8192, 4096), (3, 96, 32), (2, 16, 16)]:
                x = torch.randn(rows, cols + 8, device=dev, dtype=dtype)
                for xv in [x[:, :cols], x.reshape(-1)[1 : 1 + rows * cols].view(rows, cols)]:
                    for layout in ["row", "mn_major"]:
                        q, s = lk.quantize_fp8_per_token_group(xv, group, layout, f8)
                        lk.dequantize_fp8_per_token_group(q, s, group, dtype)
            for n, k, blk in [(1, 128, (128, 128)), (129, 300, (128, 128)), (300, 256, (256, 128)), (64, 512, (64, 512)), (5, 7, (2, 3))]:
                w = torch.randn(n, k, device=dev, dtype=dtype)
                q, s = lk.quantize_fp8_block(w, blk, f8)
                lk.dequantize_fp8_block(q, s, blk, dtype)
            for shape in [(1,), (7, 3), (129, 384)]:
                x = torch.randn(shape, device=dev, dtype=dtype)
                q, s = lk.quantize_fp8_per_tensor(x, fp8_dtype=f8)
                lk.quantize_fp8_per_tensor(x, torch.tensor(0.5, device=dev), f8)
                lk.dequantize_fp8_per_tensor(q, s, dtype)
    # @family:lowbit
    # lowbit: fp6 pack/unpack (vector + tail + misaligned scalar), per-block FP6 (ragged tiles,
    # aligned and misaligned), OCP FP6 codecs, NVFP4 (padded scale tiles, both nibble orders,
    # vector and scalar paths)
    for groups in [1, 5, 67]:
        e = torch.randint(0, 0x7E, (groups * 4 + 1,), dtype=torch.uint8, device=dev)
        for src in [e[: groups * 4], e[1:]]:
            p = lk.fp6_pack(src.view(torch.float8_e4m3fn))
            lk.fp6_unpack(p, groups * 4)
            lk.fp6_unpack(torch.cat([p.new_zeros(1), p])[1:], groups * 4)
    for dtype in [torch.float32, torch.float16, torch.bfloat16]:
        for n, k in [(1, 4), (130, 260), (7, 132)]:
            w = torch.randn(n * k + 1, device=dev, dtype=dtype)
            for ww in [w[: n * k].view(n, k), w[1:].view(n, k)]:
                p, s = lk.quantize_fp6_block(ww)
                lk.dequantize_fp6_block(p, s, k, out_dtype=dtype)
            lk.dequantize_fp6_block(p, s, k, out_dtype=dtype, out=torch.empty(n * k + 1, device=dev, dtype=dtype)[1:].view(n, k))
            for fmt in ["e2m3", "e3m2"]:
                lk.dequantize_fp6(lk.quantize_fp6(ww, fmt), fmt, dtype)
        for rows, k in [(1, 16), (129, 80), (3, 272)]:
            x = torch.randn(rows * k + 8, device=dev, dtype=dtype)
            st = lk.nvfp4_per_tensor_scale(x)
            for xx in [x[: rows * k].view(rows, k), x[1 : 1 + rows * k].view(rows, k)]:
                for hf in [True, False]:
                    p, s = lk.quantize_nvfp4(xx, st, hi_first=hf)
                    lk.dequantize_nvfp4(p, s, st, k, dtype, hi_first=hf)
                    lk.dequantize_nvfp4(torch.cat([p.new_zeros(1), p.view(-1)])[1:].view(rows, k // 2), s, st, k, dtype, hi_first=hf)
torch.cuda.synchronize()
print("sanitize smoke: done")
