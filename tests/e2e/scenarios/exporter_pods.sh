# exporter_pods: tally-exporter --pod-resources-socket labels each client's series with the
# namespace, pod and container whose devices' grant (the smallest device ID) the client connected
# through, as a stand-in for the kubelet's pod-resources API (fake_pod_resources.py) reports them;
# clients of no container get the labels empty. Without the kubelet (stopped, or one that never
# answers) the metrics still come, without pod labels, and tally_exporter_pod_resources_up says so.
here=$(dirname "${BASH_SOURCE[0]}")
start_server
status_json "$work/server.json"
uuid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["device"]["uuid"])' \
  "$work/server.json")
grant=$uuid-high-0
timeout 30 "$TALLY_CTL" grant --server "$socket" --priority high --memory-limit 64M \
  --name "$grant" > "$work/grant.out" || fail "grant failed: $(cat "$work/grant.out")"
grant_socket=$work/server.grants/$grant/server.sock

# The kubelet's view: the container holds two replicas of the GPU (listed one per entry, as the
# kubelet does) and a device of another vendor; another pod holds a replica of another GPU.
mkdir "$work/stubs"
protoc --proto_path="$here/../../../tools/kubelet_api" --python_out="$work/stubs" \
  --grpc_out="$work/stubs" --plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)" \
  pod_resources.proto || fail "protoc failed"
pods=$(printf '[{"namespace": "ml", "name": "trainer-0", "containers": [{"name": "main", "devices": [
  {"resource": "tally.dev/gpu-high", "ids": ["%s-high-1"]},
  {"resource": "tally.dev/gpu-high", "ids": ["%s-high-0"]},
  {"resource": "nvidia.com/gpu", "ids": ["GPU-0"]}]}]},
 {"namespace": "web", "name": "server-0", "containers": [{"name": "side", "devices": [
  {"resource": "tally.dev/gpu-high", "ids": ["GPU-ffffffff-0000-0000-0000-000000000000-high-0"]}]}]}]' \
  "$uuid" "$uuid")
kubelet=$work/kubelet.sock
coproc KUBELET { exec /usr/bin/python3 "$here/../fake_pod_resources.py" "$work/stubs" "$kubelet" "$pods"; }
kubelet_pid=$KUBELET_PID
background_pids+=("$kubelet_pid")
read -r -t 30 line <&"${KUBELET[0]}" || fail "the fake kubelet did not start"
[[ $line == READY ]] || fail "the fake kubelet said '$line'"

# A client through the container's grant, one through the server's own socket.
socket=$grant_socket start_job podded high priority_jobs serve --kernels 2 --blocks 2 --work 10 \
  --handshake
start_job plain best-effort priority_jobs serve --kernels 2 --blocks 2 --work 10 --handshake
await_line podded READY
await_line plain READY
await_status "$work/clients.json" "len(s['clients']) == 2"
podded_id=$(client_id "$work/clients.json" "$podded_pid")
plain_id=$(client_id "$work/clients.json" "$plain_pid")

if "$TALLY_EXPORTER" --pod-resources-socket "$kubelet" --resource-prefix tally.dev/gpu-high \
  > "$work/prefix.out" 2>&1; then
  fail "tally-exporter took a resource name for a prefix"
fi
grep -qF "a resource prefix is a domain" "$work/prefix.out" || fail "$(cat "$work/prefix.out")"
coproc EXPORTER { exec "$TALLY_EXPORTER" --listen 127.0.0.1:0 --server "$socket" \
  --pod-resources-socket "$kubelet" --timeout 1; }
exporter_pid=$EXPORTER_PID
background_pids+=("$exporter_pid")
read -r -t 30 line <&"${EXPORTER[0]}" || fail "tally-exporter never said where it serves"
url=${line#*serving }
url=${url%% *}

# scrape NAME: the metrics into $work/NAME, accepted by promtool.
scrape() {
  curl -sf --max-time 20 "$url" > "$work/$1" || fail "GET $url failed"
  promtool check metrics < "$work/$1" > "$work/promtool" 2>&1 || fail "promtool: $(cat "$work/promtool")"
}
# every_client_line NAME ID LABELS: each series of client ID has exactly LABELS after its id
# (LABELS empty: none), and there are more than 20 of them.
every_client_line() {
  local id="client=\"$2\"" lines
  lines=$(grep -F "$id" "$work/$1") || fail "no series of client $2 in $1"
  (($(wc -l <<< "$lines") > 20)) || fail "few series of client $2: $lines"
  if grep -vF "$id$3}" <<< "$lines" | grep -vF "$id$3,"; then
    fail "the lines above of client $2 lack exactly '$3' after the id"
  fi
}
scrape with-kubelet
grep -qx "tally_exporter_pod_resources_up 1" "$work/with-kubelet" || fail "pod resources not up"
every_client_line with-kubelet "$podded_id" ',namespace="ml",pod="trainer-0",container="main"'
every_client_line with-kubelet "$plain_id" ',namespace="",pod="",container=""'
grep -qF "tally_client_info{server=\"$socket\",client=\"$podded_id\",namespace=\"ml\",pod=\"trainer-0\",container=\"main\",pid=\"$podded_pid\"" \
  "$work/with-kubelet" || fail "no info of the podded client: $(grep client_info "$work/with-kubelet")"

# The kubelet gone: metrics without pod labels.
kill -TERM "$kubelet_pid"
wait "$kubelet_pid" 2>/dev/null
scrape without-kubelet
grep -qx "tally_exporter_pod_resources_up 0" "$work/without-kubelet" || fail "pod resources up"
every_client_line without-kubelet "$podded_id" ""
! grep -F "namespace=" "$work/without-kubelet" || fail "pod labels without the kubelet"
# A kubelet that takes the connection and never answers: the scrape waits --timeout, not more.
rm -f "$kubelet"
coproc MUTE { exec /usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(); print("READY", flush=True)
time.sleep(120)' "$kubelet"; }
background_pids+=("$MUTE_PID")
read -r -t 30 line <&"${MUTE[0]}" || fail "the mute kubelet did not start"
started=$(date +%s%N)
scrape mute-kubelet
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
((elapsed_ms < 5000)) || fail "a scrape with a mute kubelet took $elapsed_ms ms"
grep -qx "tally_exporter_pod_resources_up 0" "$work/mute-kubelet" || fail "a mute kubelet is up"
every_client_line mute-kubelet "$plain_id" ""

for job in podded plain; do
  send_line "$job" go
  await_line "$job" FINISHED
  send_line "$job" bye
done
wait "$podded_pid" || fail "the podded client failed: $(cat "$work/podded.out")"
wait "$plain_pid" || fail "the plain client failed: $(cat "$work/plain.out")"
kill -TERM "$exporter_pid"
wait "$exporter_pid" || fail "tally-exporter did not end cleanly on SIGTERM"
