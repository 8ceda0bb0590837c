# installed BUILD_DIR BINDIR [PROGRAMS...]: the build installed into a staging folder (DESTDIR)
# serves the programs end to end with the installed tally-server (on the emulated GPU) and
# tally-run, which load the installed emulated GPU, shim and library stand-ins, not the build's.
build=$1 bindir=$2
DESTDIR=$work/root cmake --install "$build" > "$work/install.log" 2>&1 ||
  fail "cmake --install: $(cat "$work/install.log")"
installed=$work/root$bindir
server_bin=$installed/tally-server
run_bin=$installed/tally-run
start_server
status_json "$work/status.json"
json_check "$work/status.json" "s['backend']['kind'] == 'emulator' and '$work/root/' in s['backend']['description']"
preload=$("$run_bin" --server "$socket" -- printenv LD_PRELOAD) || fail "tally-run printenv failed"
[[ $preload == "$work/root/"*/libtally_client.so* ]] || fail "the installed tally-run preloads $preload"
for program in "${@:3}"; do
  run "$program" > "$work/$program.out" 2>&1 || fail "$program: $(cat "$work/$program.out")"
done
