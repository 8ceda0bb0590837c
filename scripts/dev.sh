#!/usr/bin/env bash
# One entry point for developers and CI: installs what is missing, builds, and runs.
#   scripts/dev.sh setup   install missing Debian packages, check the CUDA toolkit
#   scripts/dev.sh build   setup + configure + build (ninja, build/)
#   scripts/dev.sh demo    build + run the main job
#   scripts/dev.sh test    build + run the whole test suite (ctest), then the sanitizer stages
#                          below and the fuzzers (PTX, fatbin, whole server sessions) for a
#                          bounded time in the clang build (build-fuzz/); with ctest arguments
#                          (e.g. -L unit) only the matching tests of the main build run
#   scripts/dev.sh sanitize [asan|tsan]  the unit and end-to-end tests under AddressSanitizer
#                          and UBSan (asan, in build-fuzz/), the ipc, server and client unit
#                          tests under ThreadSanitizer (tsan, in build-tsan/); both by default
#   scripts/dev.sh fuzz [S]  every fuzzer (the whole-session one too), S seconds each (default
#                          600) with a new random seed each run: to search beyond `test`
# Environment: TALLY_BUILD_DIR (default build), TALLY_CUDA_ROOT (default /usr/local/cuda),
# TALLY_JOBS (default: number of cores).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${TALLY_BUILD_DIR:-$root/build}
cuda_root=${TALLY_CUDA_ROOT:-/usr/local/cuda}
jobs=${TALLY_JOBS:-$(nproc)}

# Debian packages the build and the tests need (compilers, python3 for generated tables,
# libraries, the fuzzer runtime; tally-bench's CLI, scenario, JSON and plotting libraries;
# promtool, which checks tally-ctl metrics; cpp-httplib for tally-exporter, curl to test it;
# systemd-analyze and systemd-sysusers, which check the units and the tally user; help2man, which
# makes the man pages from --help, and groff, which checks that they render; gRPC and protobuf for
# tally-device-plugin and the exporter's pod labels, and Python's gRPC for the tests' kubelet;
# patchelf, which the container recipe's shim bundle needs and deploy_install checks).
packages=(cmake ninja-build g++ pkgconf python3 clang llvm libclang-rt-14-dev
          libabsl-dev libfmt-dev catch2 libzstd-dev liblz4-dev libboost-dev
          libcli11-dev libtoml11-dev nlohmann-json3-dev python3-matplotlib prometheus
          libcpp-httplib-dev curl systemd help2man groff-base
          libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc python3-grpcio
          patchelf)

setup() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Node.js with npm for the Kubernetes manifests' validator (tests/kubernetes): Debian's, unless
  # one is installed already (NodeSource's nodejs brings npm and conflicts with Debian's npm).
  command -v npm >/dev/null || missing+=(nodejs npm)
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
  if [ ! -x "$cuda_root/bin/nvcc" ] || [ ! -x "$cuda_root/bin/ptxas" ]; then
    echo "setup: no CUDA toolkit at $cuda_root (nvcc and ptxas are needed to build the test" >&2
    echo "       programs and to validate PTX). Install the CUDA 13 toolkit there or set" >&2
    echo "       TALLY_CUDA_ROOT to where it is." >&2
    exit 1
  fi
}

# ccache, where installed, makes rebuilds in other checkouts (worktrees) cheap; it is optional.
launcher_flags() {
  if command -v ccache >/dev/null; then
    echo "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
  fi
}

configure_main() {
  setup
  # shellcheck disable=SC2046
  cmake -S "$root" -B "$build_dir" -G Ninja -DTALLY_CUDA_ROOT="$cuda_root" $(launcher_flags) \
    >/dev/null
}

build() {
  configure_main
  cmake --build "$build_dir" -j "$jobs"
}

# What the sanitizer builds take from the main build instead of making it again: the nvcc-built
# end-to-end programs and conformance modules (device code is not instrumented, and nvcc is a
# third of a build's time) and the Catch2 main (not instrumented either):
# TALLY_E2E_PROGRAMS_FROM, TALLY_CONFORMANCE_PTX_FROM, TALLY_CATCH_MAIN_FROM.
main_targets() {
  configure_main
  cmake --build "$build_dir" -j "$jobs" --target "$@"
}
catch_main_from="$build_dir/tests/libtally_catch_main.a"

