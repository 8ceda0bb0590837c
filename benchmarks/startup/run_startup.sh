#!/usr/bin/env bash
# Time to first kernel end for modules of several sizes (startup.cu), on the emulated GPU:
# directly on the emulator's driver library (the floor: what loading costs without Tally), and
# through tally-run against a private tally-server: the first process after the server started
# (cold), a second process of the same program (warm) and the first after a server restart.
# Each round's server starts with an empty code cache of its own (TALLY_CODE_CACHE, which a
# server without the code cache ignores), kept across the restart.
# Prints one Markdown row per size, medians of ROUNDS rounds (milliseconds).
# --gpu: on NVIDIA's driver, the floor the program run on it without Tally (LIBTALLY_EMU is then
# unused); --server-arg ARG (repeatable): one more argument for the server (--validate=slice:2
# puts the kernel's transformed forms before its first end, --isolation=fenced every kernel's
# forms before the module's load); --floor-libraries DIR: where the program run without Tally
# finds the libraries it needs beside the driver (its libcudart on a GPU machine); --ctl
# TALLY_CTL: before each server stops, waits (bounded) until its filler has no machine code left
# to link, and prints after the table the machine-code counters of every server summed
# (tally-ctl status: "machine code: N linked, N loaded from the cache, N refused by the driver, N
# links failed"), the linker's complaints on stderr when a link failed.
# Usage: run_startup.sh [--gpu] [--server-arg ARG]... [--floor-libraries DIR] [--ctl TALLY_CTL]
#        TALLY_SERVER TALLY_RUN STARTUP LIBTALLY_EMU ROUNDS SIZES...
set -euo pipefail
backend=(--emulate) server_args=() floor_libraries= ctl=
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --gpu) backend=(); shift ;;
    --server-arg) server_args+=("$2"); shift 2 ;;
    --floor-libraries) floor_libraries=$2; shift 2 ;;
    --ctl) ctl=$2; shift 2 ;;
    *) echo "run_startup.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
server=$1 run=$2 program=$3 emulator=$4 rounds=$5
shift 5
work=$(mktemp -d /tmp/tally-startup-XXXXXX)
socket=$work/server.sock
server_pid=
stop_server() {
  [[ -z $server_pid ]] && return
  kill -TERM "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
trap 'stop_server; rm -rf "$work"' EXIT
start_server() {
  TALLY_CODE_CACHE=$work/code-cache \
    "$server" "${backend[@]}" --socket "$socket" --profile-cache none "${server_args[@]}" \
    2>>"$work/server.log" &
  server_pid=$!
  for _ in $(seq 200); do [[ -S $socket ]] && return; sleep 0.05; done
  cat "$work/server.log" >&2
  exit 1
}
# The running server's machine-code counters (tally-ctl status --json's code_cache.machine_code):
# "linked loaded refused link_failed filling"; nothing without a code cache.
machine_counts() {
  "$ctl" status --json --server "$socket" | grep -o '"machine_code": {[^}]*}' | grep -o '[0-9]\+' |
    tr '\n' ' '
}
machine_code=(0 0 0 0)
# Adds the running server's counters to machine_code, once its filler is idle (at most 60 s).
count_machine_code() {
  [[ -z $ctl ]] && return
  local counts=() i
  for _ in $(seq 600); do
    read -ra counts <<< "$(machine_counts)"
    [[ ${#counts[@]} -ne 5 || ${counts[4]} -eq 0 ]] && break
    sleep 0.1
  done
  [[ ${#counts[@]} -eq 5 ]] || return 0
  for i in 0 1 2 3; do machine_code[i]=$((machine_code[i] + counts[i])); done
}

# The emulator's library as libcuda.so.1, for the program run without Tally (on a GPU: the
# driver's own).
mkdir "$work/driver"
[[ ${#backend[@]} -eq 0 ]] || ln -s "$(realpath "$emulator")" "$work/driver/libcuda.so.1"

# The first-kernel-end time of one run (its line: "... first_kernel_end_ms T").
first_end() { "$@" | awk '{print $NF}'; }
direct() {
  LD_LIBRARY_PATH="$work/driver${floor_libraries:+:$floor_libraries}" first_end "$program" "$1"
}
tally() { first_end timeout 600 "$run" --server "$socket" -- "$program" "$1"; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

echo "| kernels | direct (floor) | Tally cold | Tally warm | Tally after restart | cold / floor |"
echo "|---:|---:|---:|---:|---:|---:|"
for size in "$@"; do
  floor=() cold=() warm=() restarted=()
  for _ in $(seq "$rounds"); do
    floor+=("$(direct "$size")")
    rm -rf "$work/code-cache"
    start_server
    cold+=("$(tally "$size")")
    warm+=("$(tally "$size")")
    count_machine_code
    stop_server
    start_server
    restarted+=("$(tally "$size")")
    count_machine_code
    stop_server
  done
  f=$(median "${floor[@]}") c=$(median "${cold[@]}")
  printf '| %s | %s | %s | %s | %s | %s |\n' "$size" "$f" "$c" "$(median "${warm[@]}")" \
    "$(median "${restarted[@]}")" "$(awk -v c="$c" -v f="$f" 'BEGIN {printf "%.1f", c / f}')"
done
if [[ -n $ctl ]]; then
  printf '\nmachine code: %s linked, %s loaded from the cache, %s refused by the driver, %s %s\n' \
    "${machine_code[@]}" "links failed"
  ((machine_code[3] == 0)) || grep "the linker did not compile" "$work/server.log" | head -5 >&2 ||
    true
fi
