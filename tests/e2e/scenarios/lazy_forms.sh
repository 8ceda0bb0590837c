# lazy_forms LEVEL BESIDE KERNELS TRANSFORMED QUEUED WAITED [server flags...]: many_kernels (a
# module of KERNELS kernels) at priority LEVEL (-: none given) launches one of them twice, alone
# (BESIDE -) or while a client at priority BESIDE is connected; then the server's module counters
# (tally-ctl status --json) say that one module was registered, every kernel indexed, and
# TRANSFORMED kernels transformed, each with its two forms (sliced and PTB) loaded; QUEUED of them
# made by the background worker (awaited: it may still be at work when the program has ended),
# and at most WAITED launches held until their kernel's forms were made. Where WAITED is 1 the
# client is shaped: its launches ran only in transformed forms. A shaped client's forms are
# requested when its launch is queued, so the worker may finish them before the dispatcher reaches
# the launch, which then is not held: how many were held depends on that race, what ran does not.
level=$1 beside=$2 kernels=$3 transformed=$4 queued=$5 waited=$6
priority=()
[[ $level != - ]] && priority=(--priority "$level")
start_server "${@:7}"
[[ $beside != - ]] && start_hog --priority "$beside"
timeout 120 "$run_bin" "${priority[@]}" --server "$socket" -- "$programs/many_kernels" \
  > "$work/many_kernels.out" 2>&1 || fail "many_kernels: $(cat "$work/many_kernels.out")"
await_status "$work/status.json" "s['modules']['forms_made'] == $queued"
json_check "$work/status.json" "s['modules'] == {'registered': 1, 'kernels_indexed': $kernels, \
'kernels_transformed': $transformed, 'forms_loaded': 2 * $transformed, 'forms_queued': $queued, \
'forms_made': $queued, 'forms_waited': s['modules']['forms_waited']} \
and s['modules']['forms_waited'] <= $waited"
if (( waited > 0 )); then
  # The server counts the program as departed when it notices its exit, on its own time.
  await_status "$work/status.json" "s['departed']['clients'] == 1"
  json_check "$work/status.json" "s['departed']['scheduling']['kernels_original'] == 0 and \
s['departed']['scheduling']['kernels_sliced'] + s['departed']['scheduling']['kernels_preemptible'] == 2"
fi
