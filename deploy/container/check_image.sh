#!/usr/bin/env bash
# What can be checked of the Dockerfile without building it (no container runtime here): every
# file it copies from the repository exists; the tree it copies from the build stage is the
# install prefix; and its runtime stage installs the Debian package of every shared library that
# the installed tree (staged by `cmake --install` under ROOT/PREFIX) links outside itself, but
# for those of debian:bookworm-slim itself and NVIDIA's driver, which the NVIDIA container
# runtime brings; and the shim with its libraries bundled loads them from the bundle, beside a
# libcuda.so.1 that is the shim.
# Usage: check_image.sh ROOT PREFIX (deploy_install runs it on its staged install)
set -uo pipefail
root=$1 prefix=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dockerfile=$here/Dockerfile
fail() { echo "FAIL: check_image: $*" >&2; exit 1; }

# Paths copied from the build context exist; from the build stage, only the install prefix.
image_prefix=/opt/tally
while read -r from source _; do
  if [[ $from == --from=build ]]; then
    [[ $source == "$image_prefix" ]] || fail "COPY --from=build $source: not the install prefix"
  elif [[ $from != . ]]; then
    [[ -e $repo/$from ]] || fail "COPY $from: not in the repository"
  fi
done < <(sed -n 's/^COPY //p' "$dockerfile")
grep -q -- "-DCMAKE_INSTALL_PREFIX=$image_prefix" "$dockerfile" ||
  fail "the build stage does not install into $image_prefix"

# The runtime stage's packages: the apt-get install after the last FROM.
runtime=$(sed -n '/^FROM /h; /^FROM /!H; ${x; p}' "$dockerfile" | tr '\\\n' '  ')
read -ra packages <<< "$(sed -n 's/.*--no-install-recommends \([^&]*\)&&.*/\1/p' <<< "$runtime")"
((${#packages[@]})) || fail "no apt-get install in the runtime stage"
base=(libc6 libgcc-s1 libstdc++6)  # in debian:bookworm-slim
driver='^(libcuda\.so|libnvidia-ml\.so)'

# The node's files (not the stand-ins, which jobs load beside their own CUDA runtime).
tree=$root$prefix
mapfile -t elves < <(find "$tree" -type f ! -path "*/stand-ins/*" -exec sh -c \
  'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
((${#elves[@]})) || fail "no binaries under $tree"
# What each file links directly (readelf's NEEDED), where ldd finds it: the packages of those
# bring the rest (apt installs their dependencies).
declare -A needed=()
for elf in "${elves[@]}"; do
  declare -A found=()
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] && found[$name]=$path
  done < <(LD_LIBRARY_PATH='' ldd "$elf" 2>/dev/null)
  for name in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [[ $name =~ $driver || $name == ld-linux-* ]] && continue  # the loader is glibc's
    path=${found[$name]:-not}
    [[ $path == not ]] && fail "${elf#"$root"} needs $name, which is not found"
    [[ $path == "$tree"/* ]] && continue
    needed[$path]+=" ${elf##*/}"
  done
  unset found
done
# One dpkg -S for all (each reads the whole database); /lib is /usr/lib on Debian 12.
candidates=()
for library in "${!needed[@]}"; do candidates+=("$library" "/usr$library"); done
declare -A owner_of=()
while read -r owner path; do
  owner_of[${path#/usr}]=${owner%%:*}
done < <(dpkg -S "${candidates[@]}" 2>/dev/null | tr -d ,)
for library in "${!needed[@]}"; do
  owner=${owner_of[${library#/usr}]:-}
  [[ -n $owner ]] || fail "$library (needed by${needed[$library]}) belongs to no Debian package"
  [[ " ${packages[*]} ${base[*]} " == *" $owner "* ]] ||
    fail "the runtime stage lacks $owner, for $library (needed by${needed[$library]})"
done
# The shim, bundled as the build stage bundles it, finds every library but the system's in the
# bundle (before the system's folders, where this machine has them too).
grep -q "^RUN deploy/container/bundle_shim_libraries $image_prefix/lib/tally$" "$dockerfile" ||
  fail "the build stage does not bundle the shim's libraries"
shim_dir=$(dirname "$(find "$tree" -name libtally_client.so -print -quit)")
bundled=$(mktemp -d /tmp/tally-shim-XXXXXX)
trap 'rm -rf "$bundled"' EXIT
cp -a "$shim_dir/libtally_client.so" "$bundled/"
"$here/bundle_shim_libraries" "$bundled" > /dev/null || fail "bundle_shim_libraries failed"
system='^(linux-vdso|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|/lib64/ld-linux-x86-64)'
system+='\.so'
for elf in "$bundled"/libtally_client.so "$bundled"/shim-libs/*; do
  while read -r name arrow path _; do
    [[ $name =~ $system || $name == statically ]] && continue  # "statically linked": no needs
    [[ $arrow == "=>" && $path == "$bundled/shim-libs/"* ]] ||
      fail "${elf##*/} loads $name from ${path:-nowhere}, not from the bundle"
  done < <(LD_LIBRARY_PATH='' ldd "$elf")
done
[[ $(realpath "$bundled/driver/libcuda.so.1") == "$(realpath "$bundled/libtally_client.so")" ]] ||
  fail "driver/libcuda.so.1 is not the shim"
echo "Dockerfile: copies exist; runtime packages cover ${#needed[@]} libraries of" \
  "${#elves[@]} files;" \
  "the bundled shim loads $(find "$bundled/shim-libs" -type f | wc -l) libraries from its bundle"
