#!/bin/bash
# A stand-in for qemu-system-x86_64 in tests of scripts/vm.sh. FAKE_QEMU_KVM says what
# KVM does: ok (runs guests), stall (a guest never runs: /dev/kvm of a nested host that
# cannot run one), stall-console (the firmware runs, the kernel never prints), absent
# (no KVM: QEMU refuses at once). A "guest" under TCG, or KVM that works, prints the
# firmware banner (probe) or the kernel's first console line and runs vm.sh's command on
# this host the way the guest's vm-run would, then powers off. Each start is appended to
# FAKE_QEMU_LOG as "<probe|boot> <accel>".
set -u
accel="" serial="" debugcon="" ctl="" kernel=""
while (($#)); do
  case $1 in
    -accel) accel=$2; shift ;;
    -serial) serial=${2#file:}; shift ;;
    -kernel) kernel=$2; shift ;;
    -chardev) [[ $2 == *path=* ]] && debugcon=${2##*path=}; shift ;;
    -virtfs) [[ $2 == *mount_tag=vmctl* ]] && { ctl=${2#*path=}; ctl=${ctl%%,*}; }; shift ;;
  esac
  shift
done
kind=boot
[[ -z $kernel ]] && kind=probe
echo "$kind $accel" >>"${FAKE_QEMU_LOG:-/dev/null}"

if [[ $accel == kvm ]]; then
  case ${FAKE_QEMU_KVM:-ok} in
    absent) echo "Could not access KVM kernel module: No such file or directory" >&2; exit 1 ;;
    stall) exec sleep 1000 ;;
    stall-console) [[ $kind == boot ]] && exec sleep 1000 ;;
  esac
fi
if [[ $kind == probe ]]; then
  echo "SeaBIOS (version fake)" >"$debugcon"
  exec sleep 1000
fi
echo "Linux version fake ($accel)" >"$serial"
echo "vm-run: guest up after 0.1 s" >>"$ctl/output"
(cd "$(cat "$ctl/cwd")" && exec bash "$ctl/command" </dev/null) >>"$ctl/output" 2>&1
echo $? >"$ctl/exit-code"
