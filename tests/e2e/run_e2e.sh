#!/usr/bin/env bash
# End-to-end scenarios: a private tally-server on the emulated GPU, nvcc-built programs run
# through tally-run. Usage: run_e2e.sh <tally-server> <tally-run> <program dir> <scenario>
# Every wait is bounded; the server is stopped (by the pid we started) whatever happens.
set -u
server_bin=$1 run_bin=$2 programs=$3 scenario=$4

work=$(mktemp -d /tmp/tally-e2e-XXXXXX)
socket=$work/server.sock
server_pid=
cleanup() {
  if [[ -n $server_pid ]]; then
    kill -TERM "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- server log" >&2; cat "$work/server.log" >&2; exit 1; }

# start_server [server flags...]
start_server() {
  "$server_bin" --emulate --socket "$socket" "$@" 2>"$work/server.log" &
  server_pid=$!
  for _ in $(seq 100); do [[ -S $socket ]] && return; sleep 0.05; done
  fail "the server did not create $socket"
}

# run <program> [args]: through tally-run, bounded in time.
run() { timeout 120 "$run_bin" --server "$socket" -- "$programs/$1" "${@:2}"; }

case $scenario in
  single)  # each program on its own
    start_server
    for program in "${@:5}"; do run "$program" || fail "$program failed"; done
    ;;
  concurrent)  # the named programs all at once, each must be correct
    start_server
    pids=()
    for program in "${@:5}"; do
      run "$program" > "$work/$program.out" 2>&1 &
      pids+=($!)
    done
    i=0
    for program in "${@:5}"; do
      wait "${pids[$i]}" || { cat "$work/$program.out"; fail "$program failed next to the others"; }
      i=$((i + 1))
    done
    count=$(grep -c "client [0-9]* connected" "$work/server.log")
    [[ $count -eq $(($# - 4)) ]] || fail "the server saw $count clients, expected $(($# - 4))"
    ;;
  priority)  # tally-run's priority reaches the server
    start_server
    timeout 120 "$run_bin" --priority 7 --server "$socket" -- "$programs/vector_add" ||
      fail "vector_add failed"
    grep -q "priority 7" "$work/server.log" || fail "the server did not see priority 7"
    ;;
  killed)  # a client killed while holding memory: it is reclaimed, the server carries on
    start_server
    # exec: the coprocess's pid is then the hog's own (tally-run execs it too).
    coproc HOG { exec "$run_bin" --server "$socket" -- "$programs/hog"; }
    hog_pid=$HOG_PID
    read -r -t 60 line <&"${HOG[0]}" || fail "hog never became ready"
    [[ $line == READY ]] || fail "hog said '$line'"
    kill -KILL "$hog_pid"
    wait "$hog_pid" 2>/dev/null
    reclaimed="freed 1 allocation(s) of 268435456 bytes, 2 page-locked block(s)"
    for _ in $(seq 100); do grep -q "$reclaimed" "$work/server.log" && break; sleep 0.05; done
    grep -q "$reclaimed" "$work/server.log" || fail "hog's memory was not reclaimed"
    run meminfo || fail "memory still in use after the killed client"
    run vector_add || fail "the server no longer serves after a client died"
    ;;
  server_killed)  # a client of a server that dies gets an error promptly, never a hang
    start_server
    coproc SURVIVOR { exec "$run_bin" --server "$socket" -- "$programs/survivor"; }
    survivor_pid=$SURVIVOR_PID
    read -r -t 60 line <&"${SURVIVOR[0]}" || fail "survivor never became ready"
    kill -KILL "$server_pid"
    wait "$server_pid" 2>/dev/null
    server_pid=
    read -r -t 10 line <&"${SURVIVOR[0]}" || fail "the client did not notice the server's death"
    [[ $line == cudaErrorDevicesUnavailable ]] || fail "the client got '$line'"
    wait "$survivor_pid" || fail "survivor exited with an error"
    ;;
  static)  # tally-run refuses a statically linked runtime with an explanation
    "$run_bin" --server "$socket" -- "$programs/vector_add_static" > "$work/out" 2>&1
    status=$?
    [[ $status -eq 3 ]] || fail "tally-run exited $status for a static binary"
    grep -q "cudart shared" "$work/out" || fail "no explanation: $(cat "$work/out")"
    ;;
  no_server)  # without a server the program fails at its first CUDA call, promptly
    timeout 30 "$run_bin" --server "$work/nobody.sock" -- "$programs/vector_add" > "$work/out" 2>&1
    status=$?
    [[ $status -ne 0 && $status -ne 124 ]] || fail "exit status $status without a server"
    grep -q "nobody.sock" "$work/out" || fail "the error names no socket: $(cat "$work/out")"
    ;;
  validate)  # validate FORM programs...: each correct with its kernels in the transformed form
    form=$5
    start_server --validate="$form"
    for program in "${@:6}"; do run "$program" || fail "$program failed under --validate=$form"; done
    # Each client's launches by form are logged just before it is said to be gone.
    for _ in $(seq 100); do
      [[ $(grep -c " gone: freed" "$work/server.log") -eq $(($# - 5)) ]] && break
      sleep 0.05
    done
    sum() { grep -o "[0-9]* $1" "$work/server.log" | awk '{ total += $1 } END { print total + 0 }'; }
    case $form in
      slice:*) transformed=$(sum sliced) ;;
      *) transformed=$(sum preemptible) ;;
    esac
    [[ $transformed -gt 0 ]] || fail "no kernel ran in the $form form"
    originals=$(sum original)
    [[ $originals -eq 0 ]] || grep -q "keeps its original form" "$work/server.log" ||
      fail "$originals launches in the original form, and the log says not why"
    if [[ $form == preempt* ]]; then
      [[ $(sum resumes) -gt 0 ]] || fail "no PTB kernel was preempted and resumed"
    fi
    grep "kernel launches" "$work/server.log"
    ;;
  *) fail "unknown scenario $scenario" ;;
esac
echo "PASS: $scenario"
