# gpus: two servers in one run directory stand for a node's two GPUs (the emulator's
# TALLY_EMU_DEVICE_COUNT=2, tally-server --device 0 and 1). Each names its socket by its device's
# UUID; tally-ctl status --all lists both; tally-run --device picks by ordinal and UUID, and
# --device auto spreads four jobs 2/2 by its rule; a client naming no server is told to pick.
export TALLY_EMU_DEVICE_COUNT=2 TALLY_RUN_DIR=$work/run

# start_device_server ORDINAL LOG: a server for that device in the run directory; sets started.
start_device_server() {
  "$server_bin" --emulate --device "$1" --run-dir "$TALLY_RUN_DIR" \
    --profile-cache "$work/profile-cache-$1.json" 2>"$2" &
  started=$!
}
start_device_server 0 "$work/server.log"
server_pid=$started  # stopped by run_e2e.sh's cleanup
start_device_server 1 "$work/server1.log"
second_pid=$started
background_pids+=("$second_pid")
await_sockets 2 || fail "two servers did not make two sockets: $(ls "$TALLY_RUN_DIR")"

all_status() {  # all_status FILE: tally-ctl status --all --json, checked to be JSON
  timeout 30 "$TALLY_CTL" status --all --json > "$1" || fail "tally-ctl status --all failed"
  python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" ||
    fail "status --all --json is not JSON: $(cat "$1")"
}
# await_all_status FILE EXPRESSION: polls status --all (bounded) until the expression holds; a
# server notices a client's exit on its own time.
await_all_status() {
  for _ in $(seq 200); do
    all_status "$1"
    json_true "$1" "$2" && return
    sleep 0.05
  done
  json_check "$1" "$2"
}
all_status "$work/all.json"
json_check "$work/all.json" "sorted(d['device']['ordinal'] for d in s) == [0, 1]"
json_check "$work/all.json" \
  "all(d['socket'].endswith('/' + d['device']['uuid'] + '.sock') for d in s)"
json_check "$work/all.json" "s[0]['device']['uuid'] != s[1]['device']['uuid']"
timeout 30 "$TALLY_CTL" status --all > "$work/all.txt" || fail "tally-ctl status --all failed"
[[ $(grep -c '^tally-server pid' "$work/all.txt") == 2 ]] ||
  fail "status --all did not list two servers: $(cat "$work/all.txt")"

# Naming no server among two is refused, saying how to pick one.
if timeout 60 "$run_bin" -- "$programs/vector_add" > "$work/ambiguous.out" 2>&1; then
  fail "a client chose one of two servers by itself"
fi
grep -q "pick one with tally-run --device" "$work/ambiguous.out" ||
  fail "the refusal did not say how to pick: $(cat "$work/ambiguous.out")"

# By ordinal and by UUID (without GPU-): both reach device 1's server.
uuid1=$(python3 -c 'import json, sys; print([d["device"]["uuid"] for d in json.load(open(sys.argv[1])) if d["device"]["ordinal"] == 1][0])' "$work/all.json")
timeout 120 "$run_bin" --device 1 -- "$programs/vector_add" || fail "--device 1 failed"
timeout 120 "$run_bin" --device "${uuid1#GPU-}" -- "$programs/vector_add" ||
  fail "--device $uuid1 failed"
await_all_status "$work/after.json" \
  "{d['device']['ordinal']: d['departed']['clients'] for d in s} == {0: 0, 1: 2}"

# auto: four jobs (each holding 256 MiB) go 0, 1, 0, 1: fewest clients first, then the most free
# memory (equal here), then the lower ordinal.
hog_pids=()
for n in 1 2 3 4; do
  "$run_bin" --device auto --verbose -- "$programs/hog" > "$work/hog$n.out" 2> "$work/hog$n.err" &
  hog_pids+=($!)
  background_pids+=($!)
  await_line "hog$n" READY
  grep -q "tally-run: --device auto: .*client(s) at or above priority" "$work/hog$n.err" ||
    fail "--verbose did not say why: $(cat "$work/hog$n.err")"
done
all_status "$work/spread.json"
json_check "$work/spread.json" \
  "{d['device']['ordinal']: sorted(c['pid'] for c in d['clients']) for d in s} == {0: sorted([${hog_pids[0]}, ${hog_pids[2]}]), 1: sorted([${hog_pids[1]}, ${hog_pids[3]}])}"

# tally-exporter given no server serves every server of the run directory.
coproc EXPORTER { exec "$TALLY_EXPORTER" --listen 127.0.0.1:0 --timeout 1; }
background_pids+=("$EXPORTER_PID")
read -r -t 30 line <&"${EXPORTER[0]}" || fail "tally-exporter never said where it serves"
url=${line#*serving }
url=${url%% *}
curl -sf "$url" > "$work/metrics" || fail "GET $url failed"
for socket in "${sockets[@]}"; do
  grep -qx "tally_server_up{server=\"$socket\"} 1" "$work/metrics" ||
    fail "tally-exporter did not serve $socket: $(grep server_up "$work/metrics")"
done

# A server that is gone (its socket left behind) is shown as not running; the other still is.
kill -KILL "$second_pid"
wait "$second_pid" 2>/dev/null
all_status "$work/gone.json"
json_check "$work/gone.json" \
  "sorted(d.get('running', True) for d in s) == [False, True]"
