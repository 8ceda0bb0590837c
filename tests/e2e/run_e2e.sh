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

# status_json <file>: tally-ctl status --json (TALLY_CTL, set by CMake) into <file>, checked
# to be valid JSON.
status_json() {
  timeout 30 "$TALLY_CTL" status --json --server "$socket" > "$1" || fail "tally-ctl status failed"
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" ||
    fail "tally-ctl status --json is not JSON: $(cat "$1")"
}

# json_true <file> <python expression over `s`, the parsed status>: its truth as exit status.
json_true() {
  python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$1" "$2"
}
json_check() { json_true "$1" "$2" || fail "status does not satisfy $2: $(cat "$1")"; }

# start_hog [tally-run options]: a client holding 256 MiB, waiting to be killed; sets hog_pid.
start_hog() {
  # exec: the coprocess's pid is then the hog's own (tally-run execs it too).
  coproc HOG { exec "$run_bin" "$@" --server "$socket" -- "$programs/hog"; }
  hog_pid=$HOG_PID
  read -r -t 60 line <&"${HOG[0]}" || fail "hog never became ready"
  [[ $line == READY ]] || fail "hog said '$line'"
}

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
  refused)  # refused PROGRAM CONSTRUCT: PROGRAM checks its launches fail as CUDA's would; the
    # server's log (what the operator reads) says why, naming the construct its device refused
    start_server
    run "$5" || fail "$5 failed"
    grep -q "cannot load a module.*$6" "$work/server.log" ||
      fail "the server's log does not name $6 as why the module did not load"
    ;;
  priority)  # tally-run's priority reaches the server
    start_server
    timeout 120 "$run_bin" --priority 7 --server "$socket" -- "$programs/vector_add" ||
      fail "vector_add failed"
    grep -q "priority 7" "$work/server.log" || fail "the server did not see priority 7"
    ;;
  killed)  # a client killed while holding memory: it is reclaimed, the server carries on
    start_server
    start_hog
    status_json "$work/before.json"
    json_check "$work/before.json" \
      "[c['memory_bytes'] for c in s['clients'] if c['pid'] == $hog_pid] == [268435456]"
    kill -KILL "$hog_pid"
    wait "$hog_pid" 2>/dev/null
    # Gone from the list and its memory free again (the server frees it within milliseconds).
    gone="not s['clients'] and s['device']['free_memory_bytes'] == s['device']['total_memory_bytes']"
    for _ in $(seq 100); do
      status_json "$work/after.json"
      json_true "$work/after.json" "$gone" && break
      sleep 0.05
    done
    json_check "$work/after.json" "$gone"
    grep -q "freed 1 allocation(s) of 268435456 bytes, 2 page-locked block(s)" "$work/server.log" ||
      fail "the server did not log the reclaimed memory"
    run meminfo || fail "memory still in use after the killed client"
    run vector_add || fail "the server no longer serves after a client died"
    ;;
  status)  # tally-ctl status against a live server with a client connected
    timeout 30 "$TALLY_CTL" --help | grep -q -- "--json" || fail "tally-ctl --help says no --json"
    timeout 30 "$TALLY_CTL" status --server "$work/nobody.sock" > "$work/out" 2>&1
    status=$?
    [[ $status -eq 1 ]] || fail "tally-ctl exited $status without a server"
    grep -q "nobody.sock" "$work/out" || fail "the error names no socket: $(cat "$work/out")"
    start_server
    status_json "$work/empty.json"
    json_check "$work/empty.json" "s['clients'] == [] and s['backend']['kind'] == 'emulator'"
    start_hog --priority 5
    status_json "$work/one.json"
    json_check "$work/one.json" "set(s) == {'socket', 'server_pid', 'device', 'backend', 'clients'}"
    json_check "$work/one.json" "s['socket'] == '$socket' and s['server_pid'] == $server_pid"
    json_check "$work/one.json" \
      "s['device']['name'] and 0 < s['device']['free_memory_bytes'] < s['device']['total_memory_bytes']"
    json_check "$work/one.json" "len(s['clients']) == 1"
    json_check "$work/one.json" "s['clients'][0]['pid'] == $hog_pid and s['clients'][0]['priority'] == 5"
    json_check "$work/one.json" \
      "s['clients'][0]['memory_bytes'] == 268435456 and s['clients'][0]['allocations'] == 1"
    json_check "$work/one.json" \
      "s['clients'][0]['queued_commands'] == 0 and s['clients'][0]['command'].endswith('/hog')"
    timeout 30 "$TALLY_CTL" status --server "$socket" > "$work/text" || fail "plain status failed"
    grep -q "clients: 1" "$work/text" || fail "plain status: $(cat "$work/text")"
    grep -q "$hog_pid" "$work/text" || fail "plain status lacks pid $hog_pid: $(cat "$work/text")"
    kill -KILL "$hog_pid"
    wait "$hog_pid" 2>/dev/null
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
