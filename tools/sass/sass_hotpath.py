"""Instructions per main-loop iteration on the hot path of each kernel in a CUDA object or cubin.

A static count from the machine code, for comparing variants of a kernel without a GPU (the
attention kernel's configurations, for instance): for each function, the loop is the longest
backward conditional branch whose body holds a wgmma (GMMA) instruction; its hot path is the
shortest path of basic blocks from the loop header to that branch that avoids the blocks of the
rare cases, recognised by what they hold: >= 32 FSEL (masking a partial key block) or >= 16 LDG
(loading a key bias). Shortest means that optional work behind a branch counts as skipped (the
attention kernel's rescale skip, for example), so a count is a lower bound for data where that
branch is not taken. Spin loops of barrier waits are not counted (their retries sit outside the
loop body). Counts are per thread (per warp instruction), not cycles.

    python3 tools/sass/sass_hotpath.py build/x.o [--filter NAME] [--ops] [--innermost] [--drain]

Needs cuobjdump (CUDA toolkit) and an nvdisasm that reads the toolkit's cubins (`nvdisasm` of
the same CUDA version; `pip install nvidia-cuda-nvdisasm` ships one): --cuobjdump / --nvdisasm
or the CUOBJDUMP / NVDISASM environment variables name them.
"""

import argparse
import collections
import glob
import heapq
import os
import re
import shutil
import subprocess
import sys
import tempfile

_INS = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_TARGET = re.compile(r"BRA `\((\.L_x_\d+)\)")


def opcode(text: str) -> str:
    """The opcode of an instruction's text, without its predicate and modifiers."""
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0].split(".")[0]


def parse(listing: str):
    """{function name: (instructions [(address, text)], {label: instruction index})} of an
    nvdisasm listing (`nvdisasm -c`)."""
    funcs = {}
    name = None
    for line in listing.split("\n"):
        if line.startswith(".text.") and line.rstrip().endswith(":"):
            name = line.strip()[len(".text."):-1]
            funcs[name] = ([], {})
            pending = []
            continue
        if name is None:
            continue
        ins, labels = funcs[name]
        m = _LABEL.match(line.strip())
        if m:
            pending.append(m.group(1))
            continue
        m = _INS.match(line)
        if m:
            for p in pending:
                labels[p] = len(ins)
            pending = []
            ins.append((int(m.group(1), 16), m.group(2)))
    return funcs


def rare(ins, s, e) -> bool:
    ops = [opcode(ins[i][1]) for i in range(s, e)]
    return ops.count("FSEL") >= 32 or ops.count("LDG") >= 16


def loop_bounds(ins, labels, innermost: bool = False):
    """(header index, back-edge index) of the longest (or innermost) loop around a wgmma."""
    best = None
    for i, (_, text) in enumerate(ins):
        m = _TARGET.search(text)
        if m and text.startswith("@") and m.group(1) in labels:
            j = labels[m.group(1)]
            if j < i and any("GMMA" in t for _, t in ins[j:i]):
                if best is None or (i - j < best[1] - best[0] if innermost else i - j > best[1] - best[0]):
                    best = (j, i)
    return best


def hot_path(ins, labels, innermost: bool = False):
    """(instructions on the hot path, instructions in the loop, opcode counts on the path, loop
    header address), or None when the function has no loop around a wgmma. The loop is the
    longest one around a wgmma, or with `innermost` the shortest (the K loop of a persistent GEMM
    rather than its tile loop)."""
    best = loop_bounds(ins, labels, innermost)
    if best is None:
        return None
    h, b = best
    leaders = {h}
    for i in range(h, b + 1):
        text = ins[i][1]
        m = _TARGET.search(text)
        if m or opcode(text) == "EXIT":
            leaders.add(i + 1)
            if m and m.group(1) in labels:
                leaders.add(labels[m.group(1)])
    leaders |= {v for v in labels.values() if h <= v <= b}
    starts = sorted(x for x in leaders if h <= x <= b + 1)
    blocks = {starts[k]: starts[k + 1] for k in range(len(starts) - 1)}
    dist, prev, queue = {h: 0}, {}, [(0, h)]
    while queue:
        d, s = heapq.heappop(queue)
        if d > dist.get(s, float("inf")) or rare(ins, s, blocks[s]):
            continue
        e = blocks[s]
        nd = d + (e - s)
        if e - 1 == b:
            path, x = [], s
            while True:
                path.append(x)
                if x == h:
                    break
                x = prev[x]
            ops = collections.Counter(opcode(ins[i][1]) for p in path for i in range(p, blocks[p]))
            return nd, b - h + 1, ops, ins[h][0]
        last = ins[e - 1][1]
        succ = []
        m = _TARGET.search(last)
        if m:
            t = labels.get(m.group(1))
            if t is not None and h <= t <= b:
                succ.append(t)
            if last.startswith("@"):
                succ.append(e)
        else:
            succ.append(e)
        for t in succ:
            if t in blocks and nd < dist.get(t, float("inf")):
                dist[t], prev[t] = nd, s
                heapq.heappush(queue, (nd, t))
    return None


