#!/usr/bin/env bash
# Verifies systemd units with systemd-analyze as the user manager would load them, failing on
# any warning as well as on errors. Usage: verify_units.sh UNIT...
set -uo pipefail
runtime=$(mktemp -d)
trap 'rm -rf "$runtime"' EXIT
# A user manager's runtime directory, which systemd-analyze --user needs outside a session.
out=$(XDG_RUNTIME_DIR=$runtime systemd-analyze verify --user "$@" 2>&1)
status=$?
if [[ $status -ne 0 || -n $out ]]; then
  echo "systemd-analyze verify (exit $status):"
  echo "$out"
  exit 1
fi
echo "verified: $*"
