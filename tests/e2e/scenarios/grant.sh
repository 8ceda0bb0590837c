# grant: tally-ctl grant makes a socket whose clients get its ceiling whatever they ask (and are
# told), refuses bad requests clearly, takes no tally-ctl requests on the grant's socket, and
# tally-ctl revoke removes it, letting its clients finish or ending them.
start_server
grant_json() {  # grant_json NAME: a grant of best-effort, 64 MiB, 16 MiB pinned; its JSON
  timeout 30 "$TALLY_CTL" grant --server "$socket" --priority best-effort --memory-limit 64M \
    --pinned-limit 16M --name "$1" --json > "$work/grant-$1.json" ||
    fail "grant $1 failed: $(cat "$work/grant-$1.json")"
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["socket"])' \
    "$work/grant-$1.json" || fail "grant --json is not JSON: $(cat "$work/grant-$1.json")"
}
job1=$(grant_json job1)
[[ $job1 == "$work/server.grants/job1/server.sock" && -S $job1 ]] ||
  fail "grant job1's socket is '$job1'"

# refused_grant WORD ARGS...: tally-ctl grant fails, its message containing WORD
refused_grant() {
  local word=$1
  shift
  if timeout 30 "$TALLY_CTL" grant --server "$socket" "$@" > "$work/refused.out" 2>&1; then
    fail "grant $* was made: $(cat "$work/refused.out")"
  fi
  grep -qF -- "$word" "$work/refused.out" || fail "grant $* did not say '$word': $(cat "$work/refused.out")"
}
refused_grant "already" --priority high --memory-limit 1M --name job1
refused_grant "at most the device's" --priority high --memory-limit 1T --name big
refused_grant "a grant's name" --priority high --memory-limit 1M --name ../up
refused_grant "--memory-limit SIZE" --priority high --name nolimit
refused_grant "--priority wants" --priority urgent --memory-limit 1M

# A job asking for more than its grant gets the grant's, and is told.
# (Its priority by tally-run's option, its memory limit by the environment.)
TALLY_MEMORY_LIMIT=1G socket=$job1 start_job greedy high priority_jobs serve --kernels 4 \
  --blocks 2 --work 10 --handshake
await_line greedy READY
grep -q "grant 'job1' gives this job priority best-effort, not high and a device-memory limit of 67108864 bytes, not 1073741824" \
  "$work/greedy.out" || fail "the job was not told what its grant lowered: $(cat "$work/greedy.out")"
await_status "$work/granted.json" \
  "len(s['clients']) == 1 and s['grants'][0]['clients'] == 1"
json_check "$work/granted.json" "s['clients'][0]['grant'] == 'job1'"
json_check "$work/granted.json" "s['clients'][0]['priority'] == 0"
json_check "$work/granted.json" "s['clients'][0]['memory_limit_bytes'] == 64 << 20"
json_check "$work/granted.json" "s['clients'][0]['pinned_limit_bytes'] == 16 << 20"
json_check "$work/granted.json" \
  "s['grants'][0]['name'] == 'job1' and s['grants'][0]['memory_limit_bytes'] == 64 << 20"

# The grant's socket answers no tally-ctl request: a job cannot read others' status or change
# anything through it.
if timeout 30 "$TALLY_CTL" status --server "$job1" > "$work/through.out" 2>&1; then
  fail "tally-ctl status through the grant's socket was answered"
fi
grep -q "socket of grant 'job1'" "$work/through.out" || fail "no reason: $(cat "$work/through.out")"

# A program needing more memory than the grant allows fails as CUDA does (hog: 256 MiB).
if timeout 60 "$run_bin" --server "$job1" -- "$programs/hog" > "$work/hog.out" 2>&1; then
  fail "hog ran under a 64 MiB grant"
fi
grep -q "cudaErrorMemoryAllocation" "$work/hog.out" || fail "hog's failure: $(cat "$work/hog.out")"

# revoke --clients keep: the socket goes, the job finishes its work correctly.
timeout 30 "$TALLY_CTL" revoke job1 --server "$socket" > "$work/revoke.out" ||
  fail "revoke failed: $(cat "$work/revoke.out")"
grep -q "revoked 'job1'" "$work/revoke.out" || fail "revoke said $(cat "$work/revoke.out")"
[[ ! -e $job1 && ! -e $work/server.grants/job1 ]] || fail "job1's socket or directory is left"
send_line greedy go
await_line greedy FINISHED
send_line greedy bye
wait "$greedy_pid" || fail "the job of a grant revoked with --clients keep failed: $(cat "$work/greedy.out")"
if timeout 30 "$TALLY_CTL" revoke job1 --server "$socket" > "$work/again.out" 2>&1; then
  fail "a revoked grant was revoked again"
fi
grep -q "no grant named 'job1'" "$work/again.out" || fail "second revoke: $(cat "$work/again.out")"

# revoke --clients end: the job's next CUDA call fails; the server serves others on.
job2=$(grant_json job2)
socket=$job2 start_job ended best-effort priority_jobs serve --kernels 4 --blocks 2 --work 10 \
  --handshake
await_line ended READY
timeout 30 "$TALLY_CTL" revoke job2 --clients end --server "$socket" > "$work/end.out" ||
  fail "revoke --clients end failed: $(cat "$work/end.out")"
grep -q "are ended" "$work/end.out" || fail "revoke said $(cat "$work/end.out")"
send_line ended go
for _ in $(seq 300); do kill -0 "$ended_pid" 2>/dev/null || break; sleep 0.1; done
if wait "$ended_pid"; then fail "the job of a grant revoked with --clients end succeeded"; fi
run vector_add > "$work/after.out" 2>&1 || fail "the server no longer serves: $(cat "$work/after.out")"
