#!/usr/bin/env bash
# End-to-end scenarios: a private tally-server on the emulated GPU, nvcc-built programs run
# through tally-run. Usage: run_e2e.sh <tally-server> <tally-run> <program dir> <scenario>
# Every wait is bounded; the server is stopped (by the pid we started) whatever happens.
set -u
server_bin=$1 run_bin=$2 programs=$3 scenario=$4

work=$(mktemp -d /tmp/tally-e2e-XXXXXX)
# A private code cache for every server the scenario starts (--code-cache's environment
# fallback): tests never read or write the user's.
export TALLY_CODE_CACHE=$work/code-cache-default
socket=$work/server.sock
server_pid=
background_pids=()  # helpers that must not outlive the test, whatever happens
cleanup() {
  if ((${#background_pids[@]})); then kill -KILL "${background_pids[@]}" 2>/dev/null; fi
  if [[ -n $server_pid ]]; then
    kill -TERM "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  # In a sanitizer build, what the sanitizer found in the server (leaks come at its exit) fails
  # the test even when every client passed.
  local report=0
  grep -q -E "ERROR: [A-Za-z]+Sanitizer|runtime error:" "$work/server.log" 2>/dev/null && report=1
  ((report)) && { echo "FAIL: a sanitizer report in the server's log" >&2; cat "$work/server.log" >&2; }
  rm -rf "$work"
  ((report)) && exit 1
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- server log" >&2; cat "$work/server.log" >&2; exit 1; }

# start_server [server flags...]; TALLY_E2E_SERVER_FLAGS (split on spaces) come first, so that a
# scenario runs again under other settings (e.g. --isolation fenced).
start_server() {
  local extra=()
  read -r -a extra <<< "${TALLY_E2E_SERVER_FLAGS:-}"
  # A private profile cache: tests never read or write the user's.
  "$server_bin" --emulate --socket "$socket" --profile-cache "$work/profile-cache.json" \
    "${extra[@]}" "$@" 2>"$work/server.log" &
  server_pid=$!
  for _ in $(seq 100); do [[ -S $socket ]] && return; sleep 0.05; done
  fail "the server did not create $socket"
}

# await_sockets N: waits (bounded) until TALLY_RUN_DIR holds N servers' sockets; sets sockets.
await_sockets() {
  sockets=()
  for _ in $(seq 200); do
    mapfile -t sockets < <(compgen -G "$TALLY_RUN_DIR/GPU-*.sock")
    ((${#sockets[@]} == $1)) && return 0
    sleep 0.05
  done
  return 1
}

# await_log TEXT: until the server's log has a line containing TEXT (ten seconds at most).
await_log() {
  for _ in $(seq 200); do
    grep -qF -- "$1" "$work/server.log" && return
    sleep 0.05
  done
  fail "the server's log never said: $1"
}

# run <program> [args]: through tally-run, bounded in time.
run() { timeout 120 "$run_bin" --server "$socket" -- "$programs/$1" "${@:2}"; }

# run_expecting <word> <name> <program> [args]: runs the program (its output in
# $work/<name>.out) and fails unless it succeeds and says <word> on a line of its own.
run_expecting() {
  local word=$1 name=$2
  run "${@:3}" > "$work/$name.out" 2>&1 || fail "$name: $(cat "$work/$name.out")"
  grep -qx "$word" "$work/$name.out" || fail "$name did not say $word: $(cat "$work/$name.out")"
}

# ask <coprocess> <line> <answer>: sends the line to the coprocess (the name given to coproc)
# and fails unless it answers <answer> in time.
ask() {
  local -n fds=$1
  echo "$2" >&"${fds[1]}"
  read -r -t 60 line <&"${fds[0]}" || fail "$1 did not answer '$2'"
  [[ $line == "$3" ]] || fail "$1 answered '$line' to '$2', not '$3'"
}

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
# await_status <file> <expression>: polls the status (bounded) until the expression holds.
await_status() {
  for _ in $(seq 200); do
    status_json "$1"
    json_true "$1" "$2" && return
    sleep 0.05
  done
  json_check "$1" "$2"
}

# await_metric LINE: polls tally-ctl metrics (bounded) until it has the line; the server notices
# a client's exit on its own time.
await_metric() {
  for _ in $(seq 200); do
    timeout 30 "$TALLY_CTL" metrics --server "$socket" > "$work/metrics.txt" 2>&1 || true
    grep -qxF -- "$1" "$work/metrics.txt" && return
    sleep 0.05
  done
  fail "the metrics never said $1: $(cat "$work/metrics.txt")"
}

# start_hog [tally-run options]: a client holding 256 MiB, waiting to be killed; sets hog_pid.
start_hog() {
  # exec: the coprocess's pid is then the hog's own (tally-run execs it too).
  coproc HOG { exec "$run_bin" "$@" --server "$socket" -- "$programs/hog"; }
  hog_pid=$HOG_PID
  background_pids+=("$hog_pid")
  read -r -t 60 line <&"${HOG[0]}" || fail "hog never became ready"
  [[ $line == READY ]] || fail "hog said '$line'"
}

# start_job <name> <priority> <program> <arguments...>: a job speaking the handshake protocol
# (READY, then a line to go; FINISHED, then a line to exit), its stdin on a fifo kept open by fd
# 7+n; sets <name>_pid. Its output goes to $work/<name>.out.
job_fds=()
start_job() {
  local name=$1 level=$2
  mkfifo "$work/$name.in"
  "$run_bin" --priority "$level" --server "$socket" -- "$programs/$3" "${@:4}" \
    < "$work/$name.in" > "$work/$name.out" 2>&1 &
  printf -v "${name}_pid" %s $!
  local fd
  exec {fd}> "$work/$name.in"
  job_fds+=("$name:$fd")
}
send_line() {
  local entry
  for entry in "${job_fds[@]}"; do
    [[ ${entry%%:*} == "$1" ]] && echo "$2" >&"${entry#*:}"
  done
}
# await_line <name> <line>: waits (bounded) until the job printed the line.
await_line() {
  for _ in $(seq 1200); do
    grep -qx "$2" "$work/$1.out" 2>/dev/null && return
    sleep 0.1
  done
  fail "$1 never printed $2: $(cat "$work/$1.out")"
}
# start_held <program>: the program with --hold as the coprocess HELD (it says DONE after its
# checks, then waits for a line to exit), its output echoed until DONE; sets held_pid.
held_flags=()  # tally-run flags for start_held's program
start_held() {
  coproc HELD { exec "$run_bin" "${held_flags[@]}" --server "$socket" -- "$programs/$1" --hold; }
  held_pid=$HELD_PID
  background_pids+=("$held_pid")
  while read -r -t 120 line <&"${HELD[0]}"; do
    echo "$line"
    [[ $line == DONE ]] && return
  done
  fail "$1 failed (its errors are above the server log)"
}
# client_id <status file> <pid>: the server's id of the client with that pid.
client_id() {
  python3 -c 'import json, sys; print([c["id"] for c in json.load(open(sys.argv[1]))["clients"] if c["pid"] == int(sys.argv[2])][0])' "$1" "$2" ||
    fail "no client with pid $2: $(cat "$1")"
}

case $scenario in
  single)  # each program on its own
    start_server
    for program in "${@:5}"; do run "$program" || fail "$program failed"; done
    ;;
  dynamic_shared)  # dynamic_shared EXPRESSION [server flags...]: the program's kernels at their
    # largest dynamic shared memory, correct; then its counters `c` (tally-ctl status) satisfy
    # the expression.
    start_server "${@:6}"
    start_held dynamic_shared
    status_json "$work/status.json"
    json_check "$work/status.json" "(lambda c: $5)(s['clients'][0]['scheduling'])"
    echo go >&"${HELD[1]}"
    ;;
  library_calls)  # library_calls EXPECTED: the program's library calls served by Tally's kernels
    # (tally-ctl status's library_calls) are EXPECTED, a Python dict, while it runs and, summed
    # over the clients that have left, once it has exited.
    start_server
    start_held library_calls
    status_json "$work/held.json"
    json_check "$work/held.json" "s['clients'][0]['library_calls'] == $5"
    echo go >&"${HELD[1]}"
    wait "$held_pid" || fail "library_calls exited with an error"
    await_status "$work/left.json" "s['clients'] == [] and s['departed']['clients'] == 1"
    json_check "$work/left.json" "s['departed']['library_calls'] == $5"
    ;;
  vendor_calls)  # vendor_calls RULE PRIORITY OWN VENDOR: library_calls at PRIORITY, under a
    # server given the tests' stand-in for NVIDIA's cuBLAS (TALLY_FAKE_VENDOR_DIR) and
    # --library-kernels RULE: its library calls served by Tally's kernels are OWN and those run
    # in the vendor library VENDOR (Python dicts), while it runs and once it has left; its
    # results are checked by the program.
    start_server --vendor-libraries "$TALLY_FAKE_VENDOR_DIR" --library-kernels "$5"
    [[ $5 == own ]] || await_log "run in $TALLY_FAKE_VENDOR_DIR/libcublas.so.13"
    held_flags=(--priority "$6")
    start_held library_calls
    status_json "$work/held.json"
    json_check "$work/held.json" "s['clients'][0]['library_calls'] == $7"
    json_check "$work/held.json" "s['clients'][0]['vendor_library_calls'] == $8"
    echo go >&"${HELD[1]}"
    wait "$held_pid" || fail "library_calls exited with an error"
    await_status "$work/left.json" "s['clients'] == [] and s['departed']['clients'] == 1"
    json_check "$work/left.json" "s['departed']['vendor_library_calls'] == $8"
    ;;
  limited)  # limited LIMIT PROGRAMS...: each program on its own under tally-run --memory-limit
    start_server
    for program in "${@:6}"; do
      timeout 120 "$run_bin" --memory-limit "$5" --server "$socket" -- "$programs/$program" ||
        fail "$program failed"
    done
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
    # The server served each of them: all have left, as clients it counted.
    await_status "$work/served.json" "s['clients'] == [] and s['departed']['clients'] == $(($# - 4))"
    ;;
  priority|priority_swapped)
    # A best-effort trainer (long kernels of many blocks) and a latency-critical server (short
    # kernels at random moments) share the device under the priority policy; with
    # priority_swapped both start at the other level and tally-ctl priority swaps them before
    # they work. Both must compute correct results, the trainer must have been preempted, and
    # every request kernel that started while a trainer kernel ran must end before it.
    start_server --policy=priority
    train_level=best-effort serve_level=high
    [[ $scenario == priority_swapped ]] && train_level=high serve_level=best-effort
    start_job train "$train_level" priority_jobs train --kernels 6 --blocks 2048 --work 1000 \
      --timeline "$work/train.timeline" --handshake
    start_job serve "$serve_level" priority_jobs serve --kernels 16 --blocks 4 --work 200 \
      --max-gap-ms 60 --timeline "$work/serve.timeline" --handshake
    await_line train READY
    await_line serve READY
    status_json "$work/connected.json"
    train_id=$(client_id "$work/connected.json" "$train_pid")
    serve_id=$(client_id "$work/connected.json" "$serve_pid")
    if [[ $scenario == priority_swapped ]]; then
      timeout 30 "$TALLY_CTL" priority "$train_id" best-effort --server "$socket" ||
        fail "tally-ctl priority failed for the trainer"
      timeout 30 "$TALLY_CTL" priority "$serve_id" high --server "$socket" ||
        fail "tally-ctl priority failed for the server"
      if timeout 30 "$TALLY_CTL" priority 99999 high --server "$socket" > "$work/none.out"; then
        fail "tally-ctl priority succeeded for a client that does not exist"
      fi
      grep -q "no client 99999" "$work/none.out" || fail "no explanation: $(cat "$work/none.out")"
    fi
    status_json "$work/levels.json"
    json_check "$work/levels.json" \
      "{c['id']: c['priority'] for c in s['clients']} == {$train_id: 0, $serve_id: 1}"
    send_line train GO
    send_line serve GO
    await_line serve FINISHED
    await_line train FINISHED
    status_json "$work/done.json"
    by_id="{c['id']: c['scheduling'] for c in s['clients']}"
    json_check "$work/done.json" "($by_id)[$train_id]['preemptions'] > 0"
    json_check "$work/done.json" "($by_id)[$train_id]['kernels_preempted'] > 0"
    json_check "$work/done.json" "($by_id)[$train_id]['resumes'] > 0"
    json_check "$work/done.json" "($by_id)[$train_id]['kernels_original'] == 0"
    json_check "$work/done.json" "($by_id)[$serve_id]['kernels_original'] == 16"
    # The latency histograms per class: the trainer's measured preemptions in best-effort's,
    # the server's 16 launches in high's.
    timeout 30 "$TALLY_CTL" metrics --server "$socket" > "$work/latency.prom" ||
      fail "metrics failed"
    python3 - "$work/done.json" "$work/latency.prom" "$train_id" <<'PY' || fail "latency histograms"
import json, re, sys
status, metrics, train = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), int(sys.argv[3])
def count(name, cls):
    m = re.search(rf'^tally_{name}_seconds_count{{server="[^"]*",class="{cls}"}} (\d+)$', metrics, re.M)
    return int(m.group(1)) if m else None
