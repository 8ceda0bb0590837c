#!/usr/bin/env bash
# One entry point for developers and CI: installs what is missing, builds, and runs.
#   scripts/dev.sh setup   install missing Debian packages, check the CUDA toolkit
#   scripts/dev.sh build   setup + configure + build (ninja, build/)
#   scripts/dev.sh demo    build + run the main job
#   scripts/dev.sh test    build + run the whole test suite (ctest), then the PTX and fatbin
#                          fuzzers for a bounded time in a clang build (build-fuzz/); with
#                          ctest arguments (e.g. -L unit) only the matching tests of the main
#                          build run
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
# libraries, the fuzzer runtime; tally-bench's CLI, scenario, JSON and plotting libraries).
packages=(cmake ninja-build g++ pkgconf python3 clang llvm libclang-rt-14-dev
          libabsl-dev libfmt-dev catch2 libzstd-dev liblz4-dev libboost-dev
          libcli11-dev libtoml11-dev nlohmann-json3-dev python3-matplotlib)

setup() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
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

build() {
  setup
  # shellcheck disable=SC2046
  cmake -S "$root" -B "$build_dir" -G Ninja -DTALLY_CUDA_ROOT="$cuda_root" $(launcher_flags) \
    >/dev/null
  cmake --build "$build_dir" -j "$jobs"
}

demo() {
  build
  "$root/scripts/demo.sh" "$build_dir"
}

# The fuzz targets need clang's libFuzzer and instrumented libraries: a build of their own.
# Arguments: seconds per fuzzer, libFuzzer seed (0: random; the defaults are the tests'), then
# the fuzz targets to build and run.
fuzz() {
  local fuzz_dir="$build_dir-fuzz" seconds=$1 seed=$2
  shift 2
  setup
  CC=clang CXX=clang++ cmake -S "$root" -B "$fuzz_dir" -G Ninja -DTALLY_CUDA_ROOT="$cuda_root" \
    -DTALLY_FUZZ=ON -DTALLY_SANITIZE=address,undefined \
    -DTALLY_FUZZ_SECONDS="$seconds" -DTALLY_FUZZ_SEED="$seed" >/dev/null
  cmake --build "$fuzz_dir" -j "$jobs" --target "$@"
  ctest --test-dir "$fuzz_dir" --output-on-failure -j "$jobs" -L fuzz -R "^($(IFS='|'; echo "$*"))\$"
}

# The whole-session fuzzer (session_fuzz) builds the server and the emulated GPU instrumented,
# which the test run's time budget does not yet include: run it with `scripts/dev.sh fuzz`.
run_tests() {
  build
  ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" -LE fuzz "$@"
  if [ $# -eq 0 ]; then fuzz 30 1 ptx_parser_fuzz fatbin_fuzz; fi
}

case "${1:-}" in
  setup) setup ;;
  build) build ;;
  demo) demo ;;
  test) shift; run_tests "$@" ;;
  fuzz) fuzz "${2:-600}" 0 ptx_parser_fuzz fatbin_fuzz session_fuzz ;;
  *) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
