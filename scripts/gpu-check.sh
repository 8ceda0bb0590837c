#!/usr/bin/env bash
# Tally on a machine with an NVIDIA GPU: bundles this build, then runs tally-server on NVIDIA's
# driver with the end-to-end programs, fenced kernels (--isolation), the priority benchmark,
# tally-bench's live mode, the start-up benchmark and PyTorch loops through tally-run, and writes
# a Markdown summary.
# Every step is bounded in time; the whole run fits a budget.
#
#   scripts/gpu-check.sh bundle [--build DIR] [--with-emulator] BUNDLE_DIR
#       here: copies the binaries, the e2e programs and the shared libraries a bare Ubuntu or
#       Debian image with only NVIDIA's driver may lack into BUNDLE_DIR (run.sh starts it)
#   BUNDLE_DIR/run.sh [--emulate] [--small] [--budget SECONDS] OUT_DIR
#       there (no network needed): runs everything, writes OUT_DIR/summary.md; exit status 0
#       when every step passed (skipped steps say why), 1 otherwise
#   scripts/gpu-check.sh --dry-run [--build DIR] OUT_DIR
#       both here, on the emulated GPU with small sizes (what the gpu_check_dry test runs)
set -uo pipefail

self=$(readlink -f "${BASH_SOURCE[0]}")
here=$(dirname "$self")

# Libraries every image with glibc and NVIDIA's driver has; everything else a binary needs is
# copied. libstdc++ and libgcc_s stay out too: an application (PyTorch) must keep its own.
system_library() {
  [[ $1 =~ ^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libstdc\+\+\.so|libgcc_s\.so|libcuda\.so|libnvidia-) ]]
}

# Programs of tests/e2e that are not self-checking runs: each with why.
declare -A excluded=(
  [hog]="a helper that waits to be killed (e2e_killed_client)"
  [survivor]="a helper that waits for the server to die (e2e_server_killed)"
  [priority_jobs]="run by the priority benchmark"
  [gemm_jobs]="a helper the e2e_library_priority test drives with arguments"
  [meminfo]="expects the whole device free, true only on a private emulated GPU"
  [module_refused]="checks a PTX instruction the emulated GPU refuses, which NVIDIA's accepts"
  [large_module]="a 65 MiB image: too large to carry to the GPU machine"
  [tenant]="a helper the isolation, quota, flood and shared-fault tests drive with arguments"
  [mem_pools]="checks a device-memory limit that the e2e_mem_pools test sets"
  [managed_rollback]="checks a page-locked memory limit that the e2e_managed_rollback test sets"
)

# Excluded programs that are bundled all the same: other steps drive them.
helper_program() { [[ $1 == priority_jobs || $1 == tenant ]]; }

elf() { [[ -f $1 && -x $1 ]] && head -c 4 "$1" | grep -q ELF; }

