#!/bin/bash
# Builds the Debian package from this tree (the binary alone: tests and benchmarks
# off), installs it, checks its files and that the socket unit is enabled, upgrades
# to a rebuilt package with a bumped version (an edited config survives), removes
# and purges it. Works as root on Debian 12 without systemd running (a CI container):
# the maintainer scripts then enable units without starting them.
# Uses ccache when installed. Leaves no package installed and nothing in the tree.
#   --vm   first, install the built package on a systemd node: scripts/vm.sh's VM runs
#          scripts/vm-package-test.sh (needs build/tests/integration/integration_tests)
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin" DEBIAN_FRONTEND=noninteractive
cd "$(dirname "${BASH_SOURCE[0]}")/.."
vm=0
case ${1:-} in
  --vm) vm=1 ;;
  "") ;;
  *) echo "usage: $0 [--vm]" >&2; exit 2 ;;
esac
[[ $EUID -eq 0 ]] || { echo "package-test.sh: run as root" >&2; exit 1; }
if dpkg-query -W -f='${Status}' dockershim 2>/dev/null | grep -q installed; then
  echo "package-test.sh: a dockershim package is installed already; not touching it" >&2
  exit 1
fi
for p in debhelper dpkg-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || { echo "package-test.sh: $p is missing (scripts/install-deps.sh)" >&2; exit 1; }
done

((!vm)) || [[ -x build/tests/integration/integration_tests ]] ||
  { echo "package-test.sh: --vm runs build/tests/integration/integration_tests in the VM: build it first" >&2; exit 1; }

start=$(date +%s)
step() { echo "==> [$(($(date +%s) - start))s] $*"; }
fail() { echo "package-test.sh: FAILED: $*" >&2; exit 1; }

# A fixed place: Debian's flags name the source directory (-ffile-prefix-map), so only a
# path that stays the same lets ccache reuse an earlier run's objects.
work=/var/tmp/dockershim-package
rm -rf "$work" && mkdir -p "$work"
installed=0
cleanup() {
  ((installed)) && dpkg --purge dockershim >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

version=$(dpkg-parsechangelog -l debian/changelog -S Version)
src="$work/dockershim-$version"
mkdir -p "$src"
step "copy the tree to $src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$src"
else
  tar --exclude=./build --exclude='./obj-*' --exclude=./.git -cf - . | tar -xf - -C "$src"
fi

cmake_args=""
ccache_dir=""
if command -v ccache >/dev/null; then
  cmake_args="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
  # debhelper runs the build with HOME set to a throw-away directory, where ccache
  # would keep its cache too: name the real one.
  ccache_dir=$(ccache -k cache_dir)
fi
build() {  # dpkg-buildpackage options
  (cd "$src" && CCACHE_DIR="$ccache_dir" CCACHE_BASEDIR="$src" DOCKERSHIM_CMAKE_ARGS="$cmake_args" \
     DEB_BUILD_OPTIONS="parallel=$(nproc)" dpkg-buildpackage -b -us -uc "$@") >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "dpkg-buildpackage $*"; }
}
arch=$(dpkg --print-architecture)

step "dpkg-buildpackage -b -us -uc ($version)"
build
deb="$work/dockershim_${version}_${arch}.deb"
[[ -f $deb ]] || fail "no $deb"
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/dockershim ./lib/systemd/system/dockershim.service ./lib/systemd/system/dockershim.socket \
         ./etc/dockershim/config.toml ./usr/share/doc/dockershim/docs/migrating-from-cri-dockerd.md \
         ./usr/share/doc/dockershim/README.md; do
  grep -Eq " $f(\.gz)?\$" <<<"$contents" || fail "$f is not in the package"  # dh_compress gzips docs
done
# gRPC, protobuf, abseil and OpenSSL are linked statically (cmake/static_deps.cmake):
# what is left to depend on is the C library, which ${shlibs:Depends} must have named.
dpkg-deb -f "$deb" Depends | grep -q libc6 || fail "no shared-library dependencies"
dpkg-deb -e "$deb" "$work/control"
grep -qx /etc/dockershim/config.toml "$work/control/conffiles" || fail "config.toml is not a conffile"

if ((vm)); then
  step "on a systemd node (scripts/vm.sh): scripts/vm-package-test.sh"
  scripts/vm.sh run --mount "$work:$work" -- scripts/vm-package-test.sh "$deb" || fail "the package on the systemd node"
fi

step "install $version"
installed=1
dpkg -i "$deb" >/dev/null || fail "dpkg -i"
[[ $(/usr/bin/dockershim --version) == "dockershim "* ]] || fail "dockershim --version"
[[ -L /etc/systemd/system/sockets.target.wants/dockershim.socket ]] || fail "dockershim.socket is not enabled"
[[ -L /etc/systemd/system/multi-user.target.wants/dockershim.service ]] || fail "dockershim.service is not enabled"
# The shipped config must be one the binary takes.
/usr/bin/dockershim --config /etc/dockershim/config.toml --print-config >/dev/null || fail "the shipped config is refused"
echo 'log-level = "debug"   # edited by the operator' >>/etc/dockershim/config.toml

step "rebuild with a bumped version and upgrade"
newer="$version+pkgtest1"
{
  printf 'dockershim (%s) bookworm; urgency=medium\n\n  * Upgrade test build.\n\n -- package-test <root@localhost>  %s\n\n' \
    "$newer" "$(date -R)"
  cat "$src/debian/changelog"
} >"$work/changelog" && mv "$work/changelog" "$src/debian/changelog"
build -nc  # the build from above is reused: only the packaging runs again
newdeb="$work/dockershim_${newer}_${arch}.deb"
dpkg -i "$newdeb" >/dev/null || fail "upgrade with dpkg -i"
[[ $(dpkg-query -W -f='${Version}' dockershim) == "$newer" ]] || fail "version after the upgrade"
grep -q 'edited by the operator' /etc/dockershim/config.toml || fail "the upgrade lost the edited config"
/usr/bin/dockershim --config /etc/dockershim/config.toml --print-config | grep -q 'log-level="debug"' \
  || fail "the edited config is not in effect"
[[ -L /etc/systemd/system/sockets.target.wants/dockershim.socket ]] || fail "the socket is no longer enabled"

step "remove, then purge"
dpkg -r dockershim >/dev/null || fail "dpkg -r"
[[ ! -e /usr/bin/dockershim && ! -e /lib/systemd/system/dockershim.socket ]] || fail "files left after remove"
[[ -f /etc/dockershim/config.toml ]] || fail "remove must keep the conffile"
dpkg -P dockershim >/dev/null || fail "dpkg -P"
installed=0
[[ ! -e /etc/dockershim/config.toml ]] || fail "purge left the config"
[[ ! -e /etc/systemd/system/sockets.target.wants/dockershim.socket ]] || fail "purge left the socket enabled"
step "package test passed"