demo() {
  build
  "$root/scripts/demo.sh" "$build_dir"
}

# A UBSan finding fails the test that made it (by default it is reported and the program
# carries on), with the stack that led there. LeakSanitizer's tracking of dynamically loaded
# libraries' thread-local storage misreads this glibc's (google/sanitizers#1322: the tracer
# crashes, "LeakSanitizer has encountered a fatal error"); without it those blocks are found
# through the heap like any other. Options given in the environment come after (and win).
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}
export ASAN_OPTIONS=intercept_tls_get_addr=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}

# The fuzz targets need clang's libFuzzer and instrumented libraries: a build of their own,
# build-fuzz/, where every target of ours carries AddressSanitizer and UBSan (the asan stage
# runs the tests there too). Arguments: seconds per fuzzer, libFuzzer seed (0: random; the
# defaults are the tests').
configure_fuzz() {
  setup
  CC=clang CXX=clang++ cmake -S "$root" -B "$build_dir-fuzz" -G Ninja \
    -DTALLY_CUDA_ROOT="$cuda_root" -DTALLY_FUZZ=ON -DTALLY_SANITIZE=address,undefined -DTALLY_KUBERNETES=OFF \
    -DTALLY_FUZZ_SECONDS="$1" -DTALLY_FUZZ_SEED="$2" \
    -DTALLY_E2E_PROGRAMS_FROM="$build_dir/tests/e2e" -DTALLY_CATCH_MAIN_FROM="$catch_main_from" \
    -DTALLY_CONFORMANCE_PTX_FROM="$build_dir/emulator/tests/conformance/ptx" >/dev/null
}

# Arguments: seconds per fuzzer, libFuzzer seed, then the fuzz targets to build and run.
fuzz() {
  local fuzz_dir="$build_dir-fuzz"
  configure_fuzz "$1" "$2"
  shift 2
  cmake --build "$fuzz_dir" -j "$jobs" --target "$@"
  ctest --test-dir "$fuzz_dir" --output-on-failure -j "$jobs" -L fuzz -R "^($(IFS='|'; echo "$*"))\$"
}

# build_and_test DIR "EXTRA-TARGETS" CTEST-SELECTION...: builds only what the tests that ctest
# selects need, then runs them. Each test made by tally_unit_test is named after its executable;
# EXTRA-TARGETS are what the others run.
build_and_test() {
  local dir=$1 extra=$2 name targets=()
  shift 2
  for name in $(ctest --test-dir "$dir" -N "$@" | awk '/Test +#[0-9]+:/ {print $3}'); do
    if ninja -C "$dir" -t query "$name" >/dev/null 2>&1; then targets+=("$name"); fi
  done
  # shellcheck disable=SC2086
  cmake --build "$dir" -j "$jobs" --target "${targets[@]}" $extra
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@"
}

# The unit and end-to-end tests under AddressSanitizer (LeakSanitizer included) and UBSan, in
# build-fuzz/. The nvcc-built end-to-end programs are not instrumented; the shim inside them is
# (tests/e2e/CMakeLists.txt preloads the sanitizer's runtime for it). Left out: e2e_gpu_check_dry
# (it checks the bundle made for a GPU machine, which would carry the sanitizer's runtime), the
# benchmarks' tests (label bench: the harness's own, and its live smoke run), e2e_priority
# and e2e_priority_swapped: a minute each here, for scheduling outcomes over many kernel runs,
# where the code they run (preemption, resumption, the priority policy) is also that of
# server_dispatcher_test and e2e_validate_preempt, which run here; e2e_budget_slices, for the
# same reason (its slices sized to measured times; KernelRuns' slices are server_dispatcher_test's
# too); and the e2e_fenced_* runs
# of whole programs fenced (three and a half minutes here) and the e2e_fence_*_printer runs of
# printf, whose server code is that of the other e2e_fence_* tests and e2e_fence_strict_refuses,
# which run here.
asan_skipped="e2e_gpu_check_dry|e2e_priority|e2e_priority_swapped|e2e_budget_slices|e2e_fenced_.*|e2e_fence_.*_printer"
asan_selection=(-L "^(unit|e2e)\$" -LE "^bench\$" -E "^($asan_skipped)\$")
asan() {
  main_targets e2e_programs tally_conformance_ptx tally_catch_main
  configure_fuzz 30 1
  build_and_test "$build_dir-fuzz" "tally-ptx emu_deinit_probe e2e_programs" "${asan_selection[@]}"
}

