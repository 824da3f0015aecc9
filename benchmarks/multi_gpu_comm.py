"""Bus bandwidth of the Ulysses exchanges across GPUs: our SequenceParallelComm (the "ipc"
transport: our kernels store into the peers' buffers; the "nccl" transport: torch.distributed
around our pack / unpack kernels) against NCCL's own `all_to_all_single` and
`all_gather_into_tensor` on the same bytes, at LTX-Video / LTX-2 activation sizes.

    torchrun --nproc-per-node N benchmarks/multi_gpu_comm.py [--quick] [--json out.json] [--allow-dirty]

On a machine without GPUs (gloo, CPU tensors) it runs the "nccl" transport and torch's
collectives only: a check that the script works, not a measurement.

Method: per size and candidate, a barrier, warm-up calls, then `trials` timings of `iters` calls
between CUDA events (wall clock on the CPU); the median of each rank's time, and the slowest rank
is reported. Bus bandwidth as NCCL's tests define it: all-to-all and all-gather move
(W - 1) / W of the per-rank bytes S over the links, so busbw = S / t * (W - 1) / W, where S is the
bytes one rank holds after the exchange ([B, T_total, H / W, D] for send_recv_heads,
[B, T_total, C] for all_gather). The JSON's meta is benchmarks/common.py's record_meta (the
build's commit, refused from a tree that differs from it unless --allow-dirty, compilers, GPU,
clocks, command, timing) plus the world size and backend."""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

from ltx_kernels.distributed import SequenceParallelComm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import add_record_arguments, check_record, write_record  # noqa: E402

# (name, B, T per rank, H, D): attention q/k/v of LTX-Video 2B (32 x 64) and LTX-2 (32 x 128) at
# 49 / 121 frames, 512x768 / 720p, and sizes that span 1 MB - 1 GB per rank.
SHAPES = [
    ("ltxv 49f 512x768", 2, 2688, 32, 64),
    ("ltxv 121f 720p", 1, 14080, 32, 64),
    ("ltx2 49f 512x768", 2, 2688, 32, 128),
    ("ltx2 121f 720p", 1, 14080, 32, 128),
    ("1 MB", 1, 256, 16, 128),
    ("1 GB", 1, 262144, 16, 128),
]


def timed(fn, iters, trials, cuda):
    for _ in range(3):
        fn()
    if cuda:
        torch.cuda.synchronize()
    dist.barrier()
    out = []
    for _ in range(trials):
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(iters):
                fn()
            e.record()
            e.synchronize()
            out.append(s.elapsed_time(e) * 1e3 / iters)
        else:
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            out.append((time.perf_counter() - t0) * 1e6 / iters)
    us = torch.tensor([statistics.median(out)], dtype=torch.float64)
    dist.all_reduce(us, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
    return float(us.item())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the two smallest shapes, few trials")
    ap.add_argument("--json", default=None)
    ap.add_argument("--max-world-tokens", type=int, default=1 << 22, help="skip shapes above B*T*W tokens")
    add_record_arguments(ap)
    args = ap.parse_args()
    if int(os.environ.get("RANK", "0")) == 0:
        check_record(args.json, args.allow_dirty)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo")
    W, rank = dist.get_world_size(), dist.get_rank()
    dev = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    dtype = torch.bfloat16 if cuda else torch.float32
    shapes = sorted(SHAPES, key=lambda s: s[1] * s[2] * s[3] * s[4])[:2] if args.quick else SHAPES
    iters, trials = (2, 3) if args.quick else (10, 11)
    rows = []
    for name, b, t, h, d in shapes:
        if b * t * W > args.max_world_tokens or h % W:
            continue
        x = torch.randn(b, t, h, d, device=dev).to(dtype)
        tokens = [t] * W
        esz = x.element_size()
        s_bytes = b * t * W * (h // W) * d * esz  # one rank's bytes after the exchange
        comms = {"nccl": SequenceParallelComm(None, transport="nccl")}
        if cuda:
            try:
                comms["ipc"] = SequenceParallelComm(None, max_tokens=b * t * W, hidden=h * d, dtype=dtype,
                                                    transport="ipc")
            except RuntimeError as e:
                if rank == 0:
                    print(f"ipc transport unavailable: {e}")
        send = x.view(b, t, W, h // W, d).permute(2, 0, 1, 3, 4).contiguous()
        recv = torch.empty_like(send)
        g_in = x.reshape(b, t, h * d)
        g_out = torch.empty((W * b, t, h * d), dtype=dtype, device=dev)
        cands = {"torch all_to_all_single (packed input)":
                 lambda: dist.all_to_all_single(recv.view(-1), send.view(-1)),
                 "torch all_gather_into_tensor":
                 lambda: dist.all_gather_into_tensor(g_out.view(-1), g_in.contiguous().view(-1))}
        for tr, comm in comms.items():
            cands[f"ours send_recv_heads [{tr}]"] = lambda c=comm: c.send_recv_heads(x, tokens)
            cands[f"ours all_gather [{tr}]"] = lambda c=comm: c.all_gather(g_in, tokens)
        for cand, fn in cands.items():
            us = timed(fn, iters, trials, cuda)
            gather = "gather" in cand
            nbytes = (W * b * t * h * d * esz) if gather else s_bytes
            busbw = nbytes / (us * 1e-6) * (W - 1) / W / 1e9
            rows.append(dict(shape=name, B=b, T_rank=t, H=h, D=d, world=W, candidate=cand, us=round(us, 2),
                             bytes_per_rank=nbytes, busbw_gbps=round(busbw, 1)))
            if rank == 0:
                print(f"{name:18s} W={W} {cand:42s} {us:10.1f} us  busbw {busbw:8.1f} GB/s", flush=True)
        for c in comms.values():
            c.close()
    if rank == 0 and args.json:
        timing = {"timer": "CUDA events around a batch of calls (wall clock on the CPU)",
                  "warmup": "3 calls, then a barrier", "repeats": f"{trials} timings of {iters} calls",
                  "statistic": "median per rank, the slowest rank reported; busbw = S / t * (W - 1) / W"}
        write_record(args.json, rows, "benchmarks/multi_gpu_comm.py", sys.argv[1:], timing, args.allow_dirty,
                     world=W, backend=dist.get_backend(), launcher=f"torchrun --nproc-per-node {W}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
