#!/usr/bin/env bash
# Installs the validator's npm packages, exactly as package-lock.json pins them (npm ci), into
# DIR (the build folder's tests/kubernetes), once per version of the lockfile; npm's own cache
# (~/.npm) spares the downloads of a fresh build folder.
# Usage: install_validator.sh DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$1
command -v npm > /dev/null ||
  { echo "no npm: install Node.js 18 or later with npm (Debian: nodejs npm)" >&2; exit 1; }
mkdir -p "$dir"
# installed.lock: the lockfile of the last install that succeeded.
if cmp -s "$here/package-lock.json" "$dir/installed.lock"; then
  echo "up to date: $dir/node_modules"
  exit 0
fi
cp "$here/package.json" "$here/package-lock.json" "$dir/"
rm -f "$dir/installed.lock"
(cd "$dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
cp "$here/package-lock.json" "$dir/installed.lock"
