#!/bin/bash
# The "run it" command: installs dependencies, prepares local Docker (starting dockerd if
# none answers), the local test registries and images (including the pause image), builds
# the daemon and runs it in the foreground on unix:///var/run/dockershim.sock.
# Extra arguments go to dockershim, e.g.: sudo ./scripts/run.sh --log-level debug
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[[ $EUID -eq 0 ]] || { echo "run.sh: run as root (sudo $0)" >&2; exit 1; }
BUILD=build

scripts/install-deps.sh
# dockerd, registries on 127.0.0.1:5000/5001 (for the crictl examples in README.md) and
# the dockershim-test/* images, among them dockershim-test/pause:latest; only the local
# Docker (the newer test engines are for the test suite)
DOCKERSHIM_TEST_ENGINES=20 scripts/test-env.sh
if [[ -f $BUILD/CMakeCache.txt ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$BUILD/CMakeCache.txt"; then
  rm -rf "$BUILD"
fi
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$BUILD" -j"$(nproc)" --target dockershim

# A pod network for --network-plugin=cni (the default), unless the node already has one.
if ! ls /etc/cni/net.d/*.conf /etc/cni/net.d/*.conflist /etc/cni/net.d/*.json >/dev/null 2>&1; then
  install -D -m 0644 examples/cni/10-dockershim-bridge.conflist /etc/cni/net.d/10-dockershim-bridge.conflist
  echo "run.sh: installed /etc/cni/net.d/10-dockershim-bridge.conflist (bridge cni0, 10.88.0.0/16)"
fi

echo "run.sh: starting dockershim; try: crictl --config examples/crictl.yaml version"
exec "./$BUILD/shim/dockershim" \
  --container-runtime-endpoint unix:///var/run/dockershim.sock \
  --pod-infra-container-image dockershim-test/pause:latest \
  "$@"
