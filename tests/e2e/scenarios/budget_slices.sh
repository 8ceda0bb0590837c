# budget_slices: under priority-budget a best-effort trainer whose kernels' time alone is known
# (timed while it ran alone) and does not fit the budget runs them beside a high-priority request
# server in slices sized to the budget, with correct results (each trainer checks its own); a
# trainer killed while held between two slices (a long burst of requests has spent the budget)
# leaves the server sound: the next best-effort client's kernels (in PTB form: a new shape) run
# and check out, and the request server completes; its measured slowdown is dropped when
# tally-ctl budget gives it a new budget.
# The allowance (the budget times a request's time alone, about 4 ms) holds a few waves of the
# trainer's kernel: 16 waves of its 256 blocks (2 per SM on 8 SMs, for its shared memory).
start_server --policy priority-budget --slowdown-budget 100% --min-idle-ms 50
train=(priority_jobs train --blocks 256 --work 400 --shared-kb 64)

# Alone, the trainer's kernels run untransformed and the profiler times them.
run "${train[@]}" --kernels 2 > "$work/alone.out" 2>&1 || fail "alone: $(cat "$work/alone.out")"

# Requests every 100 ms for 2 s (periods apart: --min-idle-ms 50), then a burst of 600 back to
# back: one busy period of seconds.
{
  for ((i = 0; i < 20; i++)); do echo $((100 * i)); done
  for ((i = 0; i < 600; i++)); do echo 2000; done
} > "$work/arrivals"
start_job serve high priority_jobs serve --blocks 16 --work 2000 --arrivals "$work/arrivals" \
  --handshake
start_job sliced best-effort "${train[@]}" --kernels 8 --handshake
start_job killed best-effort "${train[@]}" --kernels 2000 --handshake
await_line serve READY
await_line sliced READY
await_line killed READY
status_json "$work/connected.json"
sliced_id=$(client_id "$work/connected.json" "$sliced_pid")
killed_id=$(client_id "$work/connected.json" "$killed_pid")
serve_id=$(client_id "$work/connected.json" "$serve_pid")
send_line serve GO
send_line sliced GO
await_line sliced FINISHED
status_json "$work/sliced.json"
by_id="{c['id']: c['scheduling'] for c in s['clients']}"
json_check "$work/sliced.json" "($by_id)[$sliced_id]['kernels_sliced'] > 0"
json_check "$work/sliced.json" \
  "($by_id)[$sliced_id]['slices'] > ($by_id)[$sliced_id]['kernels_sliced']"
send_line sliced BYE
wait "$sliced_pid" || fail "the sliced trainer failed: $(cat "$work/sliced.out")"

# The second trainer slices in the gaps, then is held through the burst; killed there.
send_line killed GO
await_status "$work/burst.json" "($by_id)[$serve_id]['kernels_original'] > 40"
json_check "$work/burst.json" "($by_id)[$killed_id]['slices'] > 0"
kill -KILL "$killed_pid"
wait "$killed_pid" 2>/dev/null
await_status "$work/killed_gone.json" "$killed_id not in [c['id'] for c in s['clients']]"

# The next best-effort client, a shape the profiler has not seen: PTB beside the server.
run priority_jobs train --blocks 300 --work 400 --shared-kb 64 --kernels 3 > "$work/next.out" \
  2>&1 || fail "the next trainer failed: $(cat "$work/next.out")"
await_line serve FINISHED
# Its slowdown was measured beside the trainers; a new budget shows none until measured anew.
status_json "$work/measured.json"
measured="[c for c in s['clients'] if c['id'] == $serve_id][0]['slowdown_budget']['measured_slowdown']"
json_check "$work/measured.json" "$measured is not None"
timeout 30 "$TALLY_CTL" budget "$serve_id" 50% --server "$socket" > "$work/changed.out" ||
  fail "tally-ctl budget failed: $(cat "$work/changed.out")"
await_status "$work/remeasured.json" "$measured is None"
send_line serve BYE
wait "$serve_pid" || fail "the request server failed: $(cat "$work/serve.out")"
await_status "$work/end.json" "s['clients'] == []"
