"""The IPC transport of SequenceParallelComm (our kernels storing into the peers' CUDA IPC buffers,
system-scope barriers, timeout). Several processes share the one GPU (CUDA IPC works between
processes on one device; the control plane is a gloo group); a multi-GPU case runs when >= 2 GPUs
are present. References come from all_gather of every rank's input (ltx_kernels.reference).
Skips without a GPU."""

import os
import re
import tempfile
import time

import pytest
import torch
import torch.multiprocessing as mp

import ltx_kernels as lk
from ltx_kernels import reference as ref

from conftest import HAS_CUDA, assert_bytes, has_cuda_kernel, rand_bytes

pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")

DTYPES = [torch.bfloat16, torch.float16, torch.float32, torch.float8_e4m3fn]


def _gather(dist, x):
    xs = [None] * dist.get_world_size()  # as bytes: float8 tensors do not pickle
    dist.all_gather_object(xs, x.cpu().contiguous().view(torch.uint8))
    return [v.view(x.dtype) for v in xs]


def _worker(rank, world, init_file, mode, errors):
    import torch.distributed as dist

    try:
        dev = rank % torch.cuda.device_count() if mode == "multi_gpu" else 0
        torch.cuda.set_device(dev)
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
        b, h, d = 2, 2 * world, 64
        max_tokens = b * 64 * world
        if mode in ("roundtrip", "multi_gpu"):
            for dtype in DTYPES:
                comm = lk.distributed.SequenceParallelComm(None, max_tokens=max_tokens, hidden=h * d, dtype=dtype,
                                                           transport="ipc", timeout_s=30.0)
                assert comm.transport == "ipc"
                for tokens in [[16] * world, [13, 0, 29][:world] + [5] * max(0, world - 3), [1 + 7 * s for s in range(world)]]:
                    for rep in range(2):  # buffers reused across calls
                        x = rand_bytes((b, tokens[rank], h, d), dtype, "cuda")
                        xs = _gather(dist, x)
                        y = comm.send_recv_heads(x, tokens)
                        assert_bytes(y, ref.sp_send_recv_heads(xs, rank))
                        back = comm.gather_heads(y)
                        assert_bytes(back, x)
                        ys = _gather(dist, y)
                        assert_bytes(back, ref.sp_gather_heads(ys, tokens, rank))
                        g = comm.all_gather(x)
                        assert_bytes(g, ref.sp_all_gather(xs))
                        g3 = comm.all_gather(x[:, :, 1, 3:])  # strided, odd row width
                        assert_bytes(g3, ref.sp_all_gather([v[:, :, 1, 3:] for v in xs]))
                # a side stream: ops run on the current stream
                s = torch.cuda.Stream()
                comm.reset_tokens()
                with torch.cuda.stream(s):
                    x = rand_bytes((b, 9, h, d), dtype, "cuda")
                    y = comm.send_recv_heads(x)
                s.synchronize()
                assert_bytes(y, ref.sp_send_recv_heads(_gather(dist, x), rank))
                # the IPC path agrees with the nccl-transport path (gloo here: CPU copies)
                comm_n = lk.distributed.SequenceParallelComm(None, transport="nccl", device="cpu")
                assert_bytes(comm_n.send_recv_heads(x.cpu(), [9] * world), y)
                comm.close()
        elif mode == "timeout":
            comm = lk.distributed.SequenceParallelComm(None, max_tokens=max_tokens, hidden=h * d,
                                                       dtype=torch.bfloat16, transport="ipc", timeout_s=2.0)
            x = torch.randn(b, 8, h, d, device="cuda", dtype=torch.bfloat16)
            y = comm.send_recv_heads(x, [8] * world)  # one good round first
            assert_bytes(y, ref.sp_send_recv_heads(_gather(dist, x), rank))
            dist.barrier()
            missing = world - 1
            if rank != missing:
                t0 = time.monotonic()
                with pytest.raises(RuntimeError, match=re.escape(
                        f"ltx_kernels.send_recv_heads: rank {missing} did not arrive within 2.0 s")):
                    comm.send_recv_heads(x, [8] * world)
                elapsed = time.monotonic() - t0
                assert elapsed < 2.0 + 20.0, elapsed  # bounded (time slicing on a shared GPU is slow)
                with pytest.raises(RuntimeError, match="unusable after an earlier timeout"):
                    comm.send_recv_heads(x, [8] * world)
                # the process is still usable
                assert torch.ones(1000, device="cuda").sum().item() == 1000.0
            dist.barrier()
            comm.close()
        dist.barrier()
        dist.destroy_process_group()
    except BaseException:
        import traceback

        errors.put(f"rank {rank}: {traceback.format_exc()}")
        raise


def _spawn(world, mode):
    if not has_cuda_kernel("sp_ipc_send_recv_heads"):
        pytest.skip("IPC kernels not in this build")
    ctx = mp.get_context("spawn")
    errors = ctx.SimpleQueue()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            mp.spawn(_worker, args=(world, os.path.join(tmp, "init"), mode, errors), nprocs=world, join=True)
        except Exception as e:
            msgs = []
            while not errors.empty():
                msgs.append(errors.get())
            raise AssertionError("\n".join(msgs) or str(e))


@pytest.mark.parametrize("world", [2, 3])
def test_ipc_one_gpu_roundtrip(world):
    _spawn(world, "roundtrip")


def test_ipc_timeout_names_missing_rank():
    _spawn(3, "timeout")


@pytest.mark.skipif(not HAS_CUDA or torch.cuda.device_count() < 2, reason="needs >= 2 GPUs")
def test_ipc_multi_gpu():
    _spawn(min(torch.cuda.device_count(), 4), "multi_gpu")


def test_ipc_kernels_single_process_world1():
    """World 1 through the IPC ops in this process (no spawn): barrier + copy + copy-out."""
    if not has_cuda_kernel("sp_ipc_send_recv_heads"):
        pytest.skip("IPC kernels not in this build")
    handle = torch.zeros(64, dtype=torch.uint8)
    cid = lk.ops.sp_ipc_create(handle, torch.cuda.current_device(), 1 << 20)
    try:
        lk.ops.sp_ipc_open(handle.view(1, 64), cid, 0)
        status = torch.zeros(1, dtype=torch.int32, device="cuda")
        x = rand_bytes((2, 11, 4, 24), torch.bfloat16, "cuda")
        out = torch.empty_like(x)
        lk.ops.sp_ipc_send_recv_heads(out, status, x, cid, [11], 5.0)
        assert_bytes(out, x)
        back = torch.empty_like(x)
        lk.ops.sp_ipc_gather_heads(back, status, out, cid, [11], 5.0)
        assert_bytes(back, x)
        assert status.item() == 0
        with pytest.raises(RuntimeError, match=re.escape("ltx_kernels.send_recv_heads: the call needs a receive buffer")):
            big = torch.empty(2, 1 << 16, 4, 8, device="cuda", dtype=torch.bfloat16)
            lk.ops.sp_ipc_send_recv_heads(torch.empty_like(big), status, big, cid, [1 << 16], 5.0)
    finally:
        lk.ops.sp_ipc_close(handle, cid)
