# lazy_forms KERNELS TRANSFORMED [server flags...]: many_kernels (a module of KERNELS kernels)
# launches one of them twice; then the server's module counters (tally-ctl status --json) say
# that one module was registered, every kernel indexed, and TRANSFORMED kernels transformed,
# each with its two forms (sliced and PTB) loaded.
kernels=$1 transformed=$2
start_server "${@:3}"
run many_kernels > "$work/many_kernels.out" 2>&1 || fail "many_kernels: $(cat "$work/many_kernels.out")"
status_json "$work/status.json"
json_check "$work/status.json" "s['modules'] == {'registered': 1, 'kernels_indexed': $kernels, \
'kernels_transformed': $transformed, 'forms_loaded': 2 * $transformed}"
