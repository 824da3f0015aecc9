# Sourced by the Nsight Compute scripts (profile.sh, ncu_full.sh) after they set OUT's default:
# runs from the repository root, asks for VARIANT (the built variant directory) and puts it and
# tools/profile on PYTHONPATH, makes $OUT and a scratch directory $WORK for the per-family files.
# ncu_pack NAME packs $WORK into $OUT/NAME and removes it.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
: "${VARIANT:?set VARIANT to the built variant directory (build/<dir>/variant.txt)}"
mkdir -p "$OUT"
WORK=$(mktemp -d)
export PYTHONPATH="$VARIANT:tools/profile:${PYTHONPATH:-}"

ncu_pack() {
  tar czf "$OUT/$1" -C "$WORK" .
  rm -rf "$WORK"
}
