#!/usr/bin/env bash
# The main job, for now: what Tally's front end sees in a real nvcc-built CUDA program. It
# lists the program's fatbins, PTX and kernel parameter layouts, extracts the PTX, and checks
# that each module round-trips through the parser and printer and is accepted by ptxas.
# (Once tally-server exists this becomes two prioritised jobs sharing the emulated GPU.)
# Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
build_dir=$1
tally_ptx=$build_dir/ptx_transform/tally-ptx
program=$build_dir/tests/fatbin/multi_arch  # nvcc -gencode sm_75, compute_80, sm_90

echo "== tally-ptx list $(basename "$program")"
"$tally_ptx" list "$program"
echo
echo "== tally-ptx extract + check"
out_dir=$build_dir/demo-ptx
rm -rf "$out_dir"
"$tally_ptx" extract "$program" -o "$out_dir" >/dev/null
for ptx in "$out_dir"/*.ptx; do
  "$tally_ptx" check "$ptx"
done
