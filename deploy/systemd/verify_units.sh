#!/usr/bin/env bash
# Verifies systemd units with systemd-analyze as the user manager (or, with --system, the system
# manager) would load them, failing on any warning as well as on errors.
# Usage: verify_units.sh [--system] UNIT...
set -uo pipefail
manager=--user
if [[ ${1:-} == --system ]]; then
  manager=--system
  shift
fi
runtime=$(mktemp -d)
trap 'rm -rf "$runtime"' EXIT
# A user manager's runtime directory, which systemd-analyze --user needs outside a session.
out=$(XDG_RUNTIME_DIR=$runtime systemd-analyze verify "$manager" "$@" 2>&1)
status=$?
if [[ $status -ne 0 || -n $out ]]; then
  echo "systemd-analyze verify (exit $status):"
  echo "$out"
  exit 1
fi
echo "verified: $*"
