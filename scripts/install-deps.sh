#!/bin/bash
# Installs everything dockershim needs to build and test, from Debian packages only.
# Run as root on Debian 12. Idempotent.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
PKGS=(
  # build
  build-essential cmake ninja-build pkg-config
  gcc libc6-dev  # the static pause binary (tools/pause/pause.c, scripts/test-images.sh)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  libboost1.81-dev nlohmann-json3-dev zlib1g-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libssl-dev  # TLS for the streaming server (Boost.Asio SSL)
  clang libclang-rt-14-dev  # libFuzzer targets with ASan/UBSan (scripts/fuzz.sh)
  # runtime and integration tests: a real Docker Engine, CNI plugins, a registry
  docker.io containerd runc runsc busybox-static docker-registry apache2-utils
  containernetworking-plugins iproute2 iptables curl openssl ca-certificates procps
  # dockerd needs apparmor_parser on hosts with AppArmor on (docker.io only recommends it);
  # tar/flock for the offline image build
  apparmor tar util-linux
  # the Debian package (scripts/package-test.sh)
  debhelper dpkg-dev
  # the cgroup v2 node with systemd in a VM (scripts/vm.sh)
  qemu-system-x86 mmdebstrap e2fsprogs
)
missing=()
for p in "${PKGS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