measured = [c for c in status['clients'] if c['id'] == train][0]['scheduling']['preemption_latencies']
if measured == 0 or count('preemption_latency', 'best-effort') != measured:
    sys.exit(f"{measured} preemptions measured, histogram: {count('preemption_latency', 'best-effort')}")
if (count('launch_request_to_issue', 'high') or 0) < 16:
    sys.exit(f"high launches in the histogram: {count('launch_request_to_issue', 'high')}")
PY
    # The profiler measured the trainer's kernel shape (its candidates, on real launches).
    timeout 30 "$TALLY_CTL" profiles --json --server "$socket" > "$work/profiles.json" ||
      fail "tally-ctl profiles failed"
    json_check "$work/profiles.json" \
      "[p['measured'] > 0 for p in s if p['name'] == 'Work' or p['grid'] == [2048, 1, 1]] == [True]"
    timeout 30 "$TALLY_CTL" profiles --server "$socket" > "$work/profiles.txt" ||
      fail "tally-ctl profiles (text) failed"
    grep -q "2048x1x1" "$work/profiles.txt" || fail "profiles: $(cat "$work/profiles.txt")"
    send_line train EXIT
    send_line serve EXIT
    wait "$train_pid" || fail "the trainer failed: $(cat "$work/train.out")"
    wait "$serve_pid" || fail "the server job failed: $(cat "$work/serve.out")"
    python3 - "$work/train.timeline" "$work/serve.timeline" <<'PY' || fail "ordering violated"