# tests_of DIR CTEST-SELECTION...: the names of the tests ctest selects.
tests_of() {
  local dir=$1
  shift
  ctest --test-dir "$dir" -N "$@" | awk '/Test +#[0-9]+:/ {print $3}'
}

# all_targets_but DIR NAME...: what DIR's `all` builds (ninja's per-folder `all` targets
# expanded), less the targets named NAME (by file name).
all_targets_but() {
  local dir=$1 target dep
  shift
  local -A skip=()
  for target; do skip[$target]=1; done
  local queue=(all)
  while ((${#queue[@]})); do
    target=${queue[0]}
    queue=("${queue[@]:1}")
    for dep in $(ninja -C "$dir" -t query "$target" |
                 awk '/^  input:/ {f = 1; next} /^  [a-z-]+:/ {f = 0} f {print $1}'); do
      if [[ $dep == all || $dep == */all ]]; then
        queue+=("$dep")
      elif [[ -z ${skip[${dep##*/}]:-} ]]; then
        echo "$dep"
      fi
    done
  done
}

# The full run's main build leaves out the unit tests that the asan stage builds and runs again
# under AddressSanitizer and UBSan (a sixth of the main build's compile, otherwise spent twice):
# they run unoptimized only; the end-to-end tests still run optimized in the main build.
left_to_asan=()
build_for_full_run() {
  configure_main
  configure_fuzz 30 1
  mapfile -t left_to_asan < <(sort <(tests_of "$build_dir" -L '^unit$') \
                                   <(tests_of "$build_dir-fuzz" "${asan_selection[@]}") | uniq -d)
  mapfile -t targets < <(all_targets_but "$build_dir" "${left_to_asan[@]}")
  cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"
}

# The unit tests of the modules that run threads of their own (ipc, server, client) under
# ThreadSanitizer, in build-tsan/ (gcc: clang 14's shared ThreadSanitizer runtime crashes at
# start-up here; only those tests and what they load are built). A report fails the test (the
# program's exit status); scripts/tsan.supp says what is not reported, and why.
tsan() {
  main_targets tally_catch_main
  CC=gcc CXX=g++ cmake -S "$root" -B "$build_dir-tsan" -G Ninja \
    -DTALLY_CUDA_ROOT="$cuda_root" -DTALLY_SANITIZE=thread -DTALLY_KUBERNETES=OFF \
    -DTALLY_E2E_PROGRAMS_FROM="$build_dir/tests/e2e" -DTALLY_CATCH_MAIN_FROM="$catch_main_from" \
    >/dev/null
  TSAN_OPTIONS="suppressions=$root/scripts/tsan.supp second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
    build_and_test "$build_dir-tsan" "" -L "^(ipc|server|client)\$"
}

# stage NAME COMMAND...: one stage of the test run, and how long it took.
stage() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "dev.sh: the $name stage took $((SECONDS - start)) s"
}

run_tests() {
  if [ $# -gt 0 ]; then
    stage build build
    stage tests ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" -LE fuzz "$@"
  else
    stage build build_for_full_run
    stage tests ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" -LE fuzz \
      -E "^($(IFS='|'; echo "${left_to_asan[*]}"))\$"
    stage asan asan
    # After asan, which has built the instrumented server and emulated GPU session_fuzz drives.
    stage fuzz fuzz 30 1 ptx_parser_fuzz fatbin_fuzz session_fuzz
    stage tsan tsan
  fi
}

case "${1:-}" in
  setup) setup ;;
  build) build ;;
  demo) demo ;;
  test) shift; run_tests "$@" ;;
  sanitize)
    case "${2:-}" in
      asan) asan ;;
      tsan) tsan ;;
      "") asan; tsan ;;
      *) echo "sanitize: asan, tsan or nothing (both), not '$2'" >&2; exit 2 ;;
    esac ;;
  fuzz) fuzz "${2:-600}" 0 ptx_parser_fuzz fatbin_fuzz session_fuzz ;;
  *) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
