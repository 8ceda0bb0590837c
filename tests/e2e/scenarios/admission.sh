# admission wait|timeout: under tally-server --admission wait, on a 512 MiB device of which a hog
# holds 256 MiB, a job asking for 384 MiB (tally-run --memory-limit) waits, saying so on its
# stderr. wait: once the hog is killed the job is admitted, runs and passes. timeout: with a
# short --admission-timeout-ms it is refused, saying why.
export TALLY_EMU_MEMORY_MB=512
case $1 in
  wait) timeout_ms=60000 ;;
  timeout) timeout_ms=300 ;;
  *) fail "admission wants wait or timeout, not '$1'" ;;
esac
start_server --admission wait --admission-timeout-ms "$timeout_ms"
start_hog
timeout 120 "$run_bin" --memory-limit 384M --server "$socket" -- "$programs/vector_add" \
  > "$work/job.out" 2> "$work/job.err" &
job_pid=$!
background_pids+=("$job_pid")
waiting="tally: waiting for 384 MiB of device memory on $socket (256 MiB free now, 0 job(s) ahead)"
if [[ $1 == timeout ]]; then
  wait "$job_pid" && fail "a job that waited past the timeout ran: $(cat "$work/job.out")"
  grep -qF "$waiting" "$work/job.err" || fail "the job did not say it waited: $(cat "$work/job.err")"
  grep -q "refused us: it waited 0.3 s (tally-server --admission-timeout-ms) for 384 MiB" \
    "$work/job.err" || fail "the refusal did not say why: $(cat "$work/job.err")"
  return 0
fi
for _ in $(seq 200); do
  grep -qF "$waiting" "$work/job.err" 2>/dev/null && break
  sleep 0.05
done
grep -qF "$waiting" "$work/job.err" || fail "the job did not say it waits: $(cat "$work/job.err")"
status_json "$work/waiting.json"
json_check "$work/waiting.json" "s['admission_waiting'] == 1 and len(s['clients']) == 1"
kill -KILL "$hog_pid"
wait "$job_pid" || fail "the job failed once memory was freed: $(cat "$work/job.out" "$work/job.err")"
[[ $(grep -cF "tally: waiting for" "$work/job.err") == 1 ]] ||
  fail "the job did not say once that it waits: $(cat "$work/job.err")"
