# exporter_run_dir: tally-exporter --run-dir serves every server whose socket is in the folder,
# listed again at each scrape (a server started after the exporter is served too), and nothing
# else there (the folder also holds a log, a cache and a file named like a socket).
touch "$work/GPU-not-a-server.sock"
start_server
coproc EXPORTER { exec "$TALLY_EXPORTER" --listen 127.0.0.1:0 --run-dir "$work" --timeout 5; }
exporter_pid=$EXPORTER_PID
background_pids+=("$exporter_pid")
read -r -t 30 line <&"${EXPORTER[0]}" || fail "tally-exporter never said where it serves"
[[ $line == *" for the sockets in $work" ]] || fail "tally-exporter said '$line'"
url=${line#*serving }
url=${url%% *}
second=$work/GPU-second.sock
"$server_bin" --emulate --socket "$second" --profile-cache none 2>"$work/second.log" &
background_pids+=($!)
for _ in $(seq 100); do [[ -S $second ]] && break; sleep 0.05; done
[[ -S $second ]] || fail "the second server did not create $second"
curl -sf "$url" > "$work/metrics" || fail "GET $url failed"
servers=$(grep '^tally_server_up{' "$work/metrics")
[[ $servers == "tally_server_up{server=\"$work/GPU-second.sock\"} 1"$'\n'"tally_server_up{server=\"$socket\"} 1" ]] ||
  fail "served: $servers"
kill -TERM "$exporter_pid"
wait "$exporter_pid" || fail "tally-exporter did not end cleanly on SIGTERM"
