#!/usr/bin/env bash
# Runs a benchmark program (shim_calls, library_calls) through tally-run against a private
# tally-server on the emulated GPU. Usage: run_shim_calls.sh TALLY_SERVER TALLY_RUN PROGRAM
# [the program's arguments]. TALLY_BENCH_SERVER_FLAGS and TALLY_BENCH_RUN_FLAGS add flags to
# tally-server and tally-run (split at spaces), e.g. to run cuBLAS GEMMs in a vendor library.
set -euo pipefail
server=$1 run=$2 program=$3
shift 3
work=$(mktemp -d /tmp/tally-bench-XXXXXX)
socket=$work/server.sock
# shellcheck disable=SC2086
"$server" --emulate --socket "$socket" --code-cache none ${TALLY_BENCH_SERVER_FLAGS:-} 2>"$work/server.log" &
server_pid=$!
trap 'kill -TERM $server_pid 2>/dev/null; wait $server_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [[ -S $socket ]] && break; sleep 0.05; done
[[ -S $socket ]] || { cat "$work/server.log" >&2; exit 1; }
# shellcheck disable=SC2086
timeout 600 "$run" ${TALLY_BENCH_RUN_FLAGS:-} --server "$socket" -- "$program" "$@"
