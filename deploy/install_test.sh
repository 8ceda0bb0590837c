#!/usr/bin/env bash
# Installs the build into a staging folder (DESTDIR) and checks what an operator gets: the files
# where Debian expects them, units that name the installed binaries and that systemd-analyze
# passes without a warning, a sysusers entry that makes the tally user, man pages that render
# without a warning, a container recipe whose runtime stage has the libraries the tree links.
# (tests/e2e/scenarios/installed.sh runs the installed binaries.)
# Usage: install_test.sh BUILD_DIR BINDIR TALLY_LIBDIR MANDIR SYSCONFDIR PREFIX STAND_INS
# (the full install paths CMake chose; STAND_INS: 1 when the library stand-ins are built)
set -uo pipefail
build=$1 bindir=$2 libdir=$3 mandir=$4 sysconfdir=$5 prefix=$6 stand_ins=$7
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
stage=$(mktemp -d /tmp/tally-install-XXXXXX)
trap 'rm -rf "$stage"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

DESTDIR=$stage/root cmake --install "$build" > "$stage/install.log" 2>&1 ||
  fail "cmake --install: $(cat "$stage/install.log")"
root=$stage/root

expected=("$bindir"/{tally-server,tally-run,tally-ctl,tally-exporter}
          "$libdir"/{libtally_client.so,libtally_emu.so}
          "$prefix"/lib/systemd/{system,user}/{tally-server@.service,tally-exporter.service,tally.target}
          "$prefix/lib/sysusers.d/tally.conf" "$sysconfdir/tally/server.env"
          "$mandir"/man1/{tally-server,tally-run,tally-ctl,tally-exporter}.1)
((stand_ins)) &&
  expected+=("$libdir"/stand-ins/{libcublas.so.13,libcublasLt.so.13,libcudnn.so.9})
for file in "${expected[@]}"; do
  [[ -f $root$file ]] || fail "not installed: $file (installed: $(cd "$root" && find . -type f))"
done
for command in tally-server tally-run tally-ctl tally-exporter; do
  [[ -x $root$bindir/$command ]] || fail "$bindir/$command is not executable"
done

# The units name the installed binaries and, the system's, the service's settings.
system_units=$root$prefix/lib/systemd/system
grep -qx "ExecStart=$bindir/tally-server --device=%i --run-dir=%t/tally --access=group:tally --config=$sysconfdir/tally/server.env" \
  "$system_units/tally-server@.service" || fail "tally-server@.service: $(grep ExecStart "$system_units/tally-server@.service")"
grep -qx "User=tally" "$system_units/tally-server@.service" || fail "the system server is not run as tally"
grep -q "^ExecStart=$bindir/tally-exporter " "$system_units/tally-exporter.service" ||
  fail "tally-exporter.service: $(grep ExecStart "$system_units/tally-exporter.service")"

# systemd-analyze checks that the binaries exist: a copy of the units names them in the stage.
for manager in system user; do
  mkdir -p "$stage/verify/$manager"
  for unit in "$root$prefix/lib/systemd/$manager"/*; do
    sed "s#^ExecStart=$bindir/#ExecStart=$root$bindir/#" "$unit" > "$stage/verify/$manager/${unit##*/}"
  done
  units=("$stage/verify/$manager"/{tally-server@0.service,tally-exporter.service,tally.target})
  "$here/systemd/verify_units.sh" "--$manager" "${units[@]}" || fail "the $manager units"
done

# systemd-sysusers makes the tally user and group in an empty root.
mkdir -p "$stage/sysroot/etc"
systemd-sysusers --root="$stage/sysroot" "$root$prefix/lib/sysusers.d/tally.conf" \
  > "$stage/sysusers.log" 2>&1 || fail "systemd-sysusers: $(cat "$stage/sysusers.log")"
grep -q "^tally:x:[0-9]*:[0-9]*:" "$stage/sysroot/etc/passwd" || fail "no tally user"
grep -q "^tally:x:" "$stage/sysroot/etc/group" || fail "no tally group"

# The container recipe (deploy/container/Dockerfile) against the same tree.
"$here/container/check_image.sh" "$root" "$prefix" || fail "the container recipe"

for page in "$root$mandir"/man1/tally-*.1; do
  warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
  [[ -z $warnings ]] || fail "${page##*/}: $warnings"
  grep -qx "\.SH SYNOPSIS" "$page" || fail "${page##*/} has no synopsis (help2man found no usage)"
done
echo "installed and checked: ${#expected[@]} files"
