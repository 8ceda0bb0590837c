#!/usr/bin/env bash
# The main job: tally-server on the emulated GPU and two unmodified nvcc-built CUDA programs
# (tests/e2e/priority_jobs, built with -cudart shared) sharing it through tally-run: a
# latency-critical request server (high priority) and a trainer with long kernels of many blocks
# (best-effort). It shows the server's request latency alone, then beside the trainer under the
# fifo policy (no priorities) and under Tally's priority policy, with the trainer's throughput,
# and what `tally-ctl status` saw; then a summary: p99 against alone under each policy and the
# trainer's preemptions, and whether what Tally claims held on this run (it says so either way).
# Each program checks its own results.
# Usage: scripts/demo.sh BUILD_DIR
set -euo pipefail
build_dir=$1
server=$build_dir/server/tally-server
run=$build_dir/tools/tally-run
ctl=$build_dir/tools/tally-ctl
jobs=$build_dir/tests/e2e/priority_jobs
# The trainer keeps the device busy for the whole request phase (rounds of long kernels for 6 s);
# 40 requests of three short kernels come at random gaps of up to 30 ms.
train_args=(train --kernels 4 --blocks 2048 --work 1500 --duration-ms 6000)
serve_args=(serve --kernels 120 --blocks 8 --work 300 --per-request 3 --max-gap-ms 30)

work=$(mktemp -d /tmp/tally-demo-XXXXXX)
server_pid=
stop_server() {
  if [[ -n $server_pid ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
}
trap 'stop_server; rm -rf "$work"' EXIT

# start_server POLICY: a fresh server, so that each case starts from the same state.
start_server() {
  socket=$work/$1.sock
  "$server" --emulate --socket "$socket" --policy="$1" --profile-cache=none --code-cache=none \
    2>"$work/$1.log" &
  server_pid=$!
  for _ in $(seq 100); do [[ -S $socket ]] && return; sleep 0.05; done
  cat "$work/$1.log"
  echo "demo: the server did not start" >&2
  exit 1
}

# start_job NAME LEVEL ARGS...: a job with priority_jobs' handshake (READY, then a line to go;
# FINISHED, then a line to exit), its stdin a fifo held open on the fd in NAME_fd.
start_job() {
  local name=$1 level=$2 fd
  mkfifo "$work/$name.in"
  "$run" --priority "$level" --server "$socket" -- "$jobs" "${@:3}" --handshake \
    <"$work/$name.in" >"$work/$name.out" 2>&1 &
  printf -v "${name}_pid" %s $!
  exec {fd}>"$work/$name.in"
  printf -v "${name}_fd" %s "$fd"
}
# await_line NAME LINE: waits (at most two minutes) until the job printed LINE.
await_line() {
  for _ in $(seq 1200); do
    grep -qx "$2" "$work/$1.out" 2>/dev/null && return
    sleep 0.1
  done
  cat "$work/$1.out"
  echo "demo: $1 never printed $2" >&2
  exit 1
}
# finish_job NAME: lets the job exit and checks it succeeded.
finish_job() {
  local pid_var=$1_pid fd_var=$1_fd
  echo exit >&"${!fd_var}"
  exec {fd_var}>&-
  wait "${!pid_var}" || { cat "$work/$1.out"; echo "demo: $1 failed" >&2; exit 1; }
  rm -f "$work/$1.in"
}
result() { grep -vx 'READY\|FINISHED' "$work/$1.out"; }

# serve_beside_train POLICY: both jobs at once; prints the latencies, the trainer's rate and
# what tally-ctl status says of both at the end, while they are still connected.
serve_beside_train() {
  start_server "$1"
  start_job train best-effort "${train_args[@]}"
  start_job serve high "${serve_args[@]}"
  await_line train READY
  await_line serve READY
  echo go >&"$train_fd"
  sleep 1  # the trainer is under way when the requests come
  echo go >&"$serve_fd"
  await_line serve FINISHED
  await_line train FINISHED
  echo "-- tally-ctl status once both finished, still connected:"
  "$ctl" status --server "$socket" | sed 's/^/   /'
  "$ctl" status --json --server "$socket" >"$work/$1.status.json"
  finish_job serve
  finish_job train
  echo "-- request latency (us) beside the trainer under $1: $(result serve)"
  echo "-- trainer under $1: $(result train)"
  result serve >"$work/$1.serve"
  result train >"$work/$1.train"
  stop_server
}

echo "== the request server alone (latency in microseconds, queueing included)"
start_server fifo
"$run" --priority high --server "$socket" -- "$jobs" "${serve_args[@]}" >"$work/alone.out" 2>&1 ||
  { cat "$work/alone.out"; echo "demo: the request server failed" >&2; exit 1; }
echo "-- alone: $(cat "$work/alone.out")"
cp "$work/alone.out" "$work/alone.serve"
stop_server

echo "== the trainer alone"
start_server fifo
"$run" --priority best-effort --server "$socket" -- "$jobs" "${train_args[@]}" \
  >"$work/train-alone.out" 2>&1 || { cat "$work/train-alone.out"; exit 1; }
echo "-- alone: $(cat "$work/train-alone.out")"
stop_server

echo "== both at once, fifo (every kernel issued as it comes, priorities ignored)"
serve_beside_train fifo
echo "== both at once, priority (the trainer only in idle time, preempted when requests come)"
serve_beside_train priority
echo "== both jobs computed correct results on the shared (emulated) GPU in every case"
echo "== summary"
python3 - "$work" <<'SUMMARY'
import json, re, sys
work = sys.argv[1]
def p99(name):
    return float(re.search(r"p99_us ([0-9.]+)", open(f"{work}/{name}.serve").read()).group(1))
def trainer(policy):
    status = json.load(open(f"{work}/{policy}.status.json"))
    return next(c["scheduling"] for c in status["clients"] if c["priority"] == 0)
alone = p99("alone")
fifo, priority = p99("fifo") / alone, p99("priority") / alone
preemptions = trainer("priority")["preemptions"]
print(f"request p99 against alone: fifo {fifo:.2f}x, priority {priority:.2f}x; "
      f"the trainer was preempted {preemptions} times under priority")
held = fifo >= 2 * priority and preemptions > 0
print("what Tally claims held on this run: the trainer delays requests under fifo, and priority "
      f"takes {fifo / priority:.1f}x of that delay away by preempting it" if held else
      "what Tally claims did NOT hold on this run (a loaded machine can do this): see above")
SUMMARY
