"""Sequence-parallel (distributed family): pack/unpack kernels against ltx_kernels.reference (concat /
slice from the definition), byte for byte, single process (an all_to_all simulated by slicing
the packed buffers); then the "nccl" transport of SequenceParallelComm in several CPU processes
over gloo (world 2 and 3, uneven token counts) against a reference built from all_gather.
The IPC transport is tested in test_distributed_ipc.py (needs a GPU)."""

import os
import re
import tempfile

import pytest
import torch
import torch.multiprocessing as mp

import ltx_kernels as lk
from ltx_kernels import reference as ref

from conftest import ALL_DEVICES, HAS_CUDA, assert_bytes, expect_error, rand_bytes

# every dtype is moved as bytes: random BYTES (NaN/inf patterns included) must come back as is
COMM_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn]


def sentinel_like(shape, dtype, device):
    n = 1
    for v in shape:
        n *= v
    return torch.full((n * dtype.itemsize,), 0x5A, dtype=torch.uint8).view(dtype).reshape(shape).to(device)


def simulate(xs, world, device):
    """send_recv_heads then gather_heads for every rank, with the all_to_all done by slicing the
    packed buffers. Returns (ys, back)."""
    b, _, h, d = xs[0].shape
    hl = h // world
    tokens = [x.shape[1] for x in xs]
    packed = [lk.sp_pack_heads(x, world) for x in xs]  # [W, B, T_s, Hl, D] each
    ys = []
    for r in range(world):
        recv = torch.cat([packed[s][r].reshape(-1) for s in range(world)])
        out = sentinel_like((b, sum(tokens), hl, d), xs[0].dtype, device)
        ys.append(lk.sp_unpack_heads(recv, tokens, b, hl, d, out=out))
    sends = [lk.sp_pack_tokens(y, tokens) for y in ys]  # concat over destinations
    back = []
    for r in range(world):
        chunks = []
        for s in range(world):
            seg = sends[s].view(-1)
            start = b * sum(tokens[:r]) * hl * d
            chunks.append(seg[start:start + b * tokens[r] * hl * d])
        recv = torch.cat(chunks)
        out = sentinel_like((b, tokens[r], h, d), xs[0].dtype, device)
        back.append(lk.sp_unpack_tokens(recv, world, (b, tokens[r], h, d), out=out))
    return ys, back


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", COMM_DTYPES)
@pytest.mark.parametrize("world,tokens,heads,d", [
    (1, [5], 3, 8),
    (2, [7, 3], 4, 64),
    (3, [0, 11, 5], 6, 7),
    (4, [1, 2, 3, 4], 8, 128),
    (3, [83, 111, 1], 3, 83),
    (2, [4, 4], 2, 1),
])
def test_send_recv_and_gather_heads_simulated(device, dtype, world, tokens, heads, d):
    b = 2
    xs = [rand_bytes((b, t, heads, d), dtype, device) for t in tokens]
    ys, back = simulate(xs, world, device)
    for r in range(world):
        assert_bytes(ys[r], ref.sp_send_recv_heads([x.cpu() for x in xs], r))
        assert_bytes(back[r], xs[r])
        assert_bytes(back[r], ref.sp_gather_heads([y.cpu() for y in ys], tokens, r))


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", COMM_DTYPES)
def test_pack_heads_matches_permute(device, dtype):
    b, t, w, hl, d = 3, 37, 4, 2, 48
    x = rand_bytes((b, t, w * hl, d), dtype, device)
    got = lk.sp_pack_heads(x, w)
    want = x.cpu().view(torch.uint8).view(b, t, w, hl, -1).permute(2, 0, 1, 3, 4)
    assert torch.equal(got.cpu().view(torch.uint8), want.contiguous())


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_strided_inputs_and_outputs(device, dtype):
    b, h, d, world = 2, 6, 40, 3
    tokens = [9, 0, 13]
    # x as a transposed view of [B, H, T, D] (SDPA's layout) and as a slice of a wider last dim
    xs = [rand_bytes((b, h, t, d), dtype, device).transpose(1, 2) for t in tokens]
    xs[2] = rand_bytes((b, tokens[2], h, d + 8), dtype, device)[..., 3:3 + d]  # misaligned
    packed = [lk.sp_pack_heads(x, world) for x in xs]
    for s in range(world):
        row = (h // world) * d * dtype.itemsize
        want = xs[s].cpu().contiguous().view(torch.uint8).reshape(b, tokens[s], world, row).permute(2, 0, 1, 3)
        assert torch.equal(packed[s].cpu().view(torch.uint8).reshape(want.shape), want)
    # unpack into a strided out (a [B, Hl, T, D] tensor transposed) and into a column slice
    r, hl, tt = 1, h // world, sum(tokens)
    recv = torch.cat([packed[s][r].reshape(-1) for s in range(world)])
    out_t = torch.empty((b, hl, tt, d), dtype=dtype, device=device).transpose(1, 2)
    lk.sp_unpack_heads(recv, tokens, b, hl, d, out=out_t)
    want = ref.sp_send_recv_heads([x.cpu() for x in xs], r)
    assert_bytes(out_t, want)
    wide = torch.empty((b, tt, hl, d + 5), dtype=dtype, device=device)
    lk.sp_unpack_heads(recv, tokens, b, hl, d, out=wide[..., 1:1 + d])
    assert_bytes(wide[..., 1:1 + d], want)
    # pack_tokens from a strided y equals pack_tokens from its contiguous copy
    assert_bytes(lk.sp_pack_tokens(out_t, tokens), lk.sp_pack_tokens(out_t.contiguous(), tokens))


@pytest.mark.parametrize("device", ALL_DEVICES)
@pytest.mark.parametrize("dtype", COMM_DTYPES)
@pytest.mark.parametrize("rest", [(), (5,), (3, 16)])
def test_unpack_gather(device, dtype, rest):
    tokens, b = [3, 0, 7, 2], 2
    tmax = max(tokens)
    xs = [rand_bytes((b, t, *rest), dtype, device) for t in tokens]
    recv = sentinel_like((len(tokens), b, tmax, *rest), dtype, device)
    for s, x in enumerate(xs):
        recv[s, :, : tokens[s]] = x
    got = lk.sp_unpack_gather(recv, tokens)
    assert_bytes(got, ref.sp_all_gather([x.cpu() for x in xs]))


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_empty(device):
    x = torch.empty((2, 0, 4, 8), device=device)
    assert lk.sp_pack_heads(x, 2).numel() == 0
    y = lk.sp_unpack_heads(torch.empty(0, device=device), [0, 0], 2, 2, 8)
    assert y.shape == (2, 0, 2, 8)
    assert lk.sp_pack_tokens(y, [0, 0]).numel() == 0
    assert lk.sp_unpack_tokens(torch.empty(0, device=device), 2, (2, 0, 4, 8)).shape == (2, 0, 4, 8)
    assert lk.sp_unpack_gather(torch.empty((2, 3, 0, 5), device=device), [0, 0]).shape == (3, 0, 5)


@pytest.mark.isolated
def test_errors():
    x = torch.randn(2, 3, 5, 8)
    expect_error("sp_pack_heads", lambda: lk.sp_pack_heads(x, 2), "heads H = x.shape[2] must be divisible by world")
    expect_error("sp_pack_heads", lambda: lk.ops.sp_pack_heads(torch.empty(10), torch.randn(10), 1), "x must be 4-D")
    expect_error("sp_pack_heads", lambda: lk.sp_pack_heads(torch.randn(1, 1, 65, 1), 65), "world must be in [1, 64]")
    expect_error("sp_pack_heads", lambda: lk.ops.sp_pack_heads(torch.empty(239), x, 5), "out must have 240 elements")
    expect_error("sp_pack_heads", lambda: lk.ops.sp_pack_heads(torch.empty(240, dtype=torch.float16), x, 5), "out and x must have the same dtype")
    expect_error("sp_unpack_heads", lambda: lk.ops.sp_unpack_heads(torch.empty(2, 5, 1, 8), torch.empty(80), [1, 3]), "out.shape[1] must be sum(tokens) = 4")
    expect_error("sp_unpack_heads", lambda: lk.ops.sp_unpack_heads(torch.empty(2, 2, 1, 8), torch.empty(32), [3, -1]), "token counts must be >= 0")
    expect_error("sp_unpack_heads", lambda: lk.ops.sp_unpack_heads(torch.empty(2, 4, 1, 8), torch.empty(128, 2)[:, 0], [1, 3]), "recv must be contiguous")
    buf = torch.empty(64)
    expect_error("sp_unpack_tokens", lambda: lk.ops.sp_unpack_tokens(buf.view(1, 2, 4, 8), buf, 2), "out must not overlap recv")
    expect_error("sp_pack_tokens", lambda: lk.ops.sp_pack_tokens(torch.empty(64), torch.empty(1, 4, 2, 8), [1, 1]), "y.shape[1] must be sum(tokens)")
    expect_error("sp_pack_heads", lambda: lk.sp_pack_heads(torch.zeros(1, 1, 2, 2, dtype=torch.complex128), 2), "x must have 1, 2, 4 or 8-byte elements")


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_opcheck(device):
    b, h, d, w = 2, 4, 8, 2
    tokens = [3, 5]
    x = torch.randn(b, 3, h, d, device=device)
    torch.library.opcheck(lk.ops.sp_pack_heads.default, (torch.empty(x.numel(), device=device), x, w))
    y = torch.randn(b, 8, h // w, d, device=device)
    torch.library.opcheck(lk.ops.sp_unpack_heads.default, (torch.empty_like(y), torch.randn(y.numel(), device=device), tokens))
    torch.library.opcheck(lk.ops.sp_pack_tokens.default, (torch.empty(y.numel(), device=device), y, tokens))
    torch.library.opcheck(lk.ops.sp_unpack_tokens.default, (torch.empty_like(x), torch.randn(x.numel(), device=device), w))
    torch.library.opcheck(lk.ops.sp_unpack_gather.default, (torch.empty(b, 8, 6, device=device), torch.randn(2, b, 5, 6, device=device), tokens))


@pytest.mark.parametrize("device", ALL_DEVICES)
def test_compile_fullgraph(device):
    tokens = [3, 5]

    def f(x, recv):
        p = lk.sp_pack_heads(x, 2)
        y = lk.sp_unpack_heads(recv, tokens, 2, 2, 8)
        return p, y

    x = torch.randn(2, 3, 4, 8, device=device)
    recv = torch.randn(2 * 8 * 2 * 8, device=device)
    p, y = torch.compile(f, fullgraph=True)(x, recv)
    pe, ye = f(x, recv)
    assert torch.equal(p, pe) and torch.equal(y, ye)


# ---- several CPU processes over gloo: the "nccl" transport (torch.distributed + our pack/unpack)
def _gloo_worker(rank, world, init_file, transport, errors):
    import torch.distributed as dist

    try:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
        torch.manual_seed(1234 + rank)
        comm = lk.distributed.SequenceParallelComm(None, max_tokens=0, hidden=0, transport=transport, device="cpu")
        assert comm.transport == "nccl"
        patterns = [[5] * world, [7, 0, 3][:world] if world <= 3 else None, [1 + 4 * s for s in range(world)]]
        for dtype in COMM_DTYPES:
            for tokens in [p for p in patterns if p is not None]:
                b, h, d = 2, 2 * world, 24
                x = rand_bytes((b, tokens[rank], h, d), dtype, "cpu")
                xs = [None] * world  # the reference sees every rank's input (as bytes: fp8 does not pickle)
                dist.all_gather_object(xs, x.contiguous().view(torch.uint8))
                xs = [v.view(dtype) for v in xs]
                comm.reset_tokens()
                y = comm.send_recv_heads(x)  # counts exchanged (and cached) by the call
                assert_bytes(y, ref.sp_send_recv_heads(xs, rank))
                y2 = comm.send_recv_heads(x, tokens)  # told
                assert_bytes(y2, y)
                back = comm.gather_heads(y)
                assert_bytes(back, x)
                g = comm.all_gather(x[:, :, 0])  # [B, T_r, D]
                assert_bytes(g, ref.sp_all_gather([v[:, :, 0] for v in xs]))
                g4 = comm.all_gather(x)
                assert_bytes(g4, ref.sp_all_gather(xs))
        # UlyssesAttention equals attention over the whole sequence, this rank's rows
        b, h, d = 1, 2 * world, 16
        tokens = [3 + 2 * s for s in range(world)]
        q, k, v = (torch.randn(b, sum(tokens), h, d, generator=torch.Generator().manual_seed(7 + i)) for i in range(3))
        lo = sum(tokens[:rank])
        sl = slice(lo, lo + tokens[rank])
        comm.reset_tokens()
        ua = lk.distributed.UlyssesAttention(comm)
        o = ua(q[:, sl].contiguous(), k[:, sl].contiguous(), v[:, sl].contiguous())
        # against attention over the whole sequence in float64, under the fp32 attention bound
        from bounds import sdpa_e32
        from conftest import assert_close_to

        qd, kd, vd = q.double(), k.double(), v.double()
        full = torch.nn.functional.scaled_dot_product_attention(qd.transpose(1, 2), kd.transpose(1, 2),
                                                                vd.transpose(1, 2)).transpose(1, 2)
        assert_close_to(o, full[:, sl], torch.float32, sdpa_e32(q, k, v)[:, sl])
        with pytest.raises(ValueError, match=re.escape("ltx_kernels.send_recv_heads: this rank's token count changed")):
            comm.send_recv_heads(torch.randn(1, 100, h, d))
        with pytest.raises(ValueError, match=re.escape(f"ltx_kernels.send_recv_heads: heads H = {world + 1} must be divisible")):
            comm.send_recv_heads(torch.randn(1, 2, world + 1, 4))
        dist.barrier()
        dist.destroy_process_group()
    except BaseException as e:  # report to the parent with the rank
        import traceback

        errors.put(f"rank {rank}: {traceback.format_exc()}")
        raise


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("transport", ["nccl", "auto"])
def test_gloo_multiprocess(world, transport):
    if transport == "auto" and world == 3:
        pytest.skip("auto with CPU devices is covered at world 2")
    ctx = mp.get_context("spawn")
    errors = ctx.SimpleQueue()
    with tempfile.TemporaryDirectory() as tmp:
        init_file = os.path.join(tmp, "init")
        try:
            mp.spawn(_gloo_worker, args=(world, init_file, transport, errors), nprocs=world, join=True)
        except Exception as e:
            msgs = []
            while not errors.empty():
                msgs.append(errors.get())
            raise AssertionError("\n".join(msgs) or str(e))
