"""The benchmark bookkeeping (CPU only): rows name their ceiling, report.py turns JSONs into
results.md and the README table, the committed results and the README agree, run.py finds every
family, and the user-facing text carries no work history."""

import ast
import json
import re
from pathlib import Path

import pytest

from conftest import load_bench

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def report():
    return load_bench("report")


def test_rows_name_their_ceiling(tmp_path, report):
    common = load_bench("common")
    # 4e9 bytes in 1000 us = 4000 GB/s = 100% of a 4000 GB/s copy ceiling
    mem = common.Row("rms_norm", [8], "bfloat16", 1000.0, {"eager": 2000.0, "torch.compile": 500.0},
                     bytes=4 * 10**9).finish(4000.0)
    assert mem.ceiling_name == "copy" and mem.fraction_of_ceiling == 1.0
    assert mem.best_baseline == "torch.compile" and mem.speedup_vs_best_baseline == 0.5
    # 1e12 FLOP in 10000 us = 100 TFLOP/s = 25% of a 400 TFLOP/s SDPA rate
    att = common.Row("na3d", [1], "bfloat16", 10000.0, {"flex": 30000.0}, flops=10**12).finish(4000.0)
    assert att.ceiling_name is None and att.fraction_of_ceiling is None  # no bytes: no copy ceiling
    att.against("SDPA", 400.0, sdpa_TFLOPs=400.0)
    assert att.ceiling_name == "SDPA" and att.fraction_of_ceiling == 0.25
    common.write_json(tmp_path / "fam.json", [mem, att], {"gpu": "TestGPU", "git_sha": "0123456789abcdef",
                                                          "git_dirty": False, "date": "2026-01-01"})
    (tmp_path / "notes.json").write_text(json.dumps({"something": "else"}))  # ignored
    results = report.load_results(tmp_path)
    assert list(results) == ["fam"]
    md = report.results_md(results)
    assert "| rms_norm | 8 | bfloat16 | 1000.00 | 4000 GB/s | 100.0 | copy |" in md
    assert "| na3d | 1 | bfloat16 | 10000.00 | 100 TFLOP/s | 25.0 | SDPA |" in md
    assert "git 0123456789" in md
    table = report.summary_table(results)
    assert "| fam | `na3d` | 1 | SDPA | 25% |" in table
    assert "| fam | `rms_norm` | 1 | copy | 100% |" in table


def test_forced_backends_stay_out_of_the_summary(report):
    assert report.default_path({"op": "fp8_blockwise_gemm[auto]"})
    assert report.default_path({"op": "adaln_rms_norm (per_token)"})
    assert not report.default_path({"op": "fp8_blockwise_gemm[sm89]"})


def test_committed_results_and_readme_are_generated(report):
    """results.md and the README table are what report.py makes of the committed JSONs
    (after adding JSONs: `python3 benchmarks/report.py --readme`)."""
    assert report.main(["--check", "--no-plot"]) == 0


def test_run_finds_every_family():
    run = load_bench("run")
    files = sorted(p.stem[len("bench_"):] for p in (ROOT / "benchmarks").glob("bench_*.py"))
    assert run.discover() == files and "norm" in files
    for fam in files:
        tree = ast.parse((ROOT / "benchmarks" / f"bench_{fam}.py").read_text())
        fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "run" in fns, f"bench_{fam}.py has no run(copy_gbps, quick=False)"
        assert [a.arg for a in fns["run"].args.args][:2] == ["copy_gbps", "quick"], fam


def test_user_text_has_no_work_history():
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "benchmarks").glob("*.py"),
             *(ROOT / "scripts" / "gpu").glob("*"), *(ROOT / "torch-ext" / "ltx_kernels" / "integrations").rglob("*.py")]
    bad = re.compile(r"REFERENCE\.md|\.\./shared|\bsession \d|\bsessions? [0-9]|\bissue #?\d|\brun \d+\b|#\d+\b",
                     re.IGNORECASE)
    hits = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in files if p.is_file()
            for i, line in enumerate(p.read_text().splitlines(), 1) if bad.search(line)]
    assert hits == []


def test_env_var_sets_unsets_and_restores(monkeypatch):
    """common.env_var, which the sweeps force the library's knobs with: the value inside the
    block, unset for None, and whatever was there before afterwards (also after an error)."""
    import os

    env_var = load_bench("common").env_var
    name = "LTX_KERNELS_TEST_KNOB"
    monkeypatch.delenv(name, raising=False)
    with env_var(name, "b4"):
        assert os.environ[name] == "b4"
    assert name not in os.environ
    monkeypatch.setenv(name, "w2")
    with env_var(name, None):
        assert name not in os.environ
    assert os.environ[name] == "w2"
    with pytest.raises(RuntimeError):
        with env_var(name, "loop"):
            raise RuntimeError("refused")
    assert os.environ[name] == "w2"
