#!/usr/bin/env bash
# The main job: tally-server on the emulated GPU, and two unmodified nvcc-built CUDA programs
# (tests/e2e, built with -cudart shared) sharing it at once through tally-run, one as a
# high-priority job and one as best-effort. Each program checks its own results and says so.
# Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
build_dir=$1
server=$build_dir/server/tally-server
run=$build_dir/tools/tally-run
programs=$build_dir/tests/e2e

work=$(mktemp -d /tmp/tally-demo-XXXXXX)
socket=$work/server.sock
server_pid=
cleanup() {
  [[ -n $server_pid ]] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

echo "== tally-server --emulate --socket $socket"
"$server" --emulate --socket "$socket" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 100); do [[ -S $socket ]] && break; sleep 0.05; done
[[ -S $socket ]] || { cat "$work/server.log"; echo "demo: the server did not start" >&2; exit 1; }

echo "== two jobs at once: vector_add (high priority) and params (best-effort)"
"$run" --priority high --server "$socket" -- "$programs/vector_add" >"$work/high.out" 2>&1 &
high=$!
"$run" --priority best-effort --server "$socket" -- "$programs/params" >"$work/low.out" 2>&1 &
low=$!
status=0
wait "$high" || status=1
wait "$low" || status=1
echo "-- high priority (vector_add):"
cat "$work/high.out"
echo "-- best-effort (params):"
cat "$work/low.out"
echo "-- server log:"
cat "$work/server.log"
if [[ $status -ne 0 ]]; then
  echo "demo: a job failed" >&2
  exit 1
fi
echo "== both jobs computed correct results on the shared (emulated) GPU"
