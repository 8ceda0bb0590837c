#!/usr/bin/env bash
# End-to-end checks of the tally-ptx command line on real nvcc-built binaries: listings,
# extraction, round trips through ptxas, exit codes and messages for bad input.
# Usage: tally_ptx_cli_test.sh TALLY_PTX FATBIN_TEST_DIR
set -u
tally_ptx=$1
binaries=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# expect NAME EXPECTED_STATUS PATTERN -- command...: runs the command, checks its exit status
# and that its combined output matches the extended regular expression PATTERN.
expect() {
  local name=$1 status=$2 pattern=$3
  shift 4
  local output actual
  output=$("$@" 2>&1)
  actual=$?
  if [ "$actual" -eq "$status" ] && grep -Eq -- "$pattern" <<<"$output"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAILED: %s (status %s, wanted %s; pattern %s)\n%s\n' "$name" "$actual" "$status" \
      "$pattern" "$output"
  fi
}

expect help 0 '^Usage: tally-ptx COMMAND' -- "$tally_ptx" --help
expect no-command 2 'missing command' -- "$tally_ptx"
expect unknown-command 2 "unknown command 'frobnicate'" -- "$tally_ptx" frobnicate x
expect unknown-option 2 'unknown option --bogus' -- "$tally_ptx" list --bogus x
expect extract-needs-output 2 'extract needs -o DIR' -- "$tally_ptx" extract "$binaries/default"
expect missing-file 1 'cannot open /nonexistent' -- "$tally_ptx" list /nonexistent

expect list-multi-arch 0 'entry 3: ptx +compute_80 +zstd' -- "$tally_ptx" list "$binaries/multi_arch"
expect list-signature 0 '\[3\] offset +24 +size +24 +align +8' -- \
  "$tally_ptx" list "$binaries/multi_arch"
expect list-demangled 0 '= Saxpy\(float\*, int, double, Record\)' -- \
  "$tally_ptx" list "$binaries/multi_arch"
expect list-shared-library 0 'ScaleInLibrary\(float\*, float, unsigned int\)' -- \
  "$tally_ptx" list "$binaries/libkernels.so"
expect list-lz4 0 'ptx +compute_[0-9]+ +lz4' -- "$tally_ptx" list "$binaries/lz4"
expect list-host-only 0 'no device code' -- "$tally_ptx" list /bin/sh

head -c 3000 "$binaries/default" >"$work/truncated"
expect list-truncated 1 'tally-ptx: .*truncated' -- "$tally_ptx" list "$work/truncated"

expect extract 0 'multi_arch\.fatbin1\.entry3\.compute_80\.ptx' -- \
  "$tally_ptx" extract "$binaries/multi_arch" -o "$work/out"
for ptx in "$work"/out/*.ptx; do
  expect "check $(basename "$ptx")" 0 'ok \(parsed, printed, read back identically, accepted by ptxas' \
    -- "$tally_ptx" check "$ptx"
done
expect print-roundtrip 0 '^\.version 9\.0' -- "$tally_ptx" print "$work/out/multi_arch.fatbin1.entry3.compute_80.ptx"

printf '.version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tmov.u32 %%r1 1;\n}\n' \
  >"$work/bad.ptx"
expect check-bad-ptx 1 'bad\.ptx:6:14: error: expected .;., found .1.' -- "$tally_ptx" check "$work/bad.ptx"
expect print-stdin 0 'ret;' -- bash -c "printf '.version 8.0\n.target sm_80\n.entry k() { ret; }\n' | '$tally_ptx' print -"

multi=$work/out/multi_arch.fatbin1.entry3.compute_80.ptx
expect transform-report 0 '_Z5SaxpyPfid6Record: sliced as _Z5SaxpyPfid6Record__tally_slice' -- \
  "$tally_ptx" transform "$multi" --slice
expect transform-ptb-only 0 'preemptible as _Z6AddOnePi__tally_ptb' -- "$tally_ptx" transform "$multi" --ptb
"$tally_ptx" transform "$multi" >"$work/transformed.ptx" 2>/dev/null
expect transform-output-assembles 0 'accepted by ptxas' -- "$tally_ptx" check "$work/transformed.ptx"
expect transform-bad-ptx 1 'bad\.ptx:6:14: error' -- "$tally_ptx" transform "$work/bad.ptx"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
