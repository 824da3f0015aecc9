"""Distributed family benchmarks: the pack/unpack kernels that sit on either side of the all_to_all of
Ulysses sequence parallelism (single GPU: the bytes a rank moves locally), against torch
permute+contiguous / cat (eager) and torch.compile of the same, same run, same method
(benchmarks/common.py). Bytes = read + write of the whole tensor. Target: >= 90% of copy."""

import torch

import ltx_kernels as lk

from common import Row, n_copies, time_graph

# (B, T_r, H, D, W): LTX-Video 2B/13B attention (32 heads x 64 / 128), LTX-2 sizes
SHAPES = [
    (1, 4096, 32, 64, 2), (1, 4096, 32, 128, 4), (2, 6144, 32, 128, 8), (1, 16384, 32, 128, 4),
    (1, 8192, 48, 128, 8),
]


def torch_pack_heads(x, w):
    b, t, h, d = x.shape
    return x.view(b, t, w, h // w, d).permute(2, 0, 1, 3, 4).contiguous()


def torch_unpack_tokens(recv, w, shape):
    b, t, h, d = shape
    return recv.view(w, b, t, h // w, d).permute(1, 2, 0, 3, 4).reshape(b, t, h, d)


def torch_unpack_heads(recv, tokens, b, hl, d):
    parts, off = [], 0
    for t in tokens:
        n = b * t * hl * d
        parts.append(recv[off:off + n].view(b, t, hl, d))
        off += n
    return torch.cat(parts, dim=1)


def _timed(base, name, fn, k):
    """Adds a baseline's time unless torch cannot run it for this dtype (e.g. fp8 cat)."""
    try:
        base[name] = time_graph(fn, k)
    except (RuntimeError, NotImplementedError, TypeError) as e:
        print(f"bench_distributed: baseline {name} skipped: {str(e).splitlines()[0][:100]}")


def run(copy_gbps, quick=False):
    rows = []
    shapes = SHAPES[:2] if quick else SHAPES
    dtypes = [torch.bfloat16] + ([] if quick else [torch.float8_e4m3fn, torch.float32])
    c_pack = torch.compile(torch_pack_heads, dynamic=False)
    c_unpack_tokens = torch.compile(torch_unpack_tokens, dynamic=False)
    for dtype in dtypes:
        for (b, t, h, d, w) in shapes:
            if dtype != torch.bfloat16 and (b, t, h, d, w) != SHAPES[1]:
                continue
            shape = (b, t, h, d)
            numel = b * t * h * d
            es = torch.empty((), dtype=dtype).element_size()
            nbytes = 2 * numel * es
            k = n_copies(nbytes)
            xs = [torch.randn(shape, device="cuda").to(dtype) for _ in range(k)]
            outs = [torch.empty(numel, device="cuda", dtype=dtype) for _ in range(k)]
            name = str(dtype).replace("torch.", "")
            # pack (send side of send_recv_heads)
            ours = time_graph(lambda i: lk.sp_pack_heads(xs[i], w, out=outs[i].view(w, b, t, h // w, d)), k)
            base = {}
            _timed(base, "permute+contiguous", lambda i: torch_pack_heads(xs[i], w), k)
            if dtype != torch.float8_e4m3fn:
                _timed(base, "torch.compile", lambda i: c_pack(xs[i], w), k)
            want = xs[0].view(torch.uint8).view(b, t, w, h // w, -1).permute(2, 0, 1, 3, 4).reshape(-1)
            ok = torch.equal(outs[0].view(torch.uint8).view(-1), want)
            rows.append(Row("sp_pack_heads", [b, t, h, d, w], name, ours, base, bytes=nbytes,
                            note=f"W={w}; byte-exact vs permute: {ok}").finish(copy_gbps))
            # unpack (receive side of send_recv_heads), uneven token counts
            hl = h // w
            tokens = [t * 2 * (s + 1) // (w + 1) for s in range(w)]
            tokens[-1] += t * w - sum(tokens)  # the same T_total = t * w tokens, uneven split
            tt = sum(tokens)
            recv_numel = b * tt * hl * d
            recvs = [torch.randn(recv_numel, device="cuda").to(dtype) for _ in range(k)]
            youts = [torch.empty((b, tt, hl, d), device="cuda", dtype=dtype) for _ in range(k)]
            ours = time_graph(lambda i: lk.sp_unpack_heads(recvs[i], tokens, b, hl, d, out=youts[i]), k)
            base = {}
            _timed(base, "cat", lambda i: torch_unpack_heads(recvs[i], tokens, b, hl, d), k)
            ok = torch.equal(youts[0].view(torch.uint8), torch_unpack_heads(recvs[0].view(torch.uint8), tokens, b, hl, d * es).view(torch.uint8))
            rows.append(Row("sp_unpack_heads", [b, tt, hl, d, w], name, ours, base, bytes=2 * recv_numel * es,
                            note=f"tokens {tokens}; byte-exact vs cat: {ok}").finish(copy_gbps))
            # unpack_tokens (receive side of gather_heads)
            ours = time_graph(lambda i: lk.sp_unpack_tokens(outs[i], w, shape, out=xs[(i + 1) % k]), k)
            base = {}
            _timed(base, "permute+reshape", lambda i: torch_unpack_tokens(outs[i], w, shape), k)
            if dtype != torch.float8_e4m3fn:
                _timed(base, "torch.compile", lambda i: c_unpack_tokens(outs[i], w, shape), k)
            rows.append(Row("sp_unpack_tokens", [b, t, h, d, w], name, ours, base, bytes=nbytes,
                            note=f"W={w}").finish(copy_gbps))
            del xs, outs, recvs, youts
            torch.cuda.empty_cache()
    return rows