import sys
train = [tuple(map(int, line.split())) for line in open(sys.argv[1])]
serve = [tuple(map(int, line.split())) for line in open(sys.argv[2])]
overlapping = 0
for s_start, s_end in serve:
    for t_start, t_end in train:
        if t_start < s_start < t_end:
            overlapping += 1
            if not s_end < t_end:
                sys.exit(f"a request kernel [{s_start}, {s_end}] started during a trainer kernel "
                         f"[{t_start}, {t_end}] but did not end before it")
if overlapping == 0:
    sys.exit("no request kernel started while a trainer kernel ran: nothing was tested")
print(f"{overlapping} request kernel(s) overtook a running trainer kernel")
PY
    ;;
  library_priority)  # a best-effort job's cuBLAS GEMMs (Tally's kernels) beside a
    # latency-critical job's under the priority policy: both correct, the trainer's library
    # kernels preempted.
    start_server --policy=priority
    start_job train best-effort gemm_jobs train 12
    start_job serve high gemm_jobs serve 30
    await_line train READY
    await_line serve READY
    send_line train GO
    send_line serve GO
    await_line serve FINISHED
    await_line train FINISHED
    status_json "$work/done.json"
    train_id=$(client_id "$work/done.json" "$train_pid")
    by_id="{c['id']: c for c in s['clients']}"
    json_check "$work/done.json" "($by_id)[$train_id]['library_calls']['cublas'] == 12"
    json_check "$work/done.json" "($by_id)[$train_id]['scheduling']['preemptions'] > 0"
    send_line train EXIT
    send_line serve EXIT
    wait "$train_pid" || fail "the trainer failed: $(cat "$work/train.out")"
    wait "$serve_pid" || fail "the server job failed: $(cat "$work/serve.out")"
    ;;
  refused)  # refused PROGRAM CONSTRUCT: PROGRAM checks its launches fail as CUDA's would; the
    # server's log (what the operator reads) says why, naming the construct its device refused
    start_server
    run "$5" || fail "$5 failed"
    grep -q "$6.*cannot run this kernel" "$work/server.log" ||
      fail "the server's log does not name $6 as why a kernel cannot run"
    ;;
  reload)  # SIGHUP reads --config again: new limits for the clients that connect afterwards,
    # the log says what changed and what waits for a restart; a bad file keeps the settings
    printf 'TALLY_CLIENT_MEMORY_LIMIT=1G\n' > "$work/tally.env"
    start_server --config "$work/tally.env"
    start_hog
    limits="[c['memory_limit_bytes'] for c in s['clients']]"
    await_status "$work/before.json" "$limits == [1073741824]"
    printf '# halved\nTALLY_CLIENT_MEMORY_LIMIT=512M\nTALLY_POLICY=fifo\n' > "$work/tally.env"
    kill -HUP "$server_pid"
    await_log "SIGHUP: reloaded $work/tally.env: --client-memory-limit 1073741824 -> 536870912"
    await_log "SIGHUP: --policy priority -> fifo takes effect only at a restart"
    status_json "$work/kept.json"  # the connected client keeps what it was admitted with
    json_check "$work/kept.json" "$limits == [1073741824]"
    kill -KILL "$hog_pid"
    wait "$hog_pid" 2>/dev/null
    await_status "$work/left.json" "s['clients'] == []"
    start_hog
    await_status "$work/after.json" "$limits == [536870912]"
    printf 'TALLY_CLIENT_MEMORY_LIMIT=lots\n' > "$work/tally.env"
    kill -HUP "$server_pid"
    await_log "SIGHUP: settings kept: $work/tally.env:1: TALLY_CLIENT_MEMORY_LIMIT: "
    kill -KILL "$hog_pid"
    wait "$hog_pid" 2>/dev/null
    run vector_add || fail "vector_add failed after a refused reload"
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
    await_status "$work/after.json" \
      "not s['clients'] and s['device']['free_memory_bytes'] == s['device']['total_memory_bytes']"
    grep -q "freed 1 allocation(s) of 268435456 bytes, 2 page-locked block(s)" "$work/server.log" ||
      fail "the server did not log the reclaimed memory"
    run meminfo || fail "memory still in use after the killed client"
    run vector_add || fail "the server no longer serves after a client died"
    ;;
  status)  # tally-ctl status against a live server with a client connected
    timeout 30 "$TALLY_CTL" --help | grep -q -- "--json" || fail "tally-ctl --help says no --json"
    timeout 30 "$TALLY_CTL" --help | grep -q "library_calls {cublas, cublaslt, cudnn}" ||
      fail "tally-ctl --help does not explain library_calls"
    timeout 30 "$TALLY_CTL" status --server "$work/nobody.sock" > "$work/out" 2>&1
    status=$?
    [[ $status -eq 1 ]] || fail "tally-ctl exited $status without a server"
    grep -q "nobody.sock" "$work/out" || fail "the error names no socket: $(cat "$work/out")"
    start_server
    status_json "$work/empty.json"
    json_check "$work/empty.json" "s['clients'] == [] and s['backend']['kind'] == 'emulator'"
    start_hog --priority 5
    status_json "$work/one.json"
    json_check "$work/one.json" "set(s) == {'socket', 'server_pid', 'device', 'max_clients', 'draining', 'admission_waiting', 'backend', 'isolation', 'unfenceable', 'departed', 'modules', 'code_cache', 'clients', 'grants'}"
    json_check "$work/one.json" "s['isolation'] == 'none'"
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
    # The same status for Prometheus: valid for promtool, the client's series and, once a
    # program's kernels ran and it left, the departed clients' counters.
    hog_id=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["clients"][0]["id"])' \
      "$work/one.json")
    timeout 30 "$TALLY_CTL" metrics --server "$socket" > "$work/metrics" || fail "metrics failed"
    command -v promtool > /dev/null || fail "promtool not found (scripts/dev.sh setup installs it)"
    promtool check metrics < "$work/metrics" > "$work/promtool" 2>&1 ||
      fail "promtool: $(cat "$work/promtool")"
    grep -qx "tally_client_memory_bytes{server=\"$socket\",client=\"$hog_id\"} 268435456" \
      "$work/metrics" || fail "no memory series for client $hog_id: $(cat "$work/metrics")"
    grep -qx "tally_client_priority_level{server=\"$socket\",client=\"$hog_id\"} 5" "$work/metrics" ||
      fail "no priority series for client $hog_id"
    # Two samples of top, each with the hog's row.
    timeout 30 "$TALLY_CTL" top --batch -n 2 --interval 0.1 --sort memory --server "$socket" \
      > "$work/top" || fail "top failed"
    [[ $(grep -c "client(s), 0 departed; rates over" "$work/top") -eq 2 ]] ||
      fail "top printed not two samples: $(cat "$work/top")"
    [[ $(grep -c "^ *$hog_id *$hog_pid " "$work/top") -eq 2 ]] || fail "top: $(cat "$work/top")"
    timeout 30 "$TALLY_CTL" top --sort pid --server "$socket" > "$work/out" 2>&1
    [[ $? -eq 2 ]] || fail "top accepted --sort pid"
    run vector_add || fail "vector_add failed"
    await_status "$work/ran.json" "s['departed']['clients'] == 1"
    timeout 30 "$TALLY_CTL" metrics --server "$socket" > "$work/metrics" || fail "metrics failed"
    grep -q '^tally_kernels_total{server="[^"]*",client="departed",form="[a-z]*"} [1-9]' \
      "$work/metrics" ||
      fail "the departed client's kernels are not counted: $(grep kernels_total "$work/metrics")"
    grep -qx "tally_departed_clients_total{server=\"$socket\"} 1" "$work/metrics" ||
      fail "departed clients not 1"
    # Its kernels' waits went into the best-effort class's latency histograms.
    for histogram in kernel_queue_delay launch_request_to_issue; do
      grep -q "^tally_${histogram}_seconds_count{server=\"$socket\",class=\"best-effort\"} [1-9]" \
        "$work/metrics" || fail "no $histogram samples: $(grep "${histogram}.*count" "$work/metrics")"
    done
    promtool check metrics < "$work/metrics" > "$work/promtool" 2>&1 ||
      fail "promtool: $(cat "$work/promtool")"
    kill -KILL "$hog_pid"
    wait "$hog_pid" 2>/dev/null
    ;;
  exporter)  # tally-exporter serves two servers' metrics over HTTP, one of them not running
    start_server
    coproc EXPORTER { exec "$TALLY_EXPORTER" --listen 127.0.0.1:0 --server "$socket" \
      --server "$work/nobody.sock" --timeout 1; }
    exporter_pid=$EXPORTER_PID
    background_pids+=("$exporter_pid")
    read -r -t 30 line <&"${EXPORTER[0]}" || fail "tally-exporter never said where it serves"
    url=${line#*serving }
    url=${url%% *}
    [[ $url == http://127.0.0.1:*/metrics ]] || fail "tally-exporter said '$line'"
    run vector_add || fail "vector_add failed"
    # The server notices the client's exit on its own time: scraped until it counts it (bounded).
    departed="tally_departed_clients_total{server=\"$socket\"} 1"
    for _ in $(seq 100); do
      curl -sf "$url" > "$work/metrics" || fail "GET $url failed"
      grep -qx "$departed" "$work/metrics" && break
      sleep 0.05
    done
    promtool check metrics < "$work/metrics" > "$work/promtool" 2>&1 ||
      fail "promtool: $(cat "$work/promtool")"
    grep -qx "tally_server_up{server=\"$socket\"} 1" "$work/metrics" || fail "server not up"
    grep -qx "tally_server_up{server=\"$work/nobody.sock\"} 0" "$work/metrics" ||
      fail "the missing server is not down"
    grep -qx "$departed" "$work/metrics" ||
      fail "vector_add is not counted: $(grep departed_clients "$work/metrics")"
    code=$(curl -s -o /dev/null -w '%{http_code}' "${url%/metrics}/elsewhere")
    [[ $code == 404 ]] || fail "GET /elsewhere answered $code"
    kill -TERM "$exporter_pid"
    wait "$exporter_pid" || fail "tally-exporter did not end cleanly on SIGTERM"
    ;;
  server_killed)  # a client of a server that dies gets an error promptly, never a hang
    start_server
    coproc SURVIVOR { exec "$run_bin" --server "$socket" -- "$programs/survivor"; }
    survivor_pid=$SURVIVOR_PID
    background_pids+=("$survivor_pid")
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
    # The launches by form of every client, once all have left (tally-ctl status's departed).
    await_status "$work/validated.json" "s['clients'] == [] and s['departed']['clients'] == $(($# - 5))"
    count() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["departed"]["scheduling"][sys.argv[2]])' "$work/validated.json" "$1"; }
    case $form in
      slice:*) transformed=$(count kernels_sliced) ;;
      *) transformed=$(count kernels_preemptible) ;;
    esac
    [[ $transformed -gt 0 ]] || fail "no kernel ran in the $form form"
    originals=$(count kernels_original)
    # The operator reads why in the log.
    [[ $originals -eq 0 ]] || grep -q "keeps its original form" "$work/server.log" ||
      fail "$originals launches in the original form, and the log says not why"
    if [[ $form == preempt* ]]; then
      [[ $(count resumes) -gt 0 ]] || fail "no PTB kernel was preempted and resumed"
    fi
    echo "launches: $transformed in the $form form, $originals original"
    ;;
  silent_peer)
    # Peers that connect and never say a word, with a handshake timeout far longer than the test:
    # clients and tally-ctl connecting after them are served all the same.
    start_server --handshake-timeout-ms=3600000
    for _ in 1 2 3; do
      python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); time.sleep(600)' "$socket" &
      background_pids+=($!)
    done
    run vector_add || fail "a client behind silent peers was not served"
    await_status "$work/status.json" "s['clients'] == []"
    ;;
  broken_driver)
    # An installed libcuda.so.1 that does not work: the server says why and exits instead of
    # serving the emulated GPU in its place; --emulate still serves it.
    LD_LIBRARY_PATH=$programs/broken_driver timeout 60 "$server_bin" --socket "$socket" \
      > "$work/broken.log" 2>&1
    status=$?
    [[ $status -eq 1 ]] ||
      fail "the server exited $status with a broken driver: $(cat "$work/broken.log")"
    grep -q "libcuda.so.1.*installed but not usable.*--emulate" "$work/broken.log" ||
      fail "no explanation: $(cat "$work/broken.log")"
    [[ ! -S $socket ]] || fail "the server listened anyway"
    LD_LIBRARY_PATH=$programs/broken_driver start_server
    run vector_add || fail "--emulate did not serve with a broken driver installed"
    ;;
  runaway)
    # A client killed while its kernel of many blocks never ends: on the emulated GPU its stream
    # is cancelled (blocks not yet started never run), so everything it held is freed at once,
    # and the server keeps serving and shuts down without waiting for the kernel.
    start_server
    coproc RUNAWAY { exec "$run_bin" --server "$socket" -- "$programs/tenant" runaway; }
    runaway_pid=$RUNAWAY_PID
    background_pids+=("$runaway_pid")
    read -r -t 60 line <&"${RUNAWAY[0]}" || fail "the runaway tenant never became ready"
    [[ $line == READY ]] || fail "the runaway tenant said '$line'"
    kill -KILL "$runaway_pid"
    wait "$runaway_pid" 2>/dev/null
    await_status "$work/after.json" \
      "not s['clients'] and s['device']['free_memory_bytes'] == s['device']['total_memory_bytes']"
    grep -q "abandoned" "$work/server.log" && fail "the runaway client was abandoned, not reclaimed"
    run vector_add || fail "the server no longer serves after a runaway kernel"
    kill -TERM "$server_pid"
    timeout 60 tail --pid="$server_pid" -f /dev/null || fail "the server hangs at shutdown"
    wait "$server_pid"
    status=$?
    server_pid=
    [[ $status -eq 0 ]] || fail "the server exited $status"
    ;;
  drain)
    # tally-ctl drain: a new client is refused saying why, the connected one goes on (and
    # tally-ctl is still answered), and the server exits 0 once it has left.
    start_server
    start_hog
    timeout 30 "$TALLY_CTL" drain --server "$socket" > "$work/drain.out" || fail "drain failed"
    grep -q "draining: no new clients; the server exits when the last of its 1 client(s)" \
      "$work/drain.out" || fail "drain said: $(cat "$work/drain.out")"
    run vector_add > "$work/refused.out" 2>&1 && fail "a new client was served while draining"
    grep -q "it is draining (tally-ctl drain) and takes no new clients" "$work/refused.out" ||
      fail "the refusal says not why: $(cat "$work/refused.out")"
    status_json "$work/draining.json"
    json_check "$work/draining.json" "len(s['clients']) == 1"
    kill -0 "$server_pid" || fail "the server ended with a client connected"
    kill -KILL "$hog_pid"
    wait "$hog_pid" 2>/dev/null
    timeout 60 tail --pid="$server_pid" -f /dev/null || fail "the drained server did not exit"
    wait "$server_pid"
    status=$?
    server_pid=
    [[ $status -eq 0 ]] || fail "the drained server exited $status"
    ;;
  too_many_clients)
    # With --max-clients=1 a second client is refused with a message that says why, and is
    # served once the first has gone.
    start_server --max-clients=1
    start_hog
    run vector_add > "$work/refused.out" 2>&1 && fail "a second client was served"
    grep -q "refused us: it serves 1 clients, its maximum (tally-server --max-clients)" \
      "$work/refused.out" || fail "no clear refusal: $(cat "$work/refused.out")"
    kill -KILL "$hog_pid"
    wait "$hog_pid" 2>/dev/null
    await_status "$work/after.json" "not s['clients']"
    run vector_add || fail "no client was served after the first one left"
    ;;
  flood)
    # A client that posts launches without end: the server's queue for it stays within its
    # bound (256 + a batch of 127) and the server's memory does not grow while it floods.
    # AddressSanitizer holds freed memory in a quarantine (256 MiB by default), which the RSS
    # counts: without it the RSS is the server's own (no effect in other builds).
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0 \
      start_server --max-queued-commands=256
    coproc FLOOD { exec "$run_bin" --server "$socket" -- "$programs/tenant" flood; }
    flood_pid=$FLOOD_PID
    background_pids+=("$flood_pid")
    read -r -t 60 line <&"${FLOOD[0]}" || fail "the flooding tenant never became ready"
    rss() { awk '/^VmRSS/ { print $2 }' "/proc/$server_pid/status"; }
    sleep 1
    first=$(rss)
    for _ in $(seq 10); do
      status_json "$work/flood.json"
      json_check "$work/flood.json" \
        "len(s['clients']) == 1 and s['clients'][0]['queued_commands'] <= 256 + 127"
      sleep 0.2
    done
    last=$(rss)
    echo "server RSS while flooded: $first KiB, then $last KiB"
    (( last - first < 16384 )) || fail "the server grew from $first KiB to $last KiB"
    kill -KILL "$flood_pid"
    wait "$flood_pid" 2>/dev/null
    run vector_add || fail "the server no longer serves after the flood"
    ;;
  quota)
    # A per-client device-memory limit: allocations up to it succeed, beyond fail with
    # cudaErrorMemoryAllocation, cudaMemGetInfo and the device's size show it, tally-ctl status
    # shows usage and limit to the byte, tally-ctl limit raises it live, tally-run
    # --memory-limit only lowers it.
    start_server --client-memory-limit=64M
    coproc QUOTA { exec "$run_bin" --server "$socket" -- "$programs/tenant" quota 64 128; }
    quota_pid=$QUOTA_PID
    background_pids+=("$quota_pid")
    read -r -t 60 line <&"${QUOTA[0]}" || fail "the quota tenant never filled its quota"
    [[ $line == FULL ]] || fail "the quota tenant said '$line'"
    status_json "$work/full.json"
    usage="[(c['memory_bytes'], c['memory_limit_bytes']) for c in s['clients']]"
    json_check "$work/full.json" "$usage == [(67108864, 67108864)]"
    grep -q "(pid $quota_pid, .*tenant quota 64 128'): an allocation of 16777216 bytes refused" \
      "$work/server.log" || fail "the refusal was not logged naming the client"
    quota_id=$(client_id "$work/full.json" "$quota_pid")
    timeout 30 "$TALLY_CTL" limit "$quota_id" 128M --server "$socket" > "$work/limit.out" ||
      fail "tally-ctl limit failed: $(cat "$work/limit.out")"
    grep -q "limit of 134217728 bytes" "$work/limit.out" ||
      fail "tally-ctl limit: $(cat "$work/limit.out")"
    echo go >&"${QUOTA[1]}"
    read -r -t 60 line <&"${QUOTA[0]}" || fail "the quota tenant did not fill its raised quota"
    [[ $line == RAISED ]] || fail "the quota tenant said '$line' after the raise"
    status_json "$work/raised.json"
    json_check "$work/raised.json" "$usage == [(134217728, 134217728)]"
    echo exit >&"${QUOTA[1]}"
    wait "$quota_pid" || fail "the quota tenant failed"
    if timeout 30 "$TALLY_CTL" limit 99999 1G --server "$socket" > "$work/none.out"; then
      fail "tally-ctl limit succeeded for a client that does not exist"
    fi
    timeout 30 "$TALLY_CTL" limit 1 lots --server "$socket" 2> "$work/bad.out" &&
      fail "tally-ctl limit accepted 'lots'"
    grep -q "'lots' is not a size" "$work/bad.out" || fail "no clear error: $(cat "$work/bad.out")"
    "$run_bin" --memory-limit 32M --server "$socket" -- "$programs/tenant" quota 32 ||
      fail "tally-run --memory-limit 32M did not lower the limit to 32 MiB"
    "$run_bin" --memory-limit 1G --server "$socket" -- "$programs/tenant" quota 64 ||
      fail "tally-run --memory-limit 1G did not keep the server's 64 MiB"
    ;;
  fault)
    # A kernel that faults (the kind is the fifth argument) fails only its own client: it gets
    # CUDA's error, sticky; a survivor computing meanwhile gets correct results, and a client
    # that connects afterwards is served, all by one server that never restarts.
    start_server
    run tenant compute 60 > "$work/survivor.out" 2>&1 &
    survivor_pid=$!
    run_expecting FAULTED fault tenant fault "$5"
    wait "$survivor_pid" || fail "the survivor failed next to a fault: $(cat "$work/survivor.out")"
    grep -qx COMPUTED "$work/survivor.out" || fail "the survivor: $(cat "$work/survivor.out")"
    run tenant compute 2 || fail "a client after the fault was not served"
    grep -q "a kernel of it faulted" "$work/server.log" || fail "the fault was not logged"
    await_metric "tally_departed_faulted_clients_total{server=\"$socket\"} 1"
    await_metric "tally_device_context_faults_total{server=\"$socket\"} 0"
    kill -0 "$server_pid" || fail "the server died"
    ;;
  shared_fault)
    # Where every client shares one context (NVIDIA's driver; here the emulated GPU without
    # tenants), a fault (the kind is the fifth argument) poisons it for all: the faulting client
    # gets its fault's error, a client connected meanwhile cudaErrorDevicesUnavailable, both
    # sticky. A client that connects afterwards waits until no client of the faulted context
    # is left (the bystander, which stays, is disconnected after the grace period), then the
    # context is reset and it is served, all by one server that never restarts.
    TALLY_EMU_NO_TENANTS=1 start_server
    coproc BYSTANDER { exec "$run_bin" --server "$socket" -- "$programs/tenant" bystander; }
    bystander_pid=$BYSTANDER_PID
    read -r -t 60 line <&"${BYSTANDER[0]}" || fail "the bystander never became ready"
    [[ $line == READY ]] || fail "the bystander said '$line'"
    run_expecting FAULTED fault tenant fault "$5"
    ask BYSTANDER check LOST
    run_expecting COMPUTED newcomer tenant compute 2
    ask BYSTANDER exit LOST  # disconnected by now
    wait "$bystander_pid" || fail "the bystander failed"
    faulting=$(sed -n "s/.*client \([0-9]*\) connected: .*tenant fault.*/\1/p" "$work/server.log")
    grep -q "attributed to the client(s) whose kernels were on the device: \[$faulting\]" \
      "$work/server.log" || fail "the fault was not attributed to client '$faulting' alone"
    grep -q "context was reset" "$work/server.log" || fail "the context was not reset"
    await_metric "tally_device_context_faults_total{server=\"$socket\"} 1"
    await_metric "tally_departed_faulted_clients_total{server=\"$socket\"} 2"
    kill -0 "$server_pid" || fail "the server died"
    ;;
  isolation)
    # A client that learns another's device pointer cannot read or write it from a kernel:
    # cudaErrorIllegalAddress for the intruder, the owner's data unchanged, both on one server.
    start_server
    coproc OWNER { exec "$run_bin" --server "$socket" -- "$programs/tenant" owner "$work/pointer"; }
    owner_pid=$OWNER_PID
    background_pids+=("$owner_pid")
    read -r -t 60 line <&"${OWNER[0]}" || fail "the owner never became ready"
    [[ $line == READY ]] || fail "the owner said '$line'"
    run_expecting REFUSED intruder tenant intruder "$work/pointer"
    ask OWNER check INTACT
    wait "$owner_pid" || fail "the owner failed"
    ;;
  fence)  # fence ISOLATION ATTACK INTRUDER OWNER: on the emulated GPU configured as NVIDIA's
    # driver (one address space, no tenants), under tally-server --isolation ISOLATION, a client
    # that goes for another's memory (tenant ATTACK: intruder, overrun or printer) says INTRUDER
    # (REFUSED or REACHED), and the owner then finds its buffer OWNER (INTACT or CHANGED). The
    # printer's kernel prints the owner's string: all of it unfenced, none of it fenced.
    TALLY_EMU_NO_TENANTS=1 start_server --isolation "$5"
    coproc OWNER { exec "$run_bin" --server "$socket" -- "$programs/tenant" owner "$work/pointer"; }
    owner_pid=$OWNER_PID
    background_pids+=("$owner_pid")
    read -r -t 60 line <&"${OWNER[0]}" || fail "the owner never became ready"
    [[ $line == READY ]] || fail "the owner said '$line'"
    status_json "$work/status.json"
    json_check "$work/status.json" "s['isolation'] == '$5'"
    run_expecting "$7" attacker tenant "$6" "$work/pointer"
    if [[ $6 == printer && $5 == none ]]; then
      grep -qx "printed: \[the owner's secret\]" "$work/attacker.out" ||
        fail "the owner's string was not printed unfenced: $(cat "$work/attacker.out")"
    elif [[ $6 == printer ]] && grep -q "owner's secret" "$work/attacker.out"; then
      fail "a fenced kernel printed the owner's string: $(cat "$work/attacker.out")"
    fi
    ask OWNER check "$8"
    wait "$owner_pid" || fail "the owner failed"
    # Logged by the session that answers the attacker, on its own time.
    [[ $5 == none ]] || await_log "reached for memory that is not its own"
    ;;
  strict_refuses)  # under --isolation strict, a program whose module has a kernel that cannot
    # be fenced (cooperative's grid sync reads the driver's workspace through %envreg) fails
    # with the reason; a fenceable one is served afterwards
    start_server --isolation strict
    if run cooperative > "$work/refused.out" 2>&1; then
      fail "a module with an unfenceable kernel was run: $(cat "$work/refused.out")"
    fi
    grep -Eq "cannot be fenced \(.*%envreg" "$work/refused.out" ||
      fail "the refusal did not say why: $(cat "$work/refused.out")"
    run vector_add || fail "a fenceable program after the refusal failed"
    ;;
  *)
    # A scenario of its own file: tests/e2e/scenarios/NAME.sh, run in this shell (it has the
    # functions above) with the scenario's arguments as $1...
    scenario_file=$(dirname "${BASH_SOURCE[0]}")/scenarios/$scenario.sh
    [[ -f $scenario_file ]] || fail "unknown scenario $scenario"
    shift 4
    # shellcheck source=/dev/null
    source "$scenario_file"
    ;;
esac
echo "PASS: $scenario"
