# budget: a client's slowdown budget (tally-run --slowdown-budget) reaches the server and shows in
# tally-ctl status; tally-ctl budget changes it while the client runs and refuses malformed
# values clearly; a malformed TALLY_SLOWDOWN_BUDGET fails the program at once, saying why; a
# server of another policy refuses a budget above 0% from tally-ctl budget, and says once, to a
# client that brings one and in its log, that it has no effect.
start_server --policy priority-budget --slowdown-budget 5%
start_hog --priority high --slowdown-budget 15%
await_status "$work/budget.json" "len(s['clients']) == 1"
json_check "$work/budget.json" "s['clients'][0]['slowdown_budget']['text'] == '15%@p99'"
json_check "$work/budget.json" "s['clients'][0]['slowdown_budget']['slowdown'] == 0.15"
json_check "$work/budget.json" "s['clients'][0]['slowdown_budget']['measured_slowdown'] is None"
id=$(client_id "$work/budget.json" "$hog_pid")

timeout 30 "$TALLY_CTL" budget "$id" 20%@p95 --server "$socket" > "$work/set.out" ||
  fail "tally-ctl budget failed: $(cat "$work/set.out")"
grep -qF "client $id now has slowdown budget 20%@p95" "$work/set.out" ||
  fail "tally-ctl budget said $(cat "$work/set.out")"
status_json "$work/changed.json"
json_check "$work/changed.json" "s['clients'][0]['slowdown_budget']['text'] == '20%@p95'"
timeout 30 "$TALLY_CTL" status --server "$socket" > "$work/status.txt" || fail "status failed"
grep -Eq "^ +$id +20%@p95 +-$" "$work/status.txt" || fail "status text: $(cat "$work/status.txt")"

# refused_budget STATUS WORDS ARGS...: tally-ctl budget ARGS exits with STATUS saying WORDS.
refused_budget() {
  local expected=$1 words=$2
  shift 2
  timeout 30 "$TALLY_CTL" budget "$@" --server "$socket" > "$work/refused.out" 2>&1
  local status=$?
  ((status == expected)) || fail "budget $* exited $status: $(cat "$work/refused.out")"
  grep -qF -- "$words" "$work/refused.out" || fail "budget $* said $(cat "$work/refused.out")"
}
refused_budget 2 "a slowdown budget is a percentage, optionally at a percentile" "$id" 10
refused_budget 2 "between 0% and 1000%" "$id" 2000%
refused_budget 2 "percentile" "$id" 10%@p0
refused_budget 1 "no client 999 is connected" 999 10%
status_json "$work/kept.json"
json_check "$work/kept.json" "s['clients'][0]['slowdown_budget']['text'] == '20%@p95'"

# A client without a budget of its own has the server's (--slowdown-budget 5%).
kill -KILL "$hog_pid"
wait "$hog_pid" 2>/dev/null
await_status "$work/gone.json" "len(s['clients']) == 0"
start_hog --priority high
await_status "$work/default.json" "len(s['clients']) == 1"
json_check "$work/default.json" "s['clients'][0]['slowdown_budget']['text'] == '5%@p99'"

# Malformed budgets given to tally-run, or straight to the shim, are refused with the reason.
timeout 120 "$run_bin" --slowdown-budget ten --server "$socket" -- "$programs/vector_add" \
  > "$work/flag.out" 2>&1 && fail "tally-run took --slowdown-budget ten"
grep -qF -- "--slowdown-budget: a slowdown budget is a percentage" "$work/flag.out" ||
  fail "tally-run's refusal: $(cat "$work/flag.out")"
timeout 120 "$run_bin" --slowdown-budget "" --server "$socket" -- "$programs/vector_add" \
  > "$work/empty.out" 2>&1 && fail "tally-run took an empty --slowdown-budget"
grep -qF -- "--slowdown-budget: a slowdown budget is a percentage, optionally at a percentile: 10%, 10%@p95, not ''" \
  "$work/empty.out" || fail "tally-run's refusal of an empty budget: $(cat "$work/empty.out")"
timeout 30 "$run_bin" --slowdown-budget > "$work/none.out" 2>&1 && fail "tally-run ran without a budget"
grep -qF -- "--slowdown-budget needs a value" "$work/none.out" ||
  fail "tally-run's refusal of a missing budget: $(cat "$work/none.out")"
TALLY_SLOWDOWN_BUDGET=fast timeout 120 "$run_bin" --server "$socket" -- "$programs/vector_add" \
  > "$work/env.out" 2>&1 && fail "a program ran with TALLY_SLOWDOWN_BUDGET=fast"
grep -qF "TALLY_SLOWDOWN_BUDGET: a slowdown budget is a percentage" "$work/env.out" ||
  fail "the program did not say why it failed: $(cat "$work/env.out")"

# A policy without budgets refuses one above 0%, rather than show it as if it held; 0% is any
# policy's.
kill -KILL "$hog_pid"
wait "$hog_pid" 2>/dev/null
kill -TERM "$server_pid"
wait "$server_pid" 2>/dev/null
start_server --policy priority
start_hog --priority high
await_status "$work/priority.json" "len(s['clients']) == 1"
id=$(client_id "$work/priority.json" "$hog_pid")
refused_budget 1 "budget refused: --policy priority has no budgets" "$id" 10%
timeout 30 "$TALLY_CTL" budget "$id" 0% --server "$socket" > "$work/zero.out" ||
  fail "tally-ctl budget 0% failed under priority: $(cat "$work/zero.out")"

# A client's own budget under that policy runs, but the client and the log say, once, that it
# has no effect.
ignored="slowdown budget 10%@p99 has no effect: --policy priority has no budgets (priority-budget has)"
timeout 120 "$run_bin" --priority high --slowdown-budget 10% --server "$socket" -- \
  "$programs/vector_add" > "$work/ignored.out" 2> "$work/ignored.err" ||
  fail "a program with a budget failed under priority: $(cat "$work/ignored.out" "$work/ignored.err")"
(($(grep -cF "tally: $ignored" "$work/ignored.err") == 1)) ||
  fail "the program was not told once that its budget has no effect: $(cat "$work/ignored.err")"
(($(grep -cF "$ignored" "$work/server.log") == 1)) ||
  fail "the log did not say once that the budget has no effect: $(cat "$work/server.log")"
