"""Neighborhood attention benchmarks: ours vs FlexAttention with NATTEN's neighborhood block
mask (torch.compile'd flex, where the mask fits) on LTX-2 decoder stage shapes (d = 64, heads =
stage channels / 64), and full SDPA over all tokens (capped at 32768 tokens) as the attention
ceiling rate at the same head dim.

Reported: attended TFLOP/s = 4 d x (query, key) pairs inside the windows / time (every window is
full for non-causal NA, so pairs = tokens x prod(kernel) x heads x B), its fraction of SDPA's
TFLOP/s measured in the same run (the row's ceiling), and the speedup over flex. The note also
gives the portable mma.sync kernel's time (what GPUs other than sm_90 run)."""

import math

import torch
import torch.nn.functional as F

import ltx_kernels as lk

from common import Row, n_copies, time_graph

# (B, T, H, W, heads, d), kernel: LTX-2 decoder stages (channels 2048/1024/512/512/256 -> 32/16/8/8/4
# heads of 64; kernels (3,7,7), (3,7,7), (3,5,5), (3,5,5), stage 5 (11,11,11)).
SHAPES = [
    ((1, 18, 16, 24, 32, 64), (3, 7, 7)),     # stage 1 of a 121x512x768 video (+2 padded frames)
    ((1, 18, 32, 48, 16, 64), (3, 7, 7)),     # stage 2
    ((1, 16, 64, 96, 16, 64), (3, 7, 7)),
    ((1, 16, 64, 96, 8, 64), (3, 5, 5)),
    ((1, 36, 32, 48, 8, 64), (3, 5, 5)),      # stage 3
    ((1, 32, 128, 192, 8, 64), (3, 5, 5)),
    ((1, 32, 128, 192, 4, 64), (3, 7, 7)),
    ((1, 16, 32, 48, 4, 64), (11, 11, 11)),   # stage-5 window
]
QUICK = [0, 3]
FLEX_MAX_TOKENS = 1 << 17  # the block mask of larger grids does not fit / takes minutes to build
SDPA_MAX_TOKENS = 32768


def _flex_fn(T, H, W, kernel, device):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    kt, kh, kw = kernel
    hw = H * W

    def mask_mod(b, h, q_idx, kv_idx):
        qt, qr = q_idx // hw, q_idx % hw
        qh, qw = qr // W, qr % W
        kt_, kr = kv_idx // hw, kv_idx % hw
        kh_, kw_ = kr // W, kr % W
        st = torch.clamp(qt - kt // 2, 0, T - kt)
        sh = torch.clamp(qh - kh // 2, 0, H - kh)
        sw = torch.clamp(qw - kw // 2, 0, W - kw)
        return ((kt_ >= st) & (kt_ < st + kt) & (kh_ >= sh) & (kh_ < sh + kh) & (kw_ >= sw) & (kw_ < sw + kw))

    S = T * H * W
    mask = create_block_mask(mask_mod, B=None, H=None, Q_LEN=S, KV_LEN=S, device=device)
    compiled = torch.compile(flex_attention, dynamic=False)
    return lambda q, k, v: compiled(q, k, v, block_mask=mask)


def _sdpa_tflops(heads, d, tokens, dtype):
    S = min(tokens, SDPA_MAX_TOKENS)
    q, k, v = (torch.randn(1, heads, S, d, device="cuda", dtype=dtype) for _ in range(3))
    us = time_graph(lambda i: F.scaled_dot_product_attention(q, k, v), 1, reps=5, trials=7)
    del q, k, v
    return 4 * S * S * d * heads / (us * 1e-6) / 1e12, S


def run(copy_gbps, quick=False):
    rows = []
    dtype = torch.bfloat16
    shapes = [SHAPES[i] for i in QUICK] if quick else SHAPES
    for shape, kernel in shapes:
        B, T, H, W, heads, d = shape
        tokens = T * H * W
        per_call = 4 * B * tokens * heads * d * 2
        nsets = n_copies(per_call)
        sets = [[torch.randn(shape, device="cuda", dtype=dtype) for _ in range(3)] for _ in range(nsets)]
        outs = [torch.empty(shape, device="cuda", dtype=dtype) for _ in range(nsets)]
        ours = time_graph(lambda i: lk.na3d(*sets[i], kernel, out=outs[i]), nsets)
        # the portable mma.sync kernel (what non-sm_90 GPUs run), for the record
        with lk.developer_config(LTX_KERNELS_NATTEN_SM90="0"):
            portable = time_graph(lambda i: lk.na3d(*sets[i], kernel, out=outs[i]), nsets)
        lk.na3d(*sets[0], kernel, out=outs[0])  # outs[0] from the automatic path for the flex check
        flops = 4 * d * B * heads * tokens * math.prod(kernel)
        tflops = flops / (ours * 1e-6) / 1e12
        base, note = {}, []
        if tokens <= FLEX_MAX_TOKENS:
            try:
                flex = _flex_fn(T, H, W, kernel, "cuda")
                tsets = [[t.reshape(B, tokens, heads, d).transpose(1, 2) for t in s] for s in sets]
                base["flex (compiled)"] = time_graph(lambda i: flex(*tsets[i]), nsets)
                # correctness of what was timed: ours vs flex on one set
                yf = flex(*tsets[0]).transpose(1, 2).reshape(shape)
                note.append(f"max |ours - flex| {(outs[0].float() - yf.float()).abs().max().item():.2e}")
            except Exception as e:  # noqa: BLE001 - report, do not abort the run
                note.append(f"flex failed: {type(e).__name__}")
        else:
            note.append("flex skipped: block mask too large")
        sdpa, s_tok = _sdpa_tflops(heads, d, tokens, dtype)
        r = Row("na3d", list(shape), "bfloat16", ours, base, flops=flops).finish(copy_gbps)
        r.against("SDPA", sdpa, sdpa_TFLOPs=sdpa, sdpa_tokens=s_tok)
        note.insert(0, f"kernel {kernel}, {tflops:.1f} attended TFLOP/s = {100 * tflops / sdpa:.1f}% of SDPA; "
                       f"portable mma.sync kernel {portable:.1f} us ({portable / ours:.2f}x ours)")
        r.note = "; ".join(note)
        rows.append(r)
        del sets, outs
        torch.cuda.empty_cache()
    return rows
