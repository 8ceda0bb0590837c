#!/usr/bin/env bash
# Runs a benchmark program (shim_calls, library_calls) through tally-run against a private
# tally-server on the emulated GPU. Usage: run_shim_calls.sh TALLY_SERVER TALLY_RUN PROGRAM
# [the program's arguments]
set -euo pipefail
server=$1 run=$2 program=$3
shift 3
work=$(mktemp -d /tmp/tally-bench-XXXXXX)
socket=$work/server.sock
"$server" --emulate --socket "$socket" 2>"$work/server.log" &
server_pid=$!
trap 'kill -TERM $server_pid 2>/dev/null; wait $server_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [[ -S $socket ]] && break; sleep 0.05; done
[[ -S $socket ]] || { cat "$work/server.log" >&2; exit 1; }
timeout 600 "$run" --server "$socket" -- "$program" "$@"
