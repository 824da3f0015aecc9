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
# @family:fp8
# @family:lowbit
torch.cuda.synchronize()
print("sanitize smoke: done")
