# code_cache [server flags...]: the code cache (tally-server --code-cache) across processes and
# restarts. many_kernels's launched kernel runs in its sliced form (--validate=slice:2), so its
# result comes from forms that were made, or read from the cache:
# - the first process makes the kernel's forms and stores them, and the machine code the driver's
#   linker compiled from them and from the module's original PTX, linked on the server's filler
#   after each loaded as PTX (three misses, three entries, two images linked); a second process of
#   the same server finds all three (three hits, two images loaded from the cache, none linked),
#   and so does the first after a restart on the same folder;
# - entries damaged on disk are detected (corrupt), made again, and the program still right;
# - tally-ctl cache shows the folder and clears it;
# - two servers filling one empty folder at once leave whole entries only;
# - with modules kept loaded after their last client (--kept-modules, on by default), a second
#   process finds the module loaded with its forms: nothing is read again, not even the cache.
# Every other part runs with --kept-modules 0, so that each process's module is its own.
cache=$work/code-cache
start_cached() { start_server --code-cache "$cache" --validate=slice:2 --kept-modules 0 "$@"; }
stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" 2>/dev/null
  server_pid=
}
# expect_cache <expression over `c`, status's code_cache, and `m`, its machine_code>: polled
# (bounded), as machine code is stored by the server's filler after the load that missed it.
expect_cache() {
  await_status "$work/status.json" \
    "(lambda c: (lambda m: $1)(c['machine_code']))(s['code_cache'])"
}
# many <name>: many_kernels, right, and gone from the server (its module with it, so that the
# next process's module is its own and looks for the forms again).
many() {
  run_expecting "many_kernels: kernel 7 of 300 ran twice, correctly" "$1" many_kernels
  await_status "$work/gone.json" "s['clients'] == []"
}

start_cached "$@"
many first
expect_cache "c['misses'] == 3 and c['stored'] == 3 and c['hits'] == 0 and c['entries'] == 3 and \
m == {'linked': 2, 'loaded': 0, 'refused': 0, 'link_failed': 0, 'filling': 0}"
many second
expect_cache "c['hits'] == 3 and c['misses'] == 3 and c['stored'] == 3 and m['loaded'] == 2 and \
m['linked'] == 2"
stop_server

start_cached "$@"
many restarted
expect_cache "c['hits'] == 3 and c['misses'] == 0 and c['corrupt'] == 0 and m['loaded'] == 2 and \
m['linked'] == 0"
stop_server

# Damage every entry (the forms and both machine codes): their payloads' last bytes.
entries=("$cache"/*.tcc)
((${#entries[@]} == 3)) || fail "not three entries in $cache: $(ls -A "$cache")"
for entry in "${entries[@]}"; do
  printf 'XXXX' | dd of="$entry" bs=1 seek=$(($(stat -c %s "$entry") - 4)) conv=notrunc status=none
done
start_cached "$@"
many damaged
expect_cache "c['corrupt'] == 3 and c['hits'] == 0 and c['stored'] == 3 and c['entries'] == 3 and \
m['linked'] == 2"
grep -q "is damaged" "$work/server.log" || fail "the server did not say the entry was damaged"

timeout 30 "$TALLY_CTL" cache --json --server "$socket" > "$work/cache.json" ||
  fail "tally-ctl cache failed"
json_check "$work/cache.json" "s['dir'] == '$cache' and s['entries'] == 3 and s['bytes'] > 0 and \
s['limit_bytes'] == 1 << 30 and s['machine_code']['linked'] == 2"
timeout 30 "$TALLY_CTL" cache clear --server "$socket" > "$work/clear.out" ||
  fail "tally-ctl cache clear failed: $(cat "$work/clear.out")"
grep -q "^code cache: $cache (0 entries" "$work/clear.out" ||
  fail "tally-ctl cache clear said: $(cat "$work/clear.out")"
[[ -z $(ls -A "$cache") ]] || fail "the folder is not empty after clearing: $(ls -A "$cache")"
stop_server

# Two servers filling the empty folder at once, each with two programs at once.
second=$work/second.sock
"$server_bin" --emulate --socket "$second" --profile-cache none --code-cache "$cache" \
  --validate=slice:2 --kept-modules 0 "$@" 2>"$work/second.log" &
second_pid=$!
background_pids+=("$second_pid")
start_cached "$@"
for _ in $(seq 100); do [[ -S $second ]] && break; sleep 0.05; done
[[ -S $second ]] || fail "the second server did not create $second"
pids=()
for i in 1 2; do
  run many_kernels > "$work/one-$i.out" 2>&1 &
  pids+=($!)
  timeout 120 "$run_bin" --server "$second" -- "$programs/many_kernels" > "$work/two-$i.out" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || fail "a program beside the other server failed"; done
# The machine code is stored by the servers' fillers after the programs' loads: all three
# entries there (bounded) before the servers stop.
for _ in $(seq 200); do
  [[ $(find "$cache" -name '*.tcc' | wc -l) == 3 ]] && break
  sleep 0.05
done
kill -TERM "$second_pid"
wait "$second_pid" 2>/dev/null
stop_server
[[ $(ls -A "$cache" | grep -cv '\.tcc$') == 0 && $(ls -A "$cache" | wc -l) == 3 ]] ||
  fail "the shared folder holds other than the three entries: $(ls -A "$cache")"
start_cached "$@"
many shared
expect_cache "c['hits'] == 3 and c['corrupt'] == 0"
stop_server

# Kept modules: the second process's module is the first's, forms and all.
rm -rf "$cache"
start_server --code-cache "$cache" --validate=slice:2 "$@"
many kept-first
many kept-second
expect_cache "c['misses'] == 3 and c['stored'] == 3 and c['hits'] == 0"
json_check "$work/status.json" "s['modules']['registered'] == 2 and \
s['modules']['kernels_indexed'] == 300 and s['modules']['kernels_transformed'] == 1"