def drain(ins, labels, innermost: bool = True):
    """Instructions from the loop's last wgmma wait (WARPGROUP.DEPBAR) to the next wgmma issue,
    going round the back edge, on the shortest path that avoids FSEL (the rare run-time selects):
    the window in which this warp's tensor-core work stops. None without such a loop."""
    lb = loop_bounds(ins, labels, innermost)
    if lb is None:
        return None
    h, b = lb
    waits = [i for i in range(h, b + 1) if "WARPGROUP.DEPBAR" in ins[i][1]]
    if not waits:
        return None

    def succ(i):
        text = ins[i][1]
        m = _TARGET.search(text)
        out = []
        if m and m.group(1) in labels:
            t = labels[m.group(1)]
            if h <= t <= b:
                out.append(t)
            if text.startswith("@") and i + 1 <= b:
                out.append(i + 1)
        elif i + 1 <= b:
            out.append(i + 1)
        if i == b:
            out.append(h)
        return out

    start = waits[-1]
    dist, queue = {start: 0}, [(0, start)]
    while queue:
        d, i = heapq.heappop(queue)
        if d > dist.get(i, float("inf")):
            continue
        if i != start and "GMMA" in ins[i][1]:
            return d
        w = 1 + (10 ** 6 if opcode(ins[i][1]) == "FSEL" else 0)
        for s in succ(i):
            if d + w < dist.get(s, float("inf")):
                dist[s] = d + w
                heapq.heappush(queue, (d + w, s))
    return None


def listing_of(path: str, cuobjdump: str, nvdisasm: str) -> str:
    if path.endswith(".cubin"):
        cubins = [path]
        tmp = None
    else:
        tmp = tempfile.mkdtemp()
        subprocess.run([cuobjdump, "-xelf", "all", os.path.abspath(path)], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cubins = sorted(glob.glob(os.path.join(tmp, "*.cubin")))
    try:
        return "\n".join(subprocess.run([nvdisasm, "-c", c], check=True, capture_output=True, text=True).stdout
                         for c in cubins)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def demangle(names):
    """Readable names: demangled (c++filt), without the return type, the parameter list and the
    namespaces."""
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
        pretty = out.split("\n")[:len(names)]
    except (OSError, subprocess.CalledProcessError):
        return list(names)
    short = []
    for p in pretty:
        p = re.sub(r"^void ", "", p)
        depth = 0
        for i, ch in enumerate(p):  # drop the parameter list: the first '(' outside template brackets
            depth += ch == "<"
            depth -= ch == ">"
            if ch == "(" and depth == 0:
                p = p[:i]
                break
        short.append(re.sub(r"\b\w+::", "", p))
    return short


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("objects", nargs="+", help=".o (nvcc -c) or .cubin files")
    ap.add_argument("--filter", default="", help="only functions whose demangled name contains this")
    ap.add_argument("--ops", action="store_true", help="print the opcode counts on each hot path")
    ap.add_argument("--innermost", action="store_true",
                    help="the innermost loop around a wgmma (a persistent GEMM's K loop) instead of the outermost")
    ap.add_argument("--drain", action="store_true",
                    help="also the instructions from the loop's last wgmma wait to the next wgmma issue")
    ap.add_argument("--cuobjdump", default=os.environ.get("CUOBJDUMP", "cuobjdump"))
    ap.add_argument("--nvdisasm", default=os.environ.get("NVDISASM", "nvdisasm"))
    args = ap.parse_args(argv)
    for obj in args.objects:
        funcs = parse(listing_of(obj, args.cuobjdump, args.nvdisasm))
        names = list(funcs)
        for name, pretty in zip(names, demangle(names)):
            if args.filter not in pretty:
                continue
            r = hot_path(*funcs[name], innermost=args.innermost)
            if r is None:
                continue
            n, total, ops, header = r
            extra = ""
            if args.drain:
                dr = drain(*funcs[name], innermost=args.innermost)
                extra = f", drain to issue {dr}" if dr is not None else ""
            print(f"{n:5d} of {total:5d} (loop at {header:#x}{extra})  {pretty}")
            if args.ops:
                print("       " + ", ".join(f"{k} {v}" for k, v in ops.most_common(14)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
