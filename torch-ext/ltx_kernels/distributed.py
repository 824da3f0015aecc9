"""Sequence parallel (Ulysses) communication: LTX-2's `all2all` (docs/semantics.md, section
"Sequence-parallel all-to-all").

    comm = SequenceParallelComm(group, max_tokens, hidden, dtype, transport="auto")
    y = comm.send_recv_heads(x)     # [B, T_r, H, D] -> [B, T_total, H/W, D]
    x2 = comm.gather_heads(y)       # the exact inverse: [B, T_total, H/W, D] -> [B, T_r, H, D]
    g = comm.all_gather(x)          # [B, T_r, ...] -> [B, T_total, ...]

Rank r receives heads [r*H/W, (r+1)*H/W) of every rank; source s's tokens land at offset
prefix[s] = sum(T_0 .. T_{s-1}). Ranks may hold different token counts: each call is told them
(`tokens=[T_0, ..., T_{W-1}]`) or exchanges them once (one small all_gather) and caches them;
`reset_tokens()` on every rank forgets them when the counts change. Every copy moves bytes, so round trips are byte-exact for any
dtype (bf16, fp16, fp32, float8_e4m3fn ...).

Transports (one API):
  "nccl"  torch.distributed (all_to_all_single / all_gather_into_tensor, any backend, gloo on CPU
          included) with our pack/unpack kernels on either side (sp_pack_heads, ...).
  "ipc"   one node, <= 8 GPUs (or several processes sharing one GPU): our kernels store straight
          into the peers' receive buffers (CUDA IPC, opened once at construction for max_tokens)
          at the final layout, between two system-scope barriers with a timeout. A rank that does
          not arrive within `timeout_s` makes the others raise
          "ltx_kernels.send_recv_heads: rank 3 did not arrive within 10.0 s" (checked on the host
          after the op; the kernels never trap or hang); the communicator is then unusable.
  "auto"  "ipc" when every rank is on this host, P2P works between their devices and the tensors
          are CUDA; "nccl" otherwise (per call: CPU tensors always take the "nccl" path).

Buffer size (ipc): max_tokens * hidden * dtype bytes per rank, where max_tokens bounds
B * T_total (batch times the whole sequence) and hidden = H * D (the largest row moved).
"""

import socket
from typing import List, Optional, Sequence

import torch

from ._common import register_fake
from ._ops import ops

__all__ = [
    "sp_pack_heads",
    "sp_unpack_heads",
    "sp_pack_tokens",
    "sp_unpack_tokens",
    "sp_unpack_gather",
    "SequenceParallelComm",
    "UlyssesAttention",
    "shard_tokens",
]

_HANDLE_BYTES = 64
_IPC_MAX_WORLD = 8


