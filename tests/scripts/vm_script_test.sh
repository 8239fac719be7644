#!/bin/bash
# Tests of scripts/vm.sh that need no VM: which Debian mirror it takes from the host's apt
# sources, and which accelerator it uses (the KVM probe, VM_ACCEL, the fall-back to TCG
# when a KVM guest prints nothing), with tests/scripts/fake_qemu.sh standing in for QEMU.
#   tests/scripts/vm_script_test.sh CASE     (ctest runs each case; as root, as vm.sh wants)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VM=$ROOT/scripts/vm.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# A copy of its own, so that looking for a QEMU left running sees only this case's.
cp "$ROOT/tests/scripts/fake_qemu.sh" "$T/qemu-system-x86_64"
export VM_DIR=$T/vm VM_QEMU=$T/qemu-system-x86_64 FAKE_QEMU_LOG=$T/qemu.log
unset VM_ACCEL VM_MIRROR VM_IMAGE

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_eq() { [[ $1 == "$2" ]] || fail "$3: got '$1', want '$2'"; }

# An image directory with what run() boots (the fake never reads them).
fake_image() {
  mkdir -p "$T/image"
  touch "$T/image/rootfs.img" "$T/image/vmlinuz" "$T/image/initrd.img"
  export VM_IMAGE=$T/image
}

case ${1:?case} in
  mirror-from-one-line-sources)
    mkdir -p "$T/apt/sources.list.d"
    cat >"$T/apt/sources.list" <<'X'
# deb http://commented.example/debian bookworm main
deb http://security.example/debian-security bookworm-security main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.example/debian/ bookworm contrib main
deb http://second.example/debian bookworm main
X
    echo 'deb https://deb.nodesource.com/node_20.x nodistro main' >"$T/apt/sources.list.d/nodesource.list"
    expect_eq "$(VM_APT_DIR=$T/apt "$VM" mirror)" http://mirror.example/debian "the bookworm main entry"
    ;;
  mirror-from-deb822-sources)
    mkdir -p "$T/apt/sources.list.d"
    cat >"$T/apt/sources.list.d/debian.sources" <<'X'
Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main

Types: deb-src deb
URIs: http://deb822.example/debian http://other.example/debian
Suites: bookworm bookworm-updates
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
X
    expect_eq "$(VM_APT_DIR=$T/apt "$VM" mirror)" http://deb822.example/debian "the enabled bookworm stanza"
    ;;
  mirror-default-and-override)
    mkdir -p "$T/apt"
    echo 'deb http://mirror.example/ubuntu jammy main' >"$T/apt/sources.list"
    expect_eq "$(VM_APT_DIR=$T/apt "$VM" mirror)" http://deb.debian.org/debian "no Debian source on the host"
    expect_eq "$(VM_APT_DIR=$T/apt VM_MIRROR=http://given.example/debian "$VM" mirror)" http://given.example/debian "VM_MIRROR"
    ;;
  accel-probe-finds-kvm-that-works)
    expect_eq "$(FAKE_QEMU_KVM=ok "$VM" accel)" kvm "KVM that runs a guest"
    ;;
  accel-probe-rejects-kvm-that-stalls)
    start=$SECONDS
    expect_eq "$(FAKE_QEMU_KVM=stall VM_KVM_PROBE_TIMEOUT=2 "$VM" accel 2>"$T/err")" tcg "KVM that never runs the guest"
    ((SECONDS - start < 10)) || fail "the probe took $((SECONDS - start)) s, bound 2 s"
    grep -q "KVM cannot run a guest here" "$T/err" || fail "no reason given: $(cat "$T/err")"
    pgrep -f "$VM_QEMU" >/dev/null && fail "the probe left QEMU running"
    ;;
  accel-probe-without-kvm)
    expect_eq "$(FAKE_QEMU_KVM=absent "$VM" accel 2>"$T/err")" tcg "no KVM"
    grep -q "Could not access KVM" "$T/err" || fail "QEMU's reason not shown: $(cat "$T/err")"
    ;;
  accel-forced)
    expect_eq "$(FAKE_QEMU_KVM=stall VM_ACCEL=kvm "$VM" accel)" kvm "VM_ACCEL=kvm"
    expect_eq "$(FAKE_QEMU_KVM=ok VM_ACCEL=tcg "$VM" accel)" tcg "VM_ACCEL=tcg"
    [[ ! -s $FAKE_QEMU_LOG ]] || fail "a forced accelerator was probed: $(cat "$FAKE_QEMU_LOG")"
    if VM_ACCEL=fast "$VM" accel 2>"$T/err"; then fail "VM_ACCEL=fast accepted"; fi
    grep -q "kvm, tcg or auto" "$T/err" || fail "no usage for VM_ACCEL=fast: $(cat "$T/err")"
    ;;
  run-passes-the-exit-code-under-kvm)
    fake_image
    rc=0
    FAKE_QEMU_KVM=ok "$VM" run -- bash -c 'echo from-the-guest; exit 7' >"$T/out" 2>&1 || rc=$?
    expect_eq "$rc" 7 "the command's exit code"
    grep -q from-the-guest "$T/out" || fail "the command's output is not shown: $(cat "$T/out")"
    expect_eq "$(grep boot "$FAKE_QEMU_LOG")" "boot kvm" "the boots"
    ;;
  run-boots-again-under-tcg-when-the-kvm-console-stays-empty)
    fake_image
    rc=0
    FAKE_QEMU_KVM=stall-console VM_KVM_CONSOLE_TIMEOUT=2 "$VM" run -- echo from-the-guest >"$T/out" 2>&1 || rc=$?
    expect_eq "$rc" 0 "the run's exit code ($(cat "$T/out"))"
    grep -q "booting again under TCG" "$T/out" || fail "the fall-back is not said: $(cat "$T/out")"
    grep -q from-the-guest "$T/out" || fail "the command did not run: $(cat "$T/out")"
    expect_eq "$(grep boot "$FAKE_QEMU_LOG" | tr '\n' ' ')" "boot kvm boot tcg " "the boots"
    pgrep -f "$VM_QEMU" >/dev/null && fail "QEMU left running"
    ;;
  run-with-kvm-forced-does-not-fall-back)
    fake_image
    rc=0
    FAKE_QEMU_KVM=stall VM_ACCEL=kvm VM_KVM_CONSOLE_TIMEOUT=1 VM_BOOT_TIMEOUT=3 "$VM" run -- true >"$T/out" 2>&1 || rc=$?
    expect_eq "$rc" 124 "the boot timeout's exit code ($(cat "$T/out"))"
    expect_eq "$(grep boot "$FAKE_QEMU_LOG")" "boot kvm" "the boots"
    pgrep -f "$VM_QEMU" >/dev/null && fail "QEMU left running"
    ;;
  *) fail "unknown case $1" ;;
esac
echo "PASS: $1"
