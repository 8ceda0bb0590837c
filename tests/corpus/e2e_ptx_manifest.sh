#!/usr/bin/env bash
# Writes a corpus manifest of the PTX that the end-to-end programs embed, so that the corpus's
# semantics test runs their kernels too. Usage: e2e_ptx_manifest.sh TALLY_PTX OUT_DIR MANIFEST
# PROGRAM... (each program's PTX entries go to OUT_DIR/<program>/; a program without any is
# left out).
set -euo pipefail
tally_ptx=$1 out=$2 manifest=$3
shift 3
rm -rf "$out"
mkdir -p "$out"
lines=()
for program in "$@"; do
  name=$(basename "$program")
  "$tally_ptx" extract "$program" -o "$out/$name" > /dev/null
  for ptx in "$out/$name"/*.ptx; do
    [[ -f $ptx ]] || continue
    arch=${ptx##*compute_}
    lines+=("e2e sm_${arch%.ptx} $ptx")
  done
done
printf '%s\n' "${lines[@]}" > "$manifest"
