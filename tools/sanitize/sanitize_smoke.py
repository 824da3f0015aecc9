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
# fp8 / lowbit (guarded: a build without CUDA registration for them skips this part)
if torch._C._dispatch_has_kernel_for_dispatch_key(lk.add_op_namespace_prefix("quantize_fp8_block"), "CUDA"):
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
# ops with FP8 output: warp-per-row (NV 4) and block-per-row (NV 4, 16) shapes, groups of
# 4..32 lanes, both scale layouts, strided / misaligned inputs (copied), in-place h_out
if torch._C._dispatch_has_kernel_for_dispatch_key(lk.add_op_namespace_prefix("rms_norm_fp8"), "CUDA"):
    F8 = torch.float8_e4m3fn
    for dtype in [torch.float32, torch.float16, torch.bfloat16]:
        for rows, cols, group in [(5, 128, 128), (3, 512, 64), (4, 1024, 128), (3, 8192, 128), (2, 16384, 128), (7, 256, 32)]:
            x = torch.randn(rows, cols + 8, device=dev, dtype=dtype)
            w = torch.randn(cols, device=dev, dtype=dtype)
            t = torch.randn(rows, cols, device=dev, dtype=dtype)
            gl = torch.randn(rows, cols // 64, device=dev, dtype=dtype)
            for xv in [x[:, :cols], x.reshape(-1)[1 : 1 + rows * cols].view(rows, cols)]:
                for layout in ["row", "mn_major"]:
                    kw = dict(out_dtype=F8, group_size=group, scale_layout=layout)
                    lk.rms_norm(xv, w, **kw)
                    lk.adaln_rms_norm(xv.unsqueeze(0), t[:1], t.unsqueeze(0), None, **kw)
                    lk.gelu_tanh(xv, **kw)
                    lk.gated_attention(xv, gl, **kw)
            h = x[:, :cols].contiguous()
            lk.gated_residual_adaln_rms_norm(h.unsqueeze(0), t.unsqueeze(0), t[:1], t[:1], t.unsqueeze(0), w, h_out=h.unsqueeze(0), out_dtype=F8, group_size=group)
            xx = torch.randn(rows, 2 * cols, device=dev, dtype=dtype)
            for af in [True, False]:
                lk.silu_and_mul(xx, af, out_dtype=F8, group_size=group)
                lk.gelu_and_mul(xx, "tanh", af, out_dtype=F8, group_size=group)
                lk.gelu_and_mul(xx, "none", af, out_dtype=F8, group_size=group, scale_layout="mn_major")
            # RMSNorm + RoPE -> fp8: interleaved [1, S, C] tables (fp32 and x's dtype), split
            # [B, H, S, d/2] per-head tables (heads of 64 and of 16 (fp32) / 16 (16-bit))
            x3 = x[:, :cols].unsqueeze(0)
            th = torch.rand(1, rows, cols, device=dev)
            lk.rms_norm_rope(x3, th.cos(), th.sin(), w, out_dtype=F8, group_size=group)
            lk.rms_norm_rope(x3, th.cos().to(dtype), th.sin().to(dtype), None, out_dtype=F8, group_size=group)
            for d in (64, 16):
                ths = torch.rand(1, cols // d, rows, d // 2, device=dev)
                lk.rms_norm_split_rope(x3, ths.cos(), ths.sin(), w, out_dtype=F8, group_size=group,
                                       scale_layout="mn_major")
# FP8 attention operands from their producers: k through norm + RoPE (interleaved and split
# tables, no mean / the leading 64 / 128 keys' mean, ragged 128-key blocks, head dims 64 / 128 /
# 256, a row stride > C), v alone (both layouts)
if torch._C._dispatch_has_kernel_for_dispatch_key(lk.add_op_namespace_prefix("attention_keys_fp8"), "CUDA"):
    for dtype in [torch.float32, torch.bfloat16]:
        for b, s, heads, d in [(2, 200, 4, 64), (1, 130, 2, 128), (1, 64, 1, 256)]:
            c = heads * d
            x = torch.randn(b, s, c + 8, device=dev, dtype=dtype)[..., :c]
            w = torch.randn(c, device=dev, dtype=dtype)
            th, ths = torch.rand(1, s, c, device=dev), torch.rand(1, heads, s, d // 2, device=dev)
            for smooth in (0, 64, 128):
                lk.attention_keys_fp8(x, th.cos(), th.sin(), w, heads=heads, smooth_keys=smooth)
                lk.attention_keys_fp8(x, ths.cos(), ths.sin(), None, heads=heads, split_rope=True, smooth_keys=smooth)
            v = torch.randn(b, s, heads, d, device=dev, dtype=dtype)
            lk.attention_values_fp8(v)
            lk.attention_values_fp8(v.transpose(1, 2).contiguous(), layout="bhsd")
# sequence-parallel pack/unpack: 16-byte and narrower words (odd D, fp8, misaligned), strided
# x / out, uneven and empty token segments, padded all_gather unpack
for dtype in [torch.bfloat16, torch.float8_e4m3fn, torch.float32]:
    for (b, h, d, w, tokens) in [(2, 4, 64, 2, [7, 3]), (1, 6, 7, 3, [0, 5, 2]), (2, 8, 128, 4, [1, 2, 3, 4])]:
        xs = [torch.randn(b, t, h, d + 1, device=dev).to(dtype)[..., :d] for t in tokens]
        packed = [lk.sp_pack_heads(x, w) for x in xs]
        recv = torch.cat([p[0].reshape(-1) for p in packed])
        y = lk.sp_unpack_heads(recv, tokens, b, h // w, d)
        sent = lk.sp_pack_tokens(y, tokens)
        lk.sp_unpack_tokens(torch.cat([p[0].reshape(-1) for p in packed[:1]] * w), w, (b, tokens[0], h, d))
        g = torch.randn(w, b, max(tokens), h, device=dev).to(dtype)
        lk.sp_unpack_gather(g, tokens)
if hasattr(lk.ops, "sp_ipc_create"):  # IPC ops, world 1 in this process
    hnd = torch.zeros(64, dtype=torch.uint8)
    cid = lk.ops.sp_ipc_create(hnd, torch.cuda.current_device(), 1 << 20)
    lk.ops.sp_ipc_open(hnd.view(1, 64), cid, 0)
    st = torch.zeros(1, dtype=torch.int32, device=dev)
    x = torch.randn(2, 9, 4, 24, device=dev).to(torch.bfloat16)
    o = torch.empty_like(x)
    lk.ops.sp_ipc_send_recv_heads(o, st, x, cid, [9], 5.0)
    lk.ops.sp_ipc_gather_heads(torch.empty_like(x), st, o, cid, [9], 5.0)
    lk.ops.sp_ipc_all_gather(torch.empty_like(x), st, x, cid, [9], 5.0)
    torch.cuda.synchronize()
    lk.ops.sp_ipc_close(hnd, cid)
# mma.sync FP8 / FP6 GEMM (backend "sm89", when built and the device is >= 8.9): BM=64 tile (small
# M, or few tiles) and BM=128 tile (>= 66 tiles of 128x128), ragged M / N, K ring wrap-around,
# bf16 / fp16, bias on / off, row-major and M-major a_scales, 16-byte and element (odd ldd) stores.
def _sm89_ok(a, b, sa):
    try:
        return lk.fp8_gemm_backend(a, b, sa, backend="sm89") == "sm89"
    except (RuntimeError, ValueError, AttributeError):
        return False


_a0 = torch.randn(8, 128, device=dev).to(torch.float8_e4m3fn)
if hasattr(lk, "fp8_blockwise_gemm") and _sm89_ok(_a0, _a0, torch.ones(8, 1, device=dev)):
    for m, n, k in [(1, 8, 128), (70, 136, 512), (300, 264, 384), (1024, 1152, 128)]:
        a = (torch.randn(m, k, device=dev) * 8).to(torch.float8_e4m3fn)
        b = (torch.randn(n, k, device=dev) * 8).to(torch.float8_e4m3fn)
        sa = torch.rand(m, k // 128, device=dev) * 1e-2
        sa_mn = torch.rand(k // 128, (m + 3) // 4 * 4, device=dev).t()[:m] * 1e-2  # (1, M_pad)
        sb = torch.rand((n + 127) // 128, k // 128, device=dev) * 1e-2
        bias = torch.randn(n, device=dev)
        lk.fp8_blockwise_gemm(a, sa, b, sb, bias, torch.bfloat16, backend="sm89")
        lk.fp8_blockwise_gemm(a, sa_mn, b, sb, None, torch.float16, backend="sm89")
        wide = torch.empty(m, n + 1, device=dev, dtype=torch.bfloat16)
        try:  # odd ldd: the element-store epilogue (the adapter may refuse such an out)
            lk.fp8_blockwise_gemm(a, sa, b, sb, bias, out=wide[:, :n], backend="sm89")
        except (RuntimeError, ValueError):
            pass
        if hasattr(lk, "fp6_blockwise_gemm"):
            bp = torch.randint(0, 256, (n, k // 4 * 3), dtype=torch.uint8, device=dev)
            lk.fp6_blockwise_gemm(a, sa, bp, sb, bias, torch.bfloat16, backend="sm89")
            lk.fp6_blockwise_gemm(a, sa_mn, bp, sb, None, torch.float16, backend="sm89")
else:
    print("sanitize smoke: sm89 GEMM not available here, skipped")
torch.cuda.synchronize()
print("sanitize smoke: done")
# neighborhood attention: tools/sanitize/sanitize_natten.py (also run alone, for the natten kernels only)
import runpy as _runpy  # noqa: E402
import os as _os  # noqa: E402

_runpy.run_path(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "sanitize_natten.py"))
# the sm_90a GEMM kernel (backend "sm90", H100/H200 builds): every tile configuration, clusters of 1
# and 2, every epilogue and the FP8 output: tools/sanitize/sanitize_gemm.py (also run alone)
if torch.cuda.get_device_capability() == (9, 0) and hasattr(lk, "bf16_gemm"):
    _runpy.run_path(_os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "sanitize_gemm.py"))
# sm_90a CUTLASS GEMM (backend "sm90_cutlass", kept for comparison): shapes chosen so that its
# heuristic (csrc/cuda/gemm/sm90_fp8_gemm_cutlass.cu) runs every compiled kernel: t64x128 ping-pong
# (M <= 64, short K; fp16), t128x128sk stream-K (M <= 64, K >= 1024, bf16), t128x128 cooperative
# (>= 132 tiles, ragged M), t128x128rs (row-major a_scales); bias on / off, padded out rows.
def _sm90_ok(a, b, sa, sb):
    try:
        return lk.fp8_gemm_backend(a, b, sa, sb, backend="sm90_cutlass") == "sm90_cutlass"
    except (RuntimeError, ValueError, AttributeError):
        return False


if hasattr(lk, "fp8_blockwise_gemm"):
    _ran = 0
    for m, n, k, layout, dt in [(5, 136, 256, "mn_major", torch.float16), (3, 264, 1024, "mn_major", torch.bfloat16),
                                (64, 1024, 2048, "mn_major", torch.bfloat16), (1537, 1536, 256, "mn_major", torch.bfloat16),
                                (1537, 1536, 256, "mn_major", torch.float16), (129, 136, 384, "row", torch.bfloat16)]:
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        a, sa = lk.quantize_fp8_per_token_group(x, 128, layout)
        b, sb = lk.quantize_fp8_block(w)
        if not _sm90_ok(a, b, sa, sb):
            continue
        bias = torch.randn(n, device=dev)
        lk.fp8_blockwise_gemm(a, sa, b, sb, bias, dt, backend="sm90_cutlass")
        out = torch.empty(m, n + 8, device=dev, dtype=dt)[:, :n]
        lk.fp8_blockwise_gemm(a, sa, b, sb, None, out=out, backend="sm90_cutlass")
        _ran += 1
    torch.cuda.synchronize()
    print(f"sanitize smoke: sm90_cutlass GEMM ran {_ran} of 6 shapes")
# blockwise FP8 / FP6 GEMMs (every backend that can run here: skinny, sm90, sm89, the torch fallback;
# both scale layouts, bias on/off, ragged M and N, row-padded out) and the NVFP4 matmul
if torch._C._dispatch_has_kernel_for_dispatch_key(lk.add_op_namespace_prefix("fp8_blockwise_gemm"), "CUDA"):
    # (16, 1000, 4096) and (33, 264, 1024): the few-token kernel with split-K (cluster or workspace)
    for m, n, k in [(1, 8, 128), (7, 24, 384), (129, 136, 256), (300, 520, 1024), (16, 1000, 4096), (33, 264, 1024)]:
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        b, sb = lk.quantize_fp8_block(w)
        bias = torch.randn(n, device=dev)
        for layout in ["row", "mn_major"]:
            a, sa = lk.quantize_fp8_per_token_group(x, 128, layout)
            for backend in ["skinny", "sm90", "sm89", "torch"]:
                for bb in [None, bias]:
                    try:
                        lk.fp8_blockwise_gemm(a, sa, b, sb, bb, backend=backend)
                        out = torch.empty(m, n + 8, device=dev, dtype=torch.float16)[:, :n]
                        lk.fp8_blockwise_gemm(a, sa, b, sb, bb, out=out, backend=backend)
                    except RuntimeError as e:
                        if "cannot run this call" not in str(e):
                            raise
        bp, sbp = lk.quantize_fp6_block(w.cpu())
        a, sa = lk.quantize_fp8_per_token_group(x, 128, "mn_major")
        for backend in ["sm89", "torch"]:
            try:
                lk.fp6_blockwise_gemm(a, sa, bp.to(dev), sbp.to(dev), bias, backend=backend)
            except RuntimeError as e:
                if "cannot run this call" not in str(e):
                    raise
        if k % 32 == 0:
            st = lk.nvfp4_per_tensor_scale(x.cpu())
            qa, ba = lk.quantize_nvfp4(x.cpu(), st)
            qb, bb_ = lk.quantize_nvfp4(w.cpu(), st)
            lk.scaled_mm_nvfp4(qa.to(dev), qb.to(dev), ba.to(dev), bb_.to(dev), (st * st).to(dev), bias)
    torch.cuda.synchronize()