bundle() {
  local build=build with_emulator=0
  while [[ $# -gt 1 ]]; do
    case $1 in
      --build) build=$2; shift 2 ;;
      --with-emulator) with_emulator=1; shift ;;
      *) echo "gpu-check bundle: unknown option $1" >&2; return 2 ;;
    esac
  done
  [[ $# -eq 1 ]] || { echo "usage: gpu-check.sh bundle [--build DIR] BUNDLE_DIR" >&2; return 2; }
  local out=$1 root
  root=$(cd "$here/.." && pwd)
  for binary in server/tally-server tools/tally-run tools/tally-ctl client/libtally_client.so \
                benchmarks/bench/tally-bench; do
    [[ -f $build/$binary ]] || { echo "gpu-check: $build/$binary is not built" >&2; return 1; }
  done
  rm -rf "$out"
  mkdir -p "$out/bin" "$out/lib" "$out/stand-ins" "$out/programs" "$out/bench"
  cp "$build/server/tally-server" "$build/tools/tally-run" "$build/tools/tally-ctl" \
     "$build/benchmarks/bench/tally-bench" "$out/bin/"
  cp "$build/client/libtally_client.so" "$out/lib/"
  # The library stand-ins (libcublas.so.13, ...), which tally-run puts before the vendor's.
  cp "$build"/libraries/lib/* "$out/stand-ins/"
  [[ $with_emulator -eq 1 ]] && cp "$build/emulator/libtally_emu.so" "$out/lib/"
  # Without debug information the bundle is a few MiB (the device machine's transfer limit).
  strip --strip-debug "$out"/bin/* "$out"/lib/*.so "$out"/stand-ins/*
  local program name
  for program in "$build"/tests/e2e/*; do
    name=$(basename "$program")
    elf "$program" || continue
    [[ -n ${excluded[$name]:-} ]] && ! helper_program "$name" && continue
    cp "$program" "$out/programs/"
  done
  for name in "${!excluded[@]}"; do
    printf '%s\t%s\n' "$name" "${excluded[$name]}"
  done | sort > "$out/programs/EXCLUDED"
  cp "$root/benchmarks/priority/priority_bench.py" "$root/benchmarks/fence/run_fence_cost.sh" \
     "$out/bench/"
  cp "$here/gpu_check_torch.py" "$out/bench/"
  # The start-up benchmark, and the libcudart its run without Tally needs (run_startup).
  if [[ -x $build/benchmarks/startup ]]; then
    cp "$build/benchmarks/startup" "$root/benchmarks/startup/run_startup.sh" "$out/bench/"
    mkdir -p "$out/bench/cudart"
    ldd "$build/benchmarks/startup" | awk '$1 ~ /^libcudart/ {print $3}' |
      xargs -r -I{} cp -L {} "$out/bench/cudart/"
  fi
  cp "$root/benchmarks/bench/check_result.py" "$root/benchmarks/scenarios/live_smoke.toml" \
     "$root/benchmarks/scenarios/gpu_pair.toml" "$out/bench/"
  cp "$self" "$out/gpu-check.sh"
  printf '#!/usr/bin/env bash\n# Runs the GPU check of this bundle (see gpu-check.sh).\n' > "$out/run.sh"
  printf 'exec "$(dirname "$(readlink -f "$0")")/gpu-check.sh" run "$@"\n' >> "$out/run.sh"
  chmod +x "$out/run.sh"
  # Shared libraries a bare image may lack, resolved here by the loader.
  local file library path
  for file in "$out"/bin/* "$out"/lib/*.so "$out"/stand-ins/* "$out"/programs/*; do
    elf "$file" || [[ $file == *.so ]] || continue
    while read -r library _ path _; do
      system_library "$library" && continue
      [[ $library == libcudart.so* ]] && continue  # the shim is the program's libcudart
      # So is Tally's stand-in for a library (found first here, as tally-run will put it).
      [[ -e $out/stand-ins/$library ]] && continue
      # NVRTC (~100 MiB) is the toolkit's: its one program is skipped where it is missing.
      [[ $library == libnvrtc* ]] && continue
      [[ -f $path && ! -e $out/lib/$library ]] && cp -L "$path" "$out/lib/$library"
    done < <(LD_LIBRARY_PATH=$out/stand-ins${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$file" \
               2>/dev/null | grep "=> /")
  done
  {
    echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "built on: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
    echo "newest glibc symbol needed: $(objdump -T "$out"/bin/* "$out"/lib/*.so 2>/dev/null |
      grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)"
    echo "bundled libraries: $(cd "$out/lib" && ls | tr '\n' ' ')"
  } > "$out/MANIFEST"
  echo "gpu-check: bundled into $out ($(du -sh "$out" | cut -f1))"
}

# --- run (on the GPU machine) -------------------------------------------------------------

run() {
  local emulate=0 small=0 budget=450
  while [[ $# -gt 1 ]]; do
    case $1 in
      --emulate) emulate=1; shift ;;
      --small) small=1; shift ;;
      --budget) budget=$2; shift 2 ;;
      *) echo "gpu-check run: unknown option $1" >&2; return 2 ;;
    esac
  done
  [[ $# -eq 1 ]] || { echo "usage: run.sh [--emulate] [--small] [--budget S] OUT_DIR" >&2; return 2; }
  out=$(mkdir -p "$1" && cd "$1" && pwd)
  bundle_dir=$here
  bin=$bundle_dir/bin
  deadline=$((SECONDS + budget))
  work=$(mktemp -d /tmp/tally-gpu-check-XXXXXX)
  socket=$work/server.sock
  summary=$out/summary.md
  failures=0
  server_pid=
  trap 'stop_server; rm -rf "$work"' EXIT
  export LD_LIBRARY_PATH=$bundle_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export TALLY_CLIENT_LIBRARY=$bundle_dir/lib/libtally_client.so
  export TALLY_LIBRARY_DIR=$bundle_dir/stand-ins
  server_flags=(--socket "$socket" --profile-cache "$work/profiles.json"
                --code-cache "$work/code-cache")
  if [[ $emulate -eq 1 ]]; then
    server_flags+=(--emulate --emulator-library "$bundle_dir/lib/libtally_emu.so")
    # For the servers that tally-bench starts.
    export TALLY_EMU_LIBRARY=$bundle_dir/lib/libtally_emu.so
  fi

  {
    echo "# Tally GPU check"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), host $(hostname)"
    echo "- mode: $([[ $emulate -eq 1 ]] && echo "dry run on the emulated GPU" || echo "NVIDIA driver")$([[ $small -eq 1 ]] && echo ", small sizes")"
    sed 's/^/- bundle /' "$bundle_dir/MANIFEST"
    echo "- this machine: $( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null), $(ldd --version 2>&1 | head -1)"
    if [[ $emulate -eq 0 ]]; then
      echo "- nvidia-smi: $(bounded 20 nvidia-smi --query-gpu=name,driver_version,memory.total \
        --format=csv,noheader 2>&1 | head -3 | tr '\n' ' ')"
    fi
    echo
  } > "$summary"

  missing=$(ldd "$bin/tally-server" "$bin/tally-run" "$bundle_dir/lib/libtally_client.so" 2>&1 |
    grep "not found" | sort -u)
  if [[ -n $missing ]]; then
    note "**FAIL**: the bundle's binaries cannot start here: $(echo "$missing" | tr '\n' ' ')"
    return 1
  fi

  start_server || return 1
  check_backend || { stop_server; return 1; }
  run_programs
  stop_server
  run_shared_fault
  run_fence
  run_bench "$small"
  run_tally_bench "$small"
  run_startup
  run_torch
  echo >> "$summary"
  if [[ $failures -eq 0 ]]; then note "**Result: PASS**"; else note "**Result: FAIL** ($failures)"; fi
  echo "gpu-check: summary in $summary"
  cat "$summary"
  [[ $failures -eq 0 ]]
}

note() { echo "$*" >> "$summary"; }

# Seconds left of the budget.
left() { echo $((deadline - SECONDS)); }

# bounded SECONDS command...: the command under timeout, never past the budget (124 then).
bounded() {
  local limit=$1 remaining
  shift
  remaining=$(left)
  ((remaining < limit)) && limit=$remaining
  ((limit > 0)) || return 124
  timeout -k 5 "$limit" "$@"
}

# start_server [LOG]: its log in OUT_DIR/LOG (server.log).
start_server() {
  local log=$out/${1:-server.log}
  "$bin/tally-server" "${server_flags[@]}" 2> "$log" &
  server_pid=$!
  for _ in $(seq 200); do [[ -S $socket ]] && return 0; sleep 0.05; done
  note "**FAIL**: tally-server did not start; its log: \`$(tail -3 "$log" | tr '\n' ' ')\`"
  failures=$((failures + 1))
  stop_server
  return 1
}

stop_server() {
  [[ -n ${server_pid:-} ]] || return 0
  kill -TERM "$server_pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null
  server_pid=
}

# The server must be on the backend the mode asks for: a GPU check on the emulator proves nothing.
check_backend() {
  local want=nvidia-driver status
  [[ $emulate -eq 1 ]] && want=emulator
  status=$(bounded 30 "$bin/tally-ctl" status --json --server "$socket" 2>&1)
  local kind
  kind=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["backend"]["kind"])' \
    "$status" 2>/dev/null)
  note "- server backend: $kind ($(head -1 "$out/server.log" | cut -c1-200))"
  note ""
  if [[ $kind != "$want" ]]; then
    note "**FAIL**: the server runs on '$kind', not $want: $(tail -5 "$out/server.log" | tr '\n' ' ')"
    failures=$((failures + 1))
    return 1
  fi
}

# Last lines of a program's output, on one line, for the table.
reason() { tail -n "${2:-3}" "$1" | tr '\n|' '  ' | cut -c1-300; }

run_programs() {
  note "## End-to-end programs (tests/e2e) through tally-run"
  note ""
  note "| program | result | seconds | detail |"
  note "|---|---|---|---|"
  local program name status start missing passed=0 failed=0
  for program in "$bundle_dir"/programs/*; do
    name=$(basename "$program")
    [[ $name == EXCLUDED ]] || helper_program "$name" && continue
    # tally-run provides libcudart and libcuda (the shim), and the library stand-ins.
    missing=$(LD_LIBRARY_PATH=$TALLY_LIBRARY_DIR:$LD_LIBRARY_PATH ldd "$program" 2>&1 |
      grep "not found" | grep -v -e libcudart -e libcuda |
      awk '{print $1}' | tr '\n' ' ')
    if [[ -n $missing ]]; then
      note "| $name | skipped | - | needs ${missing% } (not on this machine, not bundled) |"
      continue
    fi
    start=$SECONDS
    if [[ $name == vector_add_static ]]; then
      # tally-run must refuse a statically linked runtime (exit 3), saying why.
      bounded 60 "$bin/tally-run" --server "$socket" -- "$program" > "$work/$name.out" 2>&1
      status=$?
      [[ $status -eq 3 ]] && grep -q "cudart shared" "$work/$name.out" && status=0
    elif [[ $name == device_output ]]; then
      # Its assert would fault the context every program shares: run_shared_fault runs it whole.
      TALLY_E2E_NO_ASSERT=1 bounded 90 "$bin/tally-run" --server "$socket" -- "$program" \
        > "$work/$name.out" 2>&1
      status=$?
    else
      bounded 90 "$bin/tally-run" --server "$socket" -- "$program" > "$work/$name.out" 2>&1
      status=$?
    fi
    cp "$work/$name.out" "$out/$name.out"
    if [[ $status -eq 0 ]]; then
      note "| $name | pass | $((SECONDS - start)) | |"
      passed=$((passed + 1))
    else
      local what="exit $status"
      [[ $status -eq 124 || $status -eq 137 ]] && what="timed out"
      note "| $name | **FAIL** | $((SECONDS - start)) | $what: $(reason "$work/$name.out") |"
      failed=$((failed + 1))
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
      note "| (server) | **FAIL** | | tally-server died: $(tail -3 "$out/server.log" | tr '\n|' '  ') |"
      failed=$((failed + 1))
      start_server || break
    fi
  done
  note ""
  note "$passed passed, $failed failed. Not run: $(cut -f1 "$bundle_dir/programs/EXCLUDED" |
    tr '\n' ' ')(programs/EXCLUDED says why)."
  note ""
  failures=$((failures + failed))
}

# A kernel fault in the context every client shares (server/README.md, "Tenants"): the faulting
# program gets its error, a program connected meanwhile cudaErrorDevicesUnavailable, and one
# started afterwards is served once the server has reset the context (after the bystander, which
# stays connected, is disconnected: a 3 s grace). The emulated GPU shares faults so only without
# its tenants (TALLY_EMU_NO_TENANTS).
run_shared_fault() {
  note "## A kernel fault in the shared context"
  note ""
  local tenant=$bundle_dir/programs/tenant detail="" line start=$SECONDS
  TALLY_EMU_NO_TENANTS=1 start_server shared-fault-server.log || return
  coproc BYSTANDER { bounded 120 "$bin/tally-run" --server "$socket" -- "$tenant" bystander \
                       2> "$work/bystander.err"; }
  # Its own copies: bash unsets BYSTANDER when the coprocess ends.
  local from_bystander=${BYSTANDER[0]} to_bystander=${BYSTANDER[1]} bystander_pid=$BYSTANDER_PID
  read -r -t 60 line <&"$from_bystander"
  [[ $line == READY ]] || detail="the bystander did not start: $(reason "$work/bystander.err")"
  if [[ -z $detail ]]; then
    bounded 90 "$bin/tally-run" --server "$socket" -- "$tenant" fault illegal-address \
      > "$work/fault.out" 2>&1
    grep -qx FAULTED "$work/fault.out" || detail="the faulting program: $(reason "$work/fault.out")"
  fi
  if [[ -z $detail ]]; then
    echo check >&"$to_bystander"
    read -r -t 60 line <&"$from_bystander"
    [[ $line == LOST ]] || detail="the bystander answered '$line': $(reason "$work/bystander.err")"
  fi
  if [[ -z $detail ]]; then
    bounded 120 "$bin/tally-run" --server "$socket" -- "$tenant" compute 2 > "$work/after.out" 2>&1
    grep -qx COMPUTED "$work/after.out" ||
      detail="the program started after the fault: $(reason "$work/after.out")"
  fi
  if [[ -z $detail ]]; then
    # A failed device assert: its message reaches the program's stderr from the context it
    # faults (device_output checks the message and cudaErrorAssert).
    bounded 120 "$bin/tally-run" --server "$socket" -- "$bundle_dir/programs/device_output" \
      > "$work/assert.out" 2>&1 || detail="a failed assert's message: $(reason "$work/assert.out")"
  fi
  echo exit >&"$to_bystander" 2>/dev/null
  wait "$bystander_pid" 2>/dev/null
  stop_server
  if [[ -z $detail ]]; then
    note "- pass ($((SECONDS - start)) s): fault error for the faulting program, \`cudaErrorDevicesUnavailable\` for the bystander, the next program served after the context reset, a failed assert's message in its program's stderr"
  else
    note "- **FAIL** ($((SECONDS - start)) s): $detail"
    failures=$((failures + 1))
  fi
  note ""
}

# --isolation fenced on this device (docs/isolation.md): a client that reads and overwrites
# another's buffer, and one that overruns its own as far as another's, get
# cudaErrorIllegalAddress and the owner finds its data intact; then the end-to-end programs run
# fenced and unfenced, timed (run_fence_cost).
run_fence() {
  note "## Fenced kernels (--isolation fenced)"
  note ""
  local tenant=$bundle_dir/programs/tenant plain_flags=("${server_flags[@]}") attack line
  server_flags+=(--isolation fenced)
  start_server fence-server.log || { server_flags=("${plain_flags[@]}"); return; }
  for attack in intruder overrun; do
    local detail="" from_owner to_owner owner_pid
    coproc OWNER { bounded 120 "$bin/tally-run" --server "$socket" -- "$tenant" owner \
                     "$work/pointer" 2> "$work/owner.err"; }
    from_owner=${OWNER[0]} to_owner=${OWNER[1]} owner_pid=$OWNER_PID
    read -r -t 60 line <&"$from_owner"
    [[ $line == READY ]] || detail="the owner did not start: $(reason "$work/owner.err")"
    if [[ -z $detail ]]; then
      bounded 90 "$bin/tally-run" --server "$socket" -- "$tenant" "$attack" "$work/pointer" \
        > "$work/$attack.out" 2>&1
      grep -qx REFUSED "$work/$attack.out" || detail="the $attack: $(reason "$work/$attack.out")"
      echo check >&"$to_owner"
      read -r -t 60 line <&"$from_owner"
      [[ -z $detail && $line != INTACT ]] && detail="the owner's buffer after the $attack: '$line'"
    fi
    wait "$owner_pid" 2>/dev/null
    if [[ -z $detail ]]; then
      note "- $attack: pass (cudaErrorIllegalAddress for it, the owner's data intact)"
    else
      note "- $attack: **FAIL**: $detail"
      failures=$((failures + 1))
    fi
  done
  stop_server
  server_flags=("${plain_flags[@]}")
  note ""
  run_fence_cost
}

# The fence's cost to whole end-to-end programs (benchmarks/fence/run_fence_cost.sh): two servers,
# unfenced and fenced, warm runs (the first of each, which transforms the modules, left out),
# medians of alternating rounds.
run_fence_cost() {
  local rounds=3 name programs=() backend=(--gpu)
  [[ $small -eq 1 ]] && rounds=1
  [[ $emulate -eq 1 ]] && backend=(--server-arg "--emulator-library=$bundle_dir/lib/libtally_emu.so")
  for name in vector_add memory params graphs threads warp_groups managed cublas_calls \
      cudnn_calls cudnn_rnn; do
    [[ -x $bundle_dir/programs/$name ]] && programs+=("$name")
    [[ $small -eq 1 && ${#programs[@]} -eq 2 ]] && break
  done
  note "Whole programs (\`run_fence_cost.sh\`, medians of $rounds alternating warm rounds):"
  note ""
  if bounded 240 "$bundle_dir/bench/run_fence_cost.sh" "${backend[@]}" "$bin/tally-server" \
      "$bin/tally-run" "$bundle_dir/programs" "$rounds" "${programs[@]}" \
      > "$work/fence-cost.out" 2> "$out/fence-cost.log"; then
    cat "$work/fence-cost.out" >> "$summary"
  else
    note "**FAIL** (exit $?): $(reason "$out/fence-cost.log" 5)"
    failures=$((failures + 1))
  fi
  note ""
}

# Whether the start-up step's servers linked machine code on the driver (run_startup.sh --ctl's
# last line in FILE): a failed link is a FAIL (the module then loads as PTX, compiled by the driver
# at every load, and start-up keeps paying the JIT); none linked and none loaded, too.
startup_links() {
  local pattern='^machine code: ([0-9]+) linked, ([0-9]+) loaded .* ([0-9]+) links failed$'
  if [[ ! $(grep '^machine code: ' "$1") =~ $pattern ]]; then
    note "**FAIL**: run_startup.sh printed no machine-code counters"
  elif ((BASH_REMATCH[3] > 0)); then
    note "**FAIL**: ${BASH_REMATCH[3]} machine-code link(s) failed on the driver: those modules" \
      "load as PTX (why: $(reason "$out/startup.log" 3))"
  elif ((BASH_REMATCH[1] + BASH_REMATCH[2] == 0)); then
    note "**FAIL**: no machine code was linked or loaded from the code cache"
  else
    return 0
  fi
  failures=$((failures + 1))
}

# Time to first kernel end (benchmarks/startup/run_startup.sh): the program without Tally, and
# through Tally cold, warm (a second process) and after a restart, which finds the modules' machine
# code (the originals' and the forms') and the kernels' forms in the code cache. With the default
# flags the first kernel runs in its original form; with --validate=slice:2 in its sliced form; with
# --isolation=fenced every kernel's forms are compiled with the module. The servers' machine-code
# counters are summed after each table; a failed link fails the step (startup_links).
run_startup() {
  note "## Start-up: time to first kernel end (benchmarks/startup/run_startup.sh)"
  note ""
  if [[ ! -x $bundle_dir/bench/startup ]]; then
    note "Skipped: the bundle has no startup program (benchmarks/startup was not built)."
    note ""
    return
  fi
  local sizes=(1 100 1000) rounds=3 backend=(--gpu) emulator=- flags
  local flag_sets=("" --validate=slice:2 --isolation=fenced)
  # The dry run checks that the step works, in seconds: the defaults alone.
  [[ $small -eq 1 ]] && sizes=(1 10) rounds=1 flag_sets=("")
  if [[ $emulate -eq 1 ]]; then
    backend=(--server-arg "--emulator-library=$bundle_dir/lib/libtally_emu.so")
    emulator=$bundle_dir/lib/libtally_emu.so
  fi
  for flags in "${flag_sets[@]}"; do
    note "Server flags: ${flags:-(defaults)}; medians of $rounds rounds, milliseconds:"
    note ""
    if bounded 180 "$bundle_dir/bench/run_startup.sh" "${backend[@]}" \
        ${flags:+--server-arg "$flags"} --floor-libraries "$bundle_dir/bench/cudart" \
        --ctl "$bin/tally-ctl" "$bin/tally-server" "$bin/tally-run" "$bundle_dir/bench/startup" \
        "$emulator" "$rounds" "${sizes[@]}" > "$work/startup.out" 2> "$out/startup.log"; then
      cat "$work/startup.out" >> "$summary"
      startup_links "$work/startup.out"
    else
      note "**FAIL** (exit $?): $(reason "$out/startup.log" 5)"
      failures=$((failures + 1))
    fi
    note ""
  done
}

run_bench() {
  note "## Priority benchmark (benchmarks/priority/priority_bench.py)"
  note ""
  local serve=(--serve "--kernels 300 --blocks 8 --work 20000 --per-request 3 --max-gap-ms 5")
  local fenced
  if [[ $1 -eq 1 ]]; then
    for fenced in "" "--isolation fenced"; do
      bench_case small "$fenced" --warm-kernels 2 --policies fifo,priority --warmup 0.2 \
        --train "--kernels 3 --blocks 128 --work 100" \
        --serve "--kernels 4 --blocks 4 --work 50 --per-request 1 --max-gap-ms 5"
    done
    return
  fi
  # On an H100, requests of three ~50 us kernels every ~2.5 ms, beside a trainer that keeps
  # the device busy for 5 s (an LCG step is a dependent multiply-add of ~0.9 ns). Its blocks:
  # ~50 us, as a training step's kernels have, then ~180 us, longer than the 0.1 ms turnaround
  # threshold. The first case again with every kernel fenced: the fence's cost to both jobs.
  bench_case "blocks of ~50 us" "" --warm-kernels 48 --warmup 0.3 \
    --policies fifo,priority-no-transform,priority,priority+shape-alone \
    --train "--kernels 50 --blocks 65536 --work 55000 --duration-ms 5000" "${serve[@]}"
  bench_case "blocks of ~50 us" "--isolation fenced" --warm-kernels 48 --warmup 0.3 \
    --policies fifo,priority \
    --train "--kernels 50 --blocks 65536 --work 55000 --duration-ms 5000" "${serve[@]}"
  bench_case "blocks of ~180 us" "" --warm-kernels 48 --warmup 0.3 --policies fifo,priority \
    --train "--kernels 20 --blocks 65536 --work 200000 --duration-ms 5000" "${serve[@]}"
}

# bench_case LABEL SERVER_ARGS ARGS...: one run of the benchmark, its table in the summary;
# SERVER_ARGS (such as "--isolation fenced", or nothing) go to its servers.
bench_case() {
  local label=$1 server_args=$2 file
  shift 2
  [[ -n $server_args ]] && label="$label, $server_args"
  file=$out/priority-$(echo "$label" | tr -c 'a-z0-9\n' '-' | tr -s '-').json
  local args=("$@")
  if [[ $emulate -eq 1 ]]; then
    server_args+=" --emulator-library=$bundle_dir/lib/libtally_emu.so"
  else
    args+=(--gpu)
  fi
  [[ -n $server_args ]] && args+=("--server-args=$server_args")
  note "### Trainer with $label"
  note ""
  if bounded 200 python3 "$bundle_dir/bench/priority_bench.py" --server "$bin/tally-server" \
      --run "$bin/tally-run" --jobs "$bundle_dir/programs/priority_jobs" \
      --out "$file" "${args[@]}" > "$work/bench.out" 2>> "$out/bench.log"; then
    cat "$work/bench.out" >> "$summary"
  else
    note "**FAIL** (exit $?): $(reason "$out/bench.log" 5)"
    failures=$((failures + 1))
  fi
  note ""
}

# tally-bench's live mode (benchmarks/README.md): a private tally-server per policy, each job
# alone under fifo and both together under each policy; check_result.py checks the result is
# complete and consistent (no timing). Small: live_smoke.toml; on a GPU: gpu_pair.toml.
run_tally_bench() {
  note "## tally-bench live mode"
  note ""
  local scenario=$bundle_dir/bench/gpu_pair.toml result=$out/tally-bench mode=(--gpu)
  [[ $1 -eq 1 ]] && scenario=$bundle_dir/bench/live_smoke.toml
  [[ $emulate -eq 1 ]] && mode=()
  note "\`tally-bench run $(basename "$scenario") --mode live\`: a tally-server per policy;"
  note "every sample in tally-bench/result.json."
  note ""
  if bounded 210 "$bin/tally-bench" run "$scenario" --mode live "${mode[@]}" --no-plot \
      --server-bin "$bin/tally-server" --run-bin "$bin/tally-run" \
      --programs "$bundle_dir/programs" --out "$result" > "$work/tally-bench.out" \
      2> "$out/tally-bench.log" &&
    python3 "$bundle_dir/bench/check_result.py" "$result/result.json" \
      >> "$out/tally-bench.log" 2>&1; then
    sed -n '/^|/p' "$work/tally-bench.out" >> "$summary"
  else
    note "**FAIL** (exit $?): $(reason "$out/tally-bench.log" 5)"
    failures=$((failures + 1))
  fi
  note ""
}

run_torch() {
  note "## PyTorch through tally-run"
  note ""
  local probe
  if ! probe=$(bounded 60 python3 -c \
      'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>&1); then
    note "Skipped: \`python3 -c \"import torch\"\` does not work here ($(echo "$probe" |
      tail -1 | cut -c1-200))."
    return 0
  fi
  note "- $probe (the shim stands in for libcudart.so.13: a PyTorch built for another CUDA"
  note "  major version loads its own runtime and does not reach Tally)"
  start_server || return 0
  local mode settings
  for mode in kernels inference training resnet resnet-classic transformer rnn; do
    settings=()
    # resnet-classic: cuDNN's classic API instead of its graph API (PyTorch's switch).
    [[ $mode == resnet-classic ]] && settings=(TORCH_CUDNN_V8_API_DISABLED=1)
    if bounded 120 env "${settings[@]}" \
        "$bin/tally-run" --server "$socket" -- python3 "$bundle_dir/bench/gpu_check_torch.py" \
        "${mode%-classic}" > "$work/torch-$mode.out" 2>&1; then
      note "- $mode: pass: $(reason "$work/torch-$mode.out" 1)"
    else
      note "- $mode: **FAIL** (exit $?): $(reason "$work/torch-$mode.out" 4)"
      failures=$((failures + 1))
    fi
    cp "$work/torch-$mode.out" "$out/torch-$mode.out"
  done
  stop_server
  run_torch_vendor
}

# The same jobs as high-priority clients of a server that runs their cuBLAS GEMMs in NVIDIA's
# cuBLAS (--library-kernels by-priority, the wheel's libcublas.so.13): results checked the same
# way, and the calls that ran there counted.
run_torch_vendor() {
  local cublas_dir
  cublas_dir=$(bounded 60 python3 -c \
    'import os, nvidia.cublas as c; print(os.path.join(list(c.__path__)[0], "lib"))' 2>/dev/null)
  note ""
  if [[ ! -e $cublas_dir/libcublas.so.13 ]]; then
    note "Vendor cuBLAS: skipped (no libcublas.so.13 in the PyTorch installation's nvidia.cublas)."
    return 0
  fi
  note "Vendor cuBLAS ($cublas_dir), the jobs at --priority high:"
  local plain_flags=("${server_flags[@]}")
  server_flags+=(--vendor-libraries "$cublas_dir")
  start_server vendor-server.log || { server_flags=("${plain_flags[@]}"); return 0; }
  local mode
  for mode in inference training transformer; do
    if bounded 120 "$bin/tally-run" --priority high --server "$socket" -- \
        python3 "$bundle_dir/bench/gpu_check_torch.py" "$mode" > "$work/vendor-$mode.out" 2>&1; then
      note "- $mode: pass: $(reason "$work/vendor-$mode.out" 1)"
    else
      note "- $mode: **FAIL** (exit $?): $(reason "$work/vendor-$mode.out" 4)"
      failures=$((failures + 1))
    fi
    cp "$work/vendor-$mode.out" "$out/vendor-$mode.out"
  done
  if bounded 30 "$bin/tally-ctl" status --json --server "$socket" > "$work/vendor-status.json"; then
    note "- calls, served by Tally's kernels / run in NVIDIA's cuBLAS: $(python3 -c \
      'import json, sys; d = json.load(open(sys.argv[1]))["departed"]; print(d["library_calls"], "/", d["vendor_library_calls"])' \
      "$work/vendor-status.json")"
  fi
  stop_server
  server_flags=("${plain_flags[@]}")
}

case ${1:-} in
  bundle) shift; bundle "$@" ;;
  run) shift; run "$@" ;;
  --dry-run)
    shift
    build=build
    [[ ${1:-} == --build ]] && { build=$2; shift 2; }
    [[ $# -eq 1 ]] || { echo "usage: gpu-check.sh --dry-run [--build DIR] OUT_DIR" >&2; exit 2; }
    mkdir -p "$1"
    bundle --build "$build" --with-emulator "$1/bundle" || exit 1
    "$1/bundle/run.sh" --emulate --small "$1"
    ;;
  *) sed -n '2,14p' "$self" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