# ---- pack / unpack (single process; what sits on either side of an all_to_all)
def sp_pack_heads(x: torch.Tensor, world: int, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """x [B, T, H, D] -> [W, B, T, H/W, D] (contiguous per destination rank)."""
    if out is None:
        b, t, h, d = x.shape if x.dim() == 4 else (0, 0, 0, 0)
        out = torch.empty((world, b, t, h // max(world, 1), d) if x.dim() == 4 else (0,),
                          dtype=x.dtype, device=x.device)
    ops.sp_pack_heads(out, x, int(world))
    return out


def sp_unpack_heads(recv: torch.Tensor, tokens: Sequence[int], batch: int, heads: int, head_dim: int,
                    out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """recv = concat over sources s of [B, tokens[s], heads, D] -> [B, sum(tokens), heads, D]."""
    tokens = [int(t) for t in tokens]
    if out is None:
        out = torch.empty((batch, sum(tokens), heads, head_dim), dtype=recv.dtype, device=recv.device)
    ops.sp_unpack_heads(out, recv, tokens)
    return out


def sp_pack_tokens(y: torch.Tensor, tokens: Sequence[int], out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """y [B, sum(tokens), Hl, D] -> flat concat over ranks s of [B, tokens[s], Hl, D]."""
    tokens = [int(t) for t in tokens]
    if out is None:
        out = torch.empty(y.numel(), dtype=y.dtype, device=y.device)
    ops.sp_pack_tokens(out, y, tokens)
    return out


def sp_unpack_tokens(recv: torch.Tensor, world: int, shape: Sequence[int],
                     out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """recv [W][B, T, H/W, D] -> [B, T, H, D] = shape."""
    if out is None:
        out = torch.empty(tuple(shape), dtype=recv.dtype, device=recv.device)
    ops.sp_unpack_tokens(out, recv, int(world))
    return out


def sp_unpack_gather(recv: torch.Tensor, tokens: Sequence[int], out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """recv [W, B, max(tokens), ...] (a padded all_gather) -> [B, sum(tokens), ...]."""
    tokens = [int(t) for t in tokens]
    if out is None:
        out = torch.empty((recv.shape[1], sum(tokens), *recv.shape[3:]), dtype=recv.dtype, device=recv.device)
    ops.sp_unpack_gather(out, recv, tokens)
    return out


for _name in ["sp_pack_heads", "sp_pack_tokens", "sp_unpack_tokens"]:
    register_fake(_name)(lambda out, x, arg: None)
for _name in ["sp_unpack_heads", "sp_unpack_gather"]:
    register_fake(_name)(lambda out, recv, tokens: None)


# ---- the communicator
def _dist():
    import torch.distributed as dist

    return dist


def _has_ipc_kernels() -> bool:
    from ._ops import add_op_namespace_prefix

    return torch._C._dispatch_has_kernel_for_dispatch_key(add_op_namespace_prefix("sp_ipc_send_recv_heads"), "CUDA")


class SequenceParallelComm:
    """Ulysses sequence-parallel exchanges over a torch.distributed group (see module doc).

    group: a torch.distributed ProcessGroup (None: the default group). max_tokens, hidden,
    dtype: size the IPC buffers (ignored by "nccl"). device: the CUDA device of this rank
    (default: the current one when CUDA is present). timeout_s: IPC barrier timeout.
    check: after each IPC op, read the status word (one host sync) and raise on a timeout;
    with check=False (or under CUDA graph capture) call `check_status()` yourself.
    """

    def __init__(self, group=None, max_tokens: int = 0, hidden: int = 0, dtype: torch.dtype = torch.bfloat16,
                 transport: str = "auto", device=None, timeout_s: float = 10.0, check: bool = True):
        dist = _dist()
        if transport not in ("auto", "ipc", "nccl"):
            raise ValueError(f"ltx_kernels.SequenceParallelComm: transport must be 'auto', 'ipc' or 'nccl' (got {transport!r})")
        if not dist.is_available() or not dist.is_initialized():
            raise RuntimeError("ltx_kernels.SequenceParallelComm: torch.distributed must be initialized first")
        self.group = group
        self.world = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.timeout_s = float(timeout_s)
        self.check = bool(check)
        self.dtype = dtype
        self.nbytes = int(max_tokens) * int(hidden) * torch.empty((), dtype=dtype).element_size()
        self._tokens: Optional[List[int]] = None
        self._ipc_id: Optional[int] = None
        self._handle: Optional[torch.Tensor] = None
        self._broken: Optional[str] = None
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
        self.device = torch.device(device)
        use_ipc = transport == "ipc" or (transport == "auto" and self._ipc_possible())
        if transport == "ipc":
            why = self._ipc_problem()
            if why:
                raise RuntimeError(f"ltx_kernels.SequenceParallelComm: transport 'ipc' is not possible: {why}")
        self.transport = "ipc" if use_ipc else "nccl"
        if use_ipc:
            self._open_ipc()

    # -- transport selection
    def _ipc_problem(self) -> str:
        dist = _dist()
        if self.device.type != "cuda":
            return f"device must be CUDA (got {self.device})"
        if self.world > _IPC_MAX_WORLD:
            return f"at most {_IPC_MAX_WORLD} ranks (got {self.world})"
        info = [None] * self.world
        dist.all_gather_object(info, (socket.gethostname(), self.device.index), group=self.group)
        if len({h for h, _ in info}) != 1:
            return "ranks are on different hosts"
        for _, d in info:
            if d != self.device.index and not torch.cuda.can_device_access_peer(self.device.index, d):
                return f"no P2P access from cuda:{self.device.index} to cuda:{d}"
        return ""

    def _ipc_possible(self) -> bool:
        if self.device.type != "cuda" or not _has_ipc_kernels():
            return False
        ok = not self._ipc_problem()
        flags = [None] * self.world  # every rank must agree
        _dist().all_gather_object(flags, ok, group=self.group)
        return all(flags)

    def _open_ipc(self):
        dist = _dist()
        self._handle = torch.zeros(_HANDLE_BYTES, dtype=torch.uint8)
        self._ipc_id = int(ops.sp_ipc_create(self._handle, int(self.device.index), int(self.nbytes)))
        handles = [None] * self.world
        dist.all_gather_object(handles, self._handle.tolist(), group=self.group)
        ops.sp_ipc_open(torch.tensor(handles, dtype=torch.uint8), self._ipc_id, self.rank)
        self._status = torch.zeros(1, dtype=torch.int32, device=self.device)
        dist.barrier(group=self.group)  # every rank opened every buffer before anyone stores

    def close(self):
        """Releases the IPC buffers (collective in spirit: call it on every rank)."""
        if self._ipc_id is not None:
            ops.sp_ipc_close(self._handle, self._ipc_id)
            self._ipc_id = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # -- token counts
    def tokens_for(self, local_tokens: int, tokens: Optional[Sequence[int]] = None) -> List[int]:
        """Per-rank token counts. `tokens` when given (and cached); else the cached counts; with
        no cache, one all_gather of the counts (every rank must then call: a collective). A local
        count that differs from the cache raises rather than exchanging alone (that would hang the
        other ranks): pass tokens= or call reset_tokens() on every rank when the counts change."""
        if tokens is not None:
            tokens = [int(t) for t in tokens]
            if len(tokens) != self.world or tokens[self.rank] != int(local_tokens):
                raise ValueError(f"ltx_kernels.send_recv_heads: tokens must list {self.world} counts with "
                                 f"tokens[{self.rank}] = {local_tokens} (got {tokens})")
        elif self._tokens is not None:
            tokens = self._tokens
            if tokens[self.rank] != int(local_tokens):
                raise ValueError(f"ltx_kernels.send_recv_heads: this rank's token count changed to {local_tokens} "
                                 f"(cached counts {tokens}); pass tokens= or call reset_tokens() on every rank")
        else:
            got = [None] * self.world
            _dist().all_gather_object(got, int(local_tokens), group=self.group)
            tokens = [int(t) for t in got]
        self._tokens = tokens
        return tokens

    def reset_tokens(self):
        """Forget the cached per-rank token counts (call on every rank): the next call without
        tokens= exchanges them."""
        self._tokens = None

    # -- IPC helpers
    def _use_ipc(self, x: torch.Tensor) -> bool:
        return self._ipc_id is not None and x.is_cuda

    def _ipc_exchange(self, op: str, ipc_op, out: torch.Tensor, x: torch.Tensor, tokens: List[int]) -> torch.Tensor:
        """One IPC op into `out`, refused on a communicator an earlier timeout broke; the status
        word is read after it (unless check=False or a CUDA graph is being captured)."""
        if self._broken:
            raise RuntimeError(f"ltx_kernels.{op}: this communicator is unusable after an earlier timeout "
                               f"({self._broken}); create a new one")
        ipc_op(out, self._status, x, self._ipc_id, tokens, self.timeout_s)
        if self.check and not torch.cuda.is_current_stream_capturing():
            self.check_status(op)
        return out

    def check_status(self, op: str = "send_recv_heads"):
        """Raises if an earlier IPC op timed out (reads the device status word: a host sync)."""
        if self._ipc_id is None:
            return
        st = int(self._status.item())
        if st != 0:
            msg = f"rank {st - 1} did not arrive within {self.timeout_s} s"
            self._broken = msg
            raise RuntimeError(f"ltx_kernels.{op}: {msg}")

    # -- the three exchanges
    def send_recv_heads(self, x: torch.Tensor, tokens: Optional[Sequence[int]] = None) -> torch.Tensor:
        """x [B, T_r, H, D] -> [B, T_total, H/W, D] (this rank's heads, every rank's tokens)."""
        op = "send_recv_heads"
        if x.dim() != 4:
            raise ValueError(f"ltx_kernels.{op}: x must be 4-D [B, T, H, D] (got shape {list(x.shape)})")
        b, t, h, d = x.shape
        W = self.world
        if h % W != 0:
            raise ValueError(f"ltx_kernels.{op}: heads H = {h} must be divisible by the world size {W}")
        tokens = self.tokens_for(t, tokens)
        tt, hl = sum(tokens), h // W
        out = torch.empty((b, tt, hl, d), dtype=x.dtype, device=x.device)
        if self._use_ipc(x):
            return self._ipc_exchange(op, ops.sp_ipc_send_recv_heads, out, x, tokens)
        send = sp_pack_heads(x, W)
        recv = torch.empty(b * tt * hl * d, dtype=x.dtype, device=x.device)
        row = b * hl * d * x.element_size()
        _dist().all_to_all_single(recv.view(torch.uint8), send.view(-1).view(torch.uint8),
                                  [row * ts for ts in tokens], [row * t] * W, group=self.group)
        ops.sp_unpack_heads(out, recv, tokens)
        return out

    def gather_heads(self, y: torch.Tensor, tokens: Optional[Sequence[int]] = None) -> torch.Tensor:
        """y [B, T_total, H/W, D] -> [B, T_r, H, D]: the exact inverse of send_recv_heads (uses the
        token counts of the last call unless given)."""
        op = "gather_heads"
        if y.dim() != 4:
            raise ValueError(f"ltx_kernels.{op}: y must be 4-D [B, T_total, H/W, D] (got shape {list(y.shape)})")
        b, tt, hl, d = y.shape
        W = self.world
        if tokens is None:
            tokens = self._tokens
            if tokens is None or sum(tokens) != tt:
                raise ValueError(f"ltx_kernels.{op}: pass tokens= (no cached per-rank counts summing to "
                                 f"y.shape[1] = {tt}; got {tokens})")
        tokens = [int(v) for v in tokens]
        if len(tokens) != W or sum(tokens) != tt:
            raise ValueError(f"ltx_kernels.{op}: tokens must list {W} counts summing to y.shape[1] = {tt} (got {tokens})")
        t = tokens[self.rank]
        out = torch.empty((b, t, hl * W, d), dtype=y.dtype, device=y.device)
        if self._use_ipc(y):
            return self._ipc_exchange(op, ops.sp_ipc_gather_heads, out, y, tokens)
        send = sp_pack_tokens(y, tokens)
        recv = torch.empty(W * b * t * hl * d, dtype=y.dtype, device=y.device)
        row = b * hl * d * y.element_size()
        _dist().all_to_all_single(recv.view(torch.uint8), send.view(torch.uint8),
                                  [row * t] * W, [row * ts for ts in tokens], group=self.group)
        ops.sp_unpack_tokens(out, recv, W)
        return out

    def all_gather(self, x: torch.Tensor, tokens: Optional[Sequence[int]] = None) -> torch.Tensor:
        """x [B, T_r, ...] -> [B, T_total, ...], rank s's tokens at prefix[s]."""
        op = "all_gather"
        if x.dim() < 2:
            raise ValueError(f"ltx_kernels.{op}: x must be [B, T, ...] (got shape {list(x.shape)})")
        b, t = x.shape[:2]
        rest = tuple(x.shape[2:])
        tokens = self.tokens_for(t, tokens)
        W = self.world
        out = torch.empty((b, sum(tokens), *rest), dtype=x.dtype, device=x.device)
        if self._use_ipc(x):
            return self._ipc_exchange(op, ops.sp_ipc_all_gather, out, x, tokens)
        tmax = max(tokens)
        if t == tmax:
            send = x.contiguous()
        else:
            send = torch.zeros((b, tmax, *rest), dtype=x.dtype, device=x.device)
            send[:, :t] = x
        recv = torch.empty((W, b, tmax, *rest), dtype=x.dtype, device=x.device)
        dist = _dist()
        rb, sb = recv.view(-1).view(torch.uint8), send.view(-1).view(torch.uint8)
        try:
            dist.all_gather_into_tensor(rb, sb, group=self.group)
        except (RuntimeError, NotImplementedError, ValueError):
            dist.all_gather(list(rb.view(W, -1).unbind(0)), sb, group=self.group)
        ops.sp_unpack_gather(out, recv, tokens)
        return out


def shard_tokens(x: torch.Tensor, world: int, rank: int, dim: int = 1) -> torch.Tensor:
    """This rank's contiguous share of dim (torch.tensor_split: the first T % W ranks get one more)."""
    return torch.tensor_split(x, world, dim=dim)[rank]


def _sdpa(q, k, v, **kwargs):
    # [B, T, H, D] -> SDPA's [B, H, T, D] and back
    o = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), **kwargs)
    return o.transpose(1, 2)


class UlyssesAttention(torch.nn.Module):
    """Ulysses sequence-parallel attention around any attention callable.

    forward(q, k, v) takes this rank's tokens [B, T_r, H, D] of q, k and v, exchanges them with
    send_recv_heads (every token, H/W heads), runs `attn(q, k, v, **kwargs)` on [B, T_total,
    H/W, D] (default: scaled_dot_product_attention), and returns gather_heads of the result:
    [B, T_r, H, D], equal to the unsharded attention's rows of this rank.
    """

    def __init__(self, comm: SequenceParallelComm, attn=None):
        super().__init__()
        self.comm = comm
        self.attn = attn if attn is not None else _sdpa

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **kwargs) -> torch.Tensor:
        tokens = self.comm.tokens_for(q.shape[1])
        qa = self.comm.send_recv_heads(q, tokens)
        ka = self.comm.send_recv_heads(k, tokens)
        va = self.comm.send_recv_heads(v, tokens)
        o = self.attn(qa, ka, va, **kwargs)
        return self.comm.gather_heads(o.contiguous() if o.stride(-1) != 1 else o, tokens)
