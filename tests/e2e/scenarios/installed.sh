# installed BUILD_DIR BINDIR [PROGRAMS...]: the build installed into a staging folder (DESTDIR)
# serves the programs end to end with the installed tally-server (on the emulated GPU) and
# tally-run, which load the installed emulated GPU, shim and library stand-ins, not the build's;
# then programs run as in a Kubernetes job's container (TALLY_NODE_BUNDLE: the node image's
# deploy/container/bundle_shim_libraries).
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

# As in a Kubernetes job's container (docs/kubernetes.md): the shim bundled as the node image
# bundles it, no tally-run, only the environment the device plugin and the pod give, connected
# through a grant: cudaMemGetInfo shows the grant's limit as the device's size, and cuBLAS
# calls reach the stand-ins (NVIDIA's cuBLAS cannot start under the shim).
libdir=$(dirname "${preload%%:*}")
"$TALLY_NODE_BUNDLE" "$libdir" > "$work/bundle.log" || fail "bundle: $(cat "$work/bundle.log")"
timeout 30 "$installed/tally-ctl" grant --server "$socket" --name GPU-0-best-effort-0 \
  --priority best-effort --memory-limit 64M > /dev/null || fail "tally-ctl grant failed"
in_pod() {
  timeout 120 env -i PATH=/usr/bin:/bin LD_PRELOAD="$libdir/libtally_client.so" \
    LD_LIBRARY_PATH="$libdir/stand-ins:$libdir/driver" TALLY_SERVER_UID="$(id -u)" \
    TALLY_SERVER="${socket%.sock}.grants/GPU-0-best-effort-0/server.sock" "$@"
}
in_pod "$programs/meminfo" > "$work/pod_meminfo.out" 2>&1 ||
  fail "meminfo in the pod's environment: $(cat "$work/pod_meminfo.out")"
grep -qx "meminfo: 67108864 of 67108864 bytes free" "$work/pod_meminfo.out" ||
  fail "meminfo did not see the grant's 64 MiB: $(cat "$work/pod_meminfo.out")"
if [[ -d $libdir/stand-ins ]]; then
  in_pod "$programs/cublas_calls" > "$work/pod_cublas.out" 2>&1 ||
    fail "cublas_calls in the pod's environment: $(cat "$work/pod_cublas.out")"
fi
