#!/usr/bin/env bash
# The validator must refuse TARGET, saying MESSAGE (a grep -E pattern).
# Usage: expect_invalid.sh NODE TARGET MESSAGE
set -uo pipefail
node=$1 target=$2 message=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
output=$("$node" "$here/validate_manifests.js" "$target" 2>&1)
status=$?
((status == 1)) || { echo "FAIL: exit status $status, not 1: $output" >&2; exit 1; }
grep -qE -- "$message" <<< "$output" || { echo "FAIL: no '$message' in: $output" >&2; exit 1; }
echo "refused as expected: $output"
