"""Summarize the CSVs of tools/profile/ncu_full.sh into one JSON record: per profiled launch (named
by its NVTX range) the duration, SM clock, tensor-pipe activity, issue-slot use, registers and
the shares of the warp-state samples by stall reason; for our kernels also the SASS view of the
source page: the share of samples per opcode and the instructions that hold the most samples,
and, for kernels whose warps are split by `setmaxnreg` (consumers raise, producers lower their
register count), the samples of each side.

    python3 tools/profile/ncu_summary.py DIR_OR_TAR --out record.json [--meta key=value ...]
"""

import argparse
import collections
import csv
import io
import json
import os
import re
import sys
import tarfile

METRICS = {
    "duration_us": "gpu__time_duration.sum",
    "sm_clock_ghz": "sm__cycles_elapsed.avg.per_second",
    "tensor_pipe_active_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "issue_active_pct": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "warps_active_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "registers": "launch__registers_per_thread",
    "grid": "launch__grid_size",
    "block": "launch__block_size",
}
STALL = "smsp__pcsamp_warps_issue_stalled_"
SAMPLES = "Warp Stall Sampling (All Samples)"


def _num(s):
    try:
        return float(s.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def read_files(src):
    """{name: text} of the CSVs in a directory or a .tar.gz."""
    out = {}
    if os.path.isdir(src):
        for n in os.listdir(src):
            if n.endswith(".csv"):
                with open(os.path.join(src, n), newline="") as f:
                    out[n] = f.read()
    else:
        with tarfile.open(src) as t:
            for m in t.getmembers():
                if m.name.endswith(".csv"):
                    out[os.path.basename(m.name)] = t.extractfile(m).read().decode()
    return out


def raw_rows(text):
    rows = list(csv.reader(io.StringIO(text)))
    if len(rows) < 3:
        return []
    hdr = rows[0]
    out = []
    for r in rows[2:]:  # row 1 holds the units
        d = dict(zip(hdr, r))
        name = d.get("Kernel Name", "")
        call, _, kernel = name.partition("/") if "/" in name.split("(")[0] else ("", "", name)
        m = {k: _num(d.get(v)) for k, v in METRICS.items()}
        stalls = {h[len(STALL):]: _num(d[h]) or 0.0 for h in hdr
                  if h.startswith(STALL) and not h.endswith("_not_issued")}
        tot = sum(stalls.values()) or 1.0
        shares = {k: round(100 * v / tot, 1) for k, v in sorted(stalls.items(), key=lambda kv: -kv[1]) if v}
        out.append(dict(call=call or kernel[:60], kernel=kernel[:160], **{k: v for k, v in m.items()},
                        stall_share_pct=shares))
    return out


def source_kernels(text):
    """[(kernel name, [row dict, ...])] of a `--page source --print-source sass` CSV."""
    out, cur, hdr = [], None, None
    for row in csv.reader(io.StringIO(text)):
        if row and row[0] == "Kernel Name":
            cur = (row[1], [])
            out.append(cur)
            hdr = None
        elif cur is not None and hdr is None:
            hdr = row
        elif cur is not None and row:
            cur[1].append(dict(zip(hdr, row)))
    # a kernel may be printed twice in a row (same name, same code): keep one, so that the
    # entries pair with the launches of the raw page in order
    dedup = []
    for name, rows in out:
        if dedup and dedup[-1][0] == name and rows and dedup[-1][1] and \
                dedup[-1][1][0].get("Address") == rows[0].get("Address"):
            continue
        dedup.append((name, rows))
    return dedup


def opcode(src):
    toks = src.split()
    if not toks:
        return "?"
    op = toks[1] if toks[0].startswith("@") and len(toks) > 1 else toks[0]
    return op.split(".")[0]


def sass_view(rows, top=12):
    samples = [(_num(r.get(SAMPLES)) or 0.0) for r in rows]
    tot = sum(samples) or 1.0
    ops = collections.Counter()
    for r, s in zip(rows, samples):
        ops[opcode(r.get("Source", ""))] += s
    base = int(rows[0]["Address"], 16) if rows else 0
    hot = sorted(range(len(rows)), key=lambda i: -samples[i])[:top]
    hot_rows = []
    for i in hot:
        r = rows[i]
        st = {k[6:]: int(_num(r[k]) or 0) for k in r
              if k.startswith("stall_") and "Not Issued" not in k and (_num(r[k]) or 0) > 0}
        hot_rows.append(dict(offset=hex(int(r["Address"], 16) - base), sass=" ".join(r["Source"].split())[:80],
                             share_pct=round(100 * samples[i] / tot, 1),
                             executed=int(_num(r.get("Instructions Executed")) or 0),
                             stalls=dict(sorted(st.items(), key=lambda kv: -kv[1])[:4])))
    view = dict(samples=int(tot), opcode_share_pct={k: round(100 * v / tot, 1) for k, v in ops.most_common(12) if v},
                hottest=hot_rows)
    # warp roles split by setmaxnreg: [raise .. lower) is the consumers' code, [lower ..) the producers'
    alloc = [i for i, r in enumerate(rows) if "SETMAXREG" in r.get("Source", "") and "DEALLOC" not in r["Source"]]
    dealloc = [i for i, r in enumerate(rows) if "SETMAXREG.DEALLOC" in r.get("Source", "")]
    if alloc and dealloc and alloc[0] < dealloc[0]:
        a, d = alloc[0], dealloc[0]
        tail = next((i for i in range(len(rows) - 1, d, -1) if "UCGABAR_WAIT" in rows[i].get("Source", "")), None)
        regions = {"before the split": sum(samples[:a]), "consumers": sum(samples[a:d]),
                   "producers": sum(samples[d:tail] if tail else samples[d:])}
        if tail is not None:
            regions["final cluster barrier (every warp)"] = samples[tail]
        view["region_share_pct"] = {k: round(100 * v / tot, 1) for k, v in regions.items()}
        cons = collections.Counter()
        for r, s in zip(rows[a:d], samples[a:d]):
            cons[opcode(r.get("Source", ""))] += s
        ctot = sum(samples[a:d]) or 1.0
        view["consumer_opcode_share_pct"] = {k: round(100 * v / ctot, 1) for k, v in cons.most_common(10) if v}
    return view


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("--out", required=True)
    ap.add_argument("--meta", nargs="*", default=[], help="key=value pairs for the record's meta")
    ap.add_argument("--ours", default=r"ltx_kernels", help="regex naming our kernels (SASS view)")
    args = ap.parse_args(argv)
    files = read_files(args.src)
    rec = {"meta": dict(kv.split("=", 1) for kv in args.meta)}
    for fam in sorted({n.split(".")[0] for n in files}):
        entry = {"launches": raw_rows(files.get(f"{fam}.raw.csv", ""))}
        src = files.get(f"{fam}.source.csv")
        if src:
            kernels = source_kernels(src)
            calls = [l["call"] for l in entry["launches"]]
            if len(calls) != len(kernels):  # cannot pair them: name by kernel
                calls = [re.sub(r"\(CUtensorMap.*|\(const .*", "", k)[:120] for k, _ in kernels]
            entry["sass"] = {c: sass_view(rows) for c, (name, rows) in zip(calls, kernels)
                             if rows and re.search(args.ours, name)}
        rec[fam] = entry
    with open(args.out, "w") as f:
        json.dump(rec, f, indent=1)
    for fam, e in rec.items():
        if fam == "meta":
            continue
        print(f"== {fam}")
        for l in e["launches"]:
            top = ", ".join(f"{k} {v:.0f}%" for k, v in list(l["stall_share_pct"].items())[:4])
            print(f"  {l['call'][:34]:34s} {l['duration_us'] or 0:9.1f} us {l['sm_clock_ghz'] or 0:.2f} GHz "
                  f"tensor {l['tensor_pipe_active_pct'] or 0:5.1f}% issue {l['issue_active_pct'] or 0:5.1f}% | {top}")
        for k, v in e.get("sass", {}).items():
            print(f"  SASS {k[:70]}: {v.get('region_share_pct', '')} {v.get('consumer_opcode_share_pct', v['opcode_share_pct'])}")


if __name__ == "__main__":
    main(sys.argv[1:])
