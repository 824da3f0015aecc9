"""Ulysses sequence-parallel attention for LTX-style video self-attention, runnable:

    torchrun --nproc-per-node 2 examples/ulysses_ltx.py [--tokens 8190] [--heads 32] [--head-dim 64]
             [--transport auto|ipc|nccl] [--dtype bf16|fp16|fp32]

Every rank builds the same q, k, v [1, T, H, D] (fixed seed), keeps its share of the tokens
(uneven when T % W != 0), runs UlyssesAttention (send_recv_heads on q/k/v, SDPA over all tokens
for its H/W heads, gather_heads back), checks the result against unsharded attention on its rows,
then times the exchange. More processes than GPUs share a GPU (the IPC transport works between
processes on one device; the control plane is then gloo, since NCCL needs one GPU per rank).
Without CUDA it runs on CPU over gloo (transport "nccl": torch.distributed + our pack/unpack)."""

import argparse
import os
import time

import torch
import torch.distributed as dist

import ltx_kernels as lk


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=8190)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--transport", default="auto")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[a.dtype]

    cuda = torch.cuda.is_available()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        ngpu = torch.cuda.device_count()
        torch.cuda.set_device(local % ngpu)
        backend = "nccl" if world <= ngpu else "gloo"
        device = torch.device("cuda", local % ngpu)
    else:
        backend, device, dtype = "gloo", torch.device("cpu"), torch.float32
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    if a.heads % world:
        raise SystemExit(f"--heads {a.heads} must be divisible by the world size {world}")

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, a.tokens, a.heads, a.head_dim, generator=g).to(device, dtype) for _ in range(3))
    shares = [s.shape[1] for s in torch.tensor_split(q, world, dim=1)]
    lo = sum(shares[:rank])
    mine = slice(lo, lo + shares[rank])

    comm = lk.distributed.SequenceParallelComm(
        None, max_tokens=a.tokens, hidden=a.heads * a.head_dim, dtype=dtype, transport=a.transport, device=device)
    attn = lk.distributed.UlyssesAttention(comm)
    out = attn(q[:, mine].contiguous(), k[:, mine].contiguous(), v[:, mine].contiguous())

    full = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)[:, mine]
    err = (out.float() - full.float()).abs().max().item()
    tol = {torch.float32: 1e-4, torch.float16: 2e-3, torch.bfloat16: 2e-2}[dtype]
    ok = err <= tol

    # timing of the exchange alone: send_recv_heads + gather_heads of one [1, T_r, H, D] tensor
    x = q[:, mine].contiguous()
    for _ in range(3):
        comm.gather_heads(comm.send_recv_heads(x))
    if cuda:
        torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(a.iters):
        comm.gather_heads(comm.send_recv_heads(x))
    if cuda:
        torch.cuda.synchronize()
    us = (time.perf_counter() - t0) / a.iters * 1e6
    line = (f"rank {rank}/{world} transport={comm.transport} backend={backend} tokens {shares[rank]}/{a.tokens} "
            f"max|err| vs unsharded attention {err:.2e} ({'ok' if ok else 'FAIL'}); "
            f"send_recv_heads+gather_heads {us:.0f} us")
    print(line, flush=True)
    comm.close()
    dist.barrier()
    dist.destroy_process_group()
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
