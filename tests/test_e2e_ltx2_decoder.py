"""benchmarks/e2e_ltx2_decoder.py in its tiny CPU mode: both variants (diffusers' FlexAttention
processor and ours) run on the same stage, and ours matches flex in fp32 (the only differences are
summation order and the fused norm/RoPE pre-pass: ~1e-7 relative)."""

import json
import math

import pytest

import ltx_kernels  # noqa: F401

from conftest import load_bench

pytest.importorskip("diffusers")


@pytest.mark.parametrize("stage", [2, 3])  # windows (3,7,7) and (3,5,5)
def test_e2e_ltx2_decoder_tiny(stage, tmp_path):
    mod = load_bench("e2e_ltx2_decoder")
    try:
        mod.decoder_defaults()
    except ImportError as e:
        pytest.skip(f"diffusers' LTX-2 diffusion decoder not importable: {e}")
    out = tmp_path / "r.json"
    rc = mod.main(["--tiny", "--device", "cpu", "--stage", str(stage), "--iters", "1", "--warmup", "0",
                   "--out", str(out)])
    assert rc in (None, 0)
    res = json.loads(out.read_text())
    rows = {r["variant"]: r for r in res["variants"]}
    assert set(rows) == {"flex", "ours"}
    for r in rows.values():
        assert r["status"] == "ok", r
        assert math.isfinite(r["ms"]) and r["ms"] > 0
        assert r["output_shape"] == rows["flex"]["output_shape"]
    assert rows["ours"]["rel_l2_vs_flex"] < 1e-3
    assert res["stage"] == stage and res["dtype"] == "torch.float32" and res["input_layout"] == "BTHWC"
    assert res["config"]["kernel"] == list(mod.decoder_defaults()["stage_kernels"][stage - 1])
