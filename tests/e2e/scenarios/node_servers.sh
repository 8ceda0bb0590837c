# node_servers: the container entrypoint deploy/container/tally-node-servers (TALLY_NODE_SERVERS)
# starts one server per device in one run directory; a server drained by tally-ctl drain exits
# 0 and the others keep serving; a server that fails stops the others and the entrypoint exits
# with its status; SIGTERM stops every server and the entrypoint exits 0; without devices
# named and without nvidia-smi it refuses to start, saying why.
export TALLY_EMU_DEVICE_COUNT=2 TALLY_RUN_DIR=$work/run TALLY_SERVER_BIN=$server_bin
mkdir -m 0700 "$TALLY_RUN_DIR"

# start_node_servers LOG: the entrypoint for the devices TALLY_NODE_DEVICES names (0 and 1, or
# none: those nvidia-smi lists); sets entrypoint_pid.
node_devices="0 1"
start_node_servers() {
  TALLY_NODE_DEVICES=$node_devices "$TALLY_NODE_SERVERS" --emulate --run-dir="$TALLY_RUN_DIR" \
    --profile-cache=none 2>"$1" &
  entrypoint_pid=$!
  background_pids+=("$entrypoint_pid")
  await_sockets 2 || fail "two servers did not make two sockets: $(cat "$1")"
}
# server_pid_of DEVICE LOG: the pid the entrypoint logged for the device's server.
server_pid_of() { sed -n "s/^tally-node-servers: tally-server --device=$1: pid //p" "$2"; }
# await_exit PID: waits (bounded) for the entrypoint; sets exit_status.
await_exit() {
  for _ in $(seq 200); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$1" 2>/dev/null && fail "pid $1 did not exit"
  wait "$1"
  exit_status=$?
}
answers() { timeout 30 "$TALLY_CTL" status --server "$1" > /dev/null 2>&1; }

start_node_servers "$work/node.log"
timeout 30 "$TALLY_CTL" status --all --json > "$work/all.json" ||
  fail "tally-ctl status --all failed"
json_check "$work/all.json" "sorted(d['device']['ordinal'] for d in s) == [0, 1]"
# socket_of ORDINAL: the socket of that device's server, from status --all.
socket_of() {
  python3 -c 'import json, sys
print(next(d["socket"] for d in json.load(open(sys.argv[1])) if d["device"]["ordinal"] == int(sys.argv[2])))' \
    "$work/all.json" "$1"
}
first=$(socket_of 0)
second=$(socket_of 1)

# A drained server leaves; the other serves on, and the entrypoint waits for it.
timeout 30 "$TALLY_CTL" drain --server "$first" > /dev/null || fail "tally-ctl drain failed"
drained=$(server_pid_of 0 "$work/node.log")
for _ in $(seq 200); do kill -0 "$drained" 2>/dev/null || break; sleep 0.05; done
kill -0 "$drained" 2>/dev/null && fail "the drained server (pid $drained) did not exit"
grep -q "device 0 (pid $drained) exited with status 0" "$work/node.log" ||
  fail "the drained server's exit: $(cat "$work/node.log")"
kill -0 "$entrypoint_pid" 2>/dev/null || fail "the entrypoint left with a server still running"
answers "$second" || fail "device 1's server stopped with device 0's"

# A server that fails ends the entrypoint with its status.
kill -KILL "$(server_pid_of 1 "$work/node.log")"
await_exit "$entrypoint_pid"
((exit_status == 137)) || fail "the entrypoint exited with $exit_status after a server was killed"

# A server that fails stops the others.
rm -f "$TALLY_RUN_DIR"/GPU-*.sock
start_node_servers "$work/node2.log"
kill -KILL "$(server_pid_of 0 "$work/node2.log")"
await_exit "$entrypoint_pid"
((exit_status == 137)) || fail "the entrypoint exited with $exit_status, not the failed server's"
survivor=$(server_pid_of 1 "$work/node2.log")
kill -0 "$survivor" 2>/dev/null && fail "device 1's server (pid $survivor) outlived the entrypoint"

# The devices nvidia-smi lists (a stand-in printing the emulated devices' UUIDs, as
# `nvidia-smi --query-gpu=uuid --format=csv,noheader` does); SIGTERM stops every server and
# the entrypoint exits 0.
mkdir "$work/bin"
python3 -c 'import json, sys; print("\n".join(d["device"]["uuid"] for d in json.load(open(sys.argv[1]))))' \
  "$work/all.json" > "$work/uuids"
printf '#!/bin/sh\n[ "$*" = "--query-gpu=uuid --format=csv,noheader" ] && exec cat %s\nexit 9\n' \
  "$work/uuids" > "$work/bin/nvidia-smi"
chmod +x "$work/bin/nvidia-smi"
rm -f "$TALLY_RUN_DIR"/GPU-*.sock
node_devices='' PATH=$work/bin:$PATH start_node_servers "$work/node3.log"
mapfile -t uuids < "$work/uuids"
for uuid in "${uuids[@]}"; do
  grep -q "tally-server --device=$uuid: pid" "$work/node3.log" ||
    fail "no server for $uuid: $(cat "$work/node3.log")"
done
kill -TERM "$entrypoint_pid"
await_exit "$entrypoint_pid"
((exit_status == 0)) || fail "the entrypoint exited with $exit_status on SIGTERM: $(cat "$work/node3.log")"
for device in "${uuids[@]}"; do
  pid=$(server_pid_of "$device" "$work/node3.log")
  kill -0 "$pid" 2>/dev/null && fail "device $device's server (pid $pid) outlived SIGTERM"
done

# No devices named and no nvidia-smi: refused, saying why.
PATH=/nonexistent TALLY_NODE_DEVICES='' /bin/bash "$TALLY_NODE_SERVERS" > "$work/none.log" 2>&1 &&
  fail "the entrypoint started without devices"
grep -q "nvidia-smi cannot list the GPUs" "$work/none.log" || fail "no devices: $(cat "$work/none.log")"
echo "tally-node-servers: one server per device, drain, failure and SIGTERM as documented"
