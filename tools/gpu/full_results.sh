#!/usr/bin/env bash
# The full benchmark suite on a GPU machine, for benchmarks/results/<gpu>/.
#
#   VARIANT=build/<variant> OUT=<dir> [GIT_SHA=<sha>[+dirty]] [FAMILIES="a b"] [ONLY=1] bash tools/gpu/full_results.sh [--quick]
#
# One process per family (benchmarks/run.py --only <family>), so each family's ceilings are
# measured in its own process and a family that crashes or overruns cannot take the others
# with it. Time: a budget for the whole suite (BUDGET, default 450 s) and a cap per family
# (FAMILY_LIMIT, default 200 s); a family cut off at its cap is run again with --quick if time
# is left, and its JSON then says quick. --quick runs every family in quick mode (a smoke run).
#
# Writes two files under $OUT:
#   full_results.tar.gz  results/: <family>.json, results.md, plot.png (when matplotlib is
#                        there), bench.log. Unpack, copy the JSONs into benchmarks/results/<gpu>/
#                        and run `python3 benchmarks/report.py --readme` to regenerate results.md,
#                        the plot and the README table.
#   full_results.md      the generated results.md, to read at once.
# Prints the per-family status and the summary table last.
# GIT_SHA: the commit to record when this tree is not a git checkout (otherwise git says).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${VARIANT:?set VARIANT to the built variant directory, e.g. build/torch211-cxx11-cu130-x86_64-linux}"
OUT=${OUT:-build/full-results-out}
BUDGET=${BUDGET:-450}
FAMILY_LIMIT=${FAMILY_LIMIT:-200}
QUICK=""
[ "${1:-}" = "--quick" ] && QUICK="--quick"
mkdir -p "$OUT"
WORK=$(mktemp -d)
RES="$WORK/results"
mkdir -p "$RES"
LOG="$RES/bench.log"
export PYTHONPATH="$(cd "$VARIANT" && pwd):${PYTHONPATH:-}"
export PYTHONUNBUFFERED=1
# matplotlib for the plot, where it was carried as wheels (.whl/); the plot is optional
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/ltx-site .whl/*.whl >/dev/null 2>&1 && export PYTHONPATH=/tmp/ltx-site:$PYTHONPATH
fi
python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" ||
  { echo "full_results: no CUDA GPU here; GPU numbers need a GPU"; exit 1; }
SHA_ARG=()
if [ -n "${GIT_SHA:-}" ]; then
  SHA_ARG=(--sha "$GIT_SHA")
elif ! git rev-parse HEAD >/dev/null 2>&1; then
  echo "full_results: not a git checkout and GIT_SHA unset: the JSONs will say git_sha null" | tee -a "$LOG"
fi

# cheap families first, then the long ones (FAMILIES="a b ..." sets the order); a family not named
# there (a new bench_*.py) runs after them
PREFERRED=${FAMILIES:-"norm rope activation fused_norm fp8 fused_fp8 lowbit distributed natten gemm"}
ALL=$(python3 benchmarks/run.py --list)
ORDER=""
for f in $PREFERRED; do echo "$ALL" | grep -qx "$f" && ORDER="$ORDER $f"; done
# ONLY=1: the families named in FAMILIES and no others (a run split over two calls)
if [ "${ONLY:-0}" != 1 ]; then
  for f in $ALL; do case " $PREFERRED " in *" $f "*) ;; *) ORDER="$ORDER $f" ;; esac; done
fi

t_start=$(date +%s)
STATUS="$WORK/status.txt"
: > "$STATUS"
for fam in $ORDER; do
  left=$(( BUDGET - ($(date +%s) - t_start) ))
  if [ "$left" -lt 30 ]; then
    echo "$fam|skipped (budget spent)|0" >> "$STATUS"
    continue
  fi
  limit=$(( left < FAMILY_LIMIT ? left : FAMILY_LIMIT ))
  t0=$(date +%s)
  echo "=== $fam (limit ${limit} s) $QUICK" >> "$LOG"
  timeout --kill-after=10 "$limit" python3 benchmarks/run.py --only "$fam" --out "$RES" $QUICK "${SHA_ARG[@]}" >> "$LOG" 2>&1
  rc=$?
  mode=${QUICK:+quick}
  mode=${mode:-full}
  if { [ $rc = 124 ] || [ $rc = 137 ]; } && [ -z "$QUICK" ]; then
    left=$(( BUDGET - ($(date +%s) - t_start) ))
    left=$(( left < FAMILY_LIMIT ? left : FAMILY_LIMIT ))
    if [ "$left" -ge 30 ]; then
      echo "=== $fam cut off at ${limit} s: again with --quick (limit ${left} s)" >> "$LOG"
      timeout --kill-after=10 "$left" python3 benchmarks/run.py --only "$fam" --out "$RES" --quick "${SHA_ARG[@]}" >> "$LOG" 2>&1
      rc=$?
      mode="quick(full cut off at ${limit} s)"
    fi
  fi
  case $rc in
    0) if [ -f "$RES/$fam.json" ]; then state=ok; else state="no JSON written"; fi ;;
    124|137) state="timed out" ;;
    *) state="failed (exit $rc)" ;;
  esac
  echo "$fam|$state, $mode|$(( $(date +%s) - t0 ))" >> "$STATUS"
done

python3 benchmarks/report.py --results "$RES" >> "$LOG" 2>&1
cp "$RES/results.md" "$OUT/full_results.md" 2>/dev/null
tar czf "$OUT/full_results.tar.gz" -C "$WORK" results
echo
echo "| family | status | seconds |"
echo "|---|---|---:|"
while IFS='|' read -r fam state secs; do echo "| $fam | $state | $secs |"; done < "$STATUS"
echo "total $(( $(date +%s) - t_start )) s; files: $OUT/full_results.tar.gz, $OUT/full_results.md"
echo
python3 - "$RES" <<'PY'
import sys
sys.path.insert(0, "benchmarks")
import report
r = report.load_results(sys.argv[1])
print(report.summary_table(r, "results.md") if r else "no family JSON was written")
PY
rm -rf "$WORK"
