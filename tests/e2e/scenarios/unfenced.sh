# unfenced RULE: on the emulated GPU configured as NVIDIA's driver (one address space, no
# tenants), under tally-server --isolation fenced --unfenceable RULE, cooperative launches a
# kernel that cannot be fenced (its grid sync reads the driver's workspace through %envreg).
# refuse: the launch fails, naming the kernel and why. alone: alone on the device the program
# runs and checks its results; while another client holds memory the launch waits (tally-ctl
# status says so), the other finds its data intact, and once it has left the program runs.
rule=$1
# A long wait: the launch must outwait the other client, however slow the machine.
TALLY_EMU_NO_TENANTS=1 start_server --isolation fenced --unfenceable "$rule" --unfenceable-wait-ms 60000
if [[ $rule == refuse ]]; then
  # The shim logs why a call failed at debug level.
  if TALLY_LOG_LEVEL=debug run cooperative > "$work/refused.out" 2>&1; then
    fail "a kernel that cannot be fenced was run: $(cat "$work/refused.out")"
  fi
  grep -Eq "kernel .*RotateAcrossBlocks.* cannot be fenced \(.*%envreg.*--unfenceable refuse" \
    "$work/refused.out" ||
    fail "the refusal did not say why: $(cat "$work/refused.out")"
  status_json "$work/status.json"
  json_check "$work/status.json" "s['isolation'] == 'fenced' and s['unfenceable'] == 'refuse'"
  return 0
fi
run cooperative > "$work/alone.out" 2>&1 || fail "cooperative, alone: $(cat "$work/alone.out")"

coproc OWNER { exec "$run_bin" --server "$socket" -- "$programs/tenant" owner "$work/pointer"; }
owner_pid=$OWNER_PID
background_pids+=("$owner_pid")
read -r -t 60 line <&"${OWNER[0]}" || fail "the owner never became ready"
[[ $line == READY ]] || fail "the owner said '$line'"
run cooperative > "$work/waited.out" 2>&1 &
cooperative_pid=$!
background_pids+=("$cooperative_pid")
await_status "$work/status.json" "any(c['unfenced_waiting'] == 1 for c in s['clients'])"
json_check "$work/status.json" "s['unfenceable'] == 'alone'"
ask OWNER check INTACT
wait "$owner_pid" || fail "the owner failed"
wait "$cooperative_pid" || fail "cooperative, after the owner left: $(cat "$work/waited.out")"
