"""Every neighborhood-attention kernel path once on small shapes, for compute-sanitizer
(memcheck, racecheck); part of tools/sanitize/sanitize_smoke.py. Every query-box configuration
(LTX_KERNELS_NATTEN_TILE: the portable kernel's boxes 0-5, d 32/64/128; on sm_90 the TMA kernel's boxes
6-8, d 64, both staged row widths), fp16/bf16, partial boxes at ragged borders, causal and dilated
axes, a strided out."""

import torch

import ltx_kernels as lk

torch.manual_seed(0)
dev = "cuda"
# tiles 6-8: the sm_90 TMA kernel's boxes (head dim 64 only)
_sm90 = torch.cuda.get_device_capability() == (9, 0)
for _tile in range(9 if _sm90 else 6):
    lk.set_developer_setting("LTX_KERNELS_NATTEN_TILE", _tile)
    _dims = [(32, torch.float16), (64, torch.bfloat16), (128, torch.bfloat16)] if _tile < 6 else [
        (64, torch.bfloat16), (64, torch.float16)]
    for _d, _dt in _dims:
        _q, _k, _v = (torch.randn(1, 5, 9, 13, 2, _d, device=dev, dtype=_dt) for _ in range(3))
        lk.na3d(_q, _k, _v, (3, 5, 5))
        lk.na3d(_q, _k, _v, (3, 3, 3), dilation=(1, 2, 2), is_causal=(True, False, False))
        _o = torch.empty(1, 5, 9, 13, 2, _d + 8, device=dev, dtype=_dt)[..., :_d]
        lk.na3d(_q, _k, _v, (3, 7, 7), out=_o)
        _q1 = torch.randn(2, 70, 1, _d, device=dev, dtype=_dt)
        lk.na1d(_q1, _q1, _q1, 9)
        lk.na1d(_q1, _q1, _q1, 21)  # sm_90 kernel: 32-wide staged rows
lk.set_developer_setting("LTX_KERNELS_NATTEN_TILE", "")
torch.cuda.synchronize()
