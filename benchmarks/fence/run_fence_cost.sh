#!/usr/bin/env bash
# What the fence (tally-server --isolation fenced) costs whole programs: each program through
# tally-run against two private servers, one without and one with the fence, after a first run
# through each (module transformation, left out), ROUNDS rounds alternating between them, the
# median wall time of each. Prints one Markdown row per program and the geometric mean of the
# ratios. By default on the emulated GPU configured as NVIDIA's driver (one address space,
# TALLY_EMU_NO_TENANTS); --gpu: on NVIDIA's driver; --server-arg ARG (repeatable): one more
# argument for both servers (scripts/gpu-check.sh passes the bundle's emulator library).
# Usage: run_fence_cost.sh [--gpu] [--server-arg ARG]... TALLY_SERVER TALLY_RUN PROGRAM_DIR
#        ROUNDS PROGRAMS...
set -euo pipefail
backend=(--emulate)
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --gpu) backend=(); shift ;;
    --server-arg) backend+=("$2"); shift 2 ;;
    *) echo "run_fence_cost.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
server=$1 run=$2 programs=$3 rounds=$4
shift 4
work=$(mktemp -d /tmp/tally-fence-XXXXXX)
pids=()
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
# start_server MODE [flags...]: a private server on $work/MODE.sock.
start_server() {
  local mode=$1
  shift
  TALLY_EMU_NO_TENANTS=1 "$server" "${backend[@]}" --socket "$work/$mode.sock" --profile-cache none --code-cache none \
    "$@" 2>>"$work/$mode.log" &
  pids+=($!)
  for _ in $(seq 200); do [[ -S $work/$mode.sock ]] && return; sleep 0.05; done
  cat "$work/$mode.log" >&2
  exit 1
}
# Seconds one run of a program takes through the server of MODE.
seconds() {
  local began=$EPOCHREALTIME
  TALLY_E2E_NO_ASSERT=1 timeout 600 "$run" --server "$work/$1.sock" -- "$programs/$2" \
    >/dev/null 2>&1 || { echo "$2 failed ($1)" >&2; exit 1; }
  python3 -c "print($EPOCHREALTIME - $began)"
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

start_server plain
start_server fenced --isolation fenced
# A first run of each program through each server transforms its modules: left out.
for program in "$@"; do seconds plain "$program" >/dev/null; seconds fenced "$program" >/dev/null; done
echo "| program | unfenced (s) | fenced (s) | fenced / unfenced |"
echo "|---|---:|---:|---:|"
ratios=()
for program in "$@"; do
  plain=() fenced=()
  for _ in $(seq "$rounds"); do  # alternating, so that the machine's noise falls on both
    plain+=("$(seconds plain "$program")")
    fenced+=("$(seconds fenced "$program")")
  done
  p=$(median "${plain[@]}") f=$(median "${fenced[@]}")
  ratio=$(python3 -c "print(f'{$f / $p:.3f}')")
  ratios+=("$ratio")
  printf '| %s | %.3f | %.3f | %s |\n' "$program" "$p" "$f" "$ratio"
done
python3 -c "import math, sys; r = [float(x) for x in sys.argv[1:]]; print(f'geometric mean of the ratios: {math.exp(sum(map(math.log, r)) / len(r)):.3f}')" "${ratios[@]}"
