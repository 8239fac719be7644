#!/bin/bash
# A cgroup v2 node with systemd, as Kubernetes 1.35+ nodes are, in a QEMU VM: Debian 12
# with systemd as PID 1, the unified cgroup hierarchy, Docker 20.10 on the systemd cgroup
# driver, containerd, runc, gVisor (runsc), the CNI plugins, iproute2, curl, procps.
#
#   scripts/vm.sh build                                 build the image (cached by its inputs)
#   scripts/vm.sh run [--mount HOSTDIR:GUESTDIR]... -- COMMAND...
#                                                       boot it, run COMMAND as root, power off
#   scripts/vm.sh accel | mirror                        print the accelerator / Debian mirror it would use
#
# `run` shows COMMAND's output and exits with its exit code. The work tree is visible in
# the guest at its host path (and so is the current directory, where COMMAND starts, if it
# lies in the work tree or a --mount), shared over 9p; every boot starts from the pristine
# image (writes go to a throw-away overlay). DOCKERSHIM_* and CI variables pass through.
# Nothing is left running: QEMU is killed when the command ends, on a timeout and on
# Ctrl-C. Settings: VM_DIR (/var/tmp/dockershim-vm: images, per-run state), VM_MEMORY
# (4G), VM_CPUS (all), VM_TIMEOUT (3600 s for the whole run, boot included), VM_BOOT_TIMEOUT
# (300 s until the guest runs COMMAND), VM_MIRROR (the Debian mirror the image is built
# from; by default the one the host's apt uses for Debian, `scripts/vm.sh mirror` shows it),
# VM_ACCEL (kvm, tcg or auto, the default: see below), VM_QEMU (qemu-system-x86_64),
# VM_IMAGE (a directory with rootfs.img, vmlinuz, initrd.img to boot instead of the build).
#
# Acceleration: /dev/kvm can exist on a host where KVM cannot run a guest (nested
# virtualization that stalls). With VM_ACCEL=auto, KVM is used only when a firmware-only
# guest prints SeaBIOS's banner on its debug port within VM_KVM_PROBE_TIMEOUT (10 s), and
# a KVM guest whose console stays empty for VM_KVM_CONSOLE_TIMEOUT (60 s; the kernel
# prints within a second under KVM) is booted again under TCG. `scripts/vm.sh accel`
# shows the choice. VM_ACCEL=kvm or tcg takes that one, without probe or fallback.
#
# Runs as root on Debian 12; needs qemu-system-x86, mmdebstrap, e2fsprogs and a Debian
# archive (for the first build).
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VM_DIR=${VM_DIR:-/var/tmp/dockershim-vm}
VM_MEMORY=${VM_MEMORY:-4G}
VM_CPUS=${VM_CPUS:-$(nproc)}
VM_TIMEOUT=${VM_TIMEOUT:-3600}
VM_BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-300}
VM_ACCEL=${VM_ACCEL:-auto}
VM_QEMU=${VM_QEMU:-qemu-system-x86_64}
VM_KVM_PROBE_TIMEOUT=${VM_KVM_PROBE_TIMEOUT:-10}
VM_KVM_CONSOLE_TIMEOUT=${VM_KVM_CONSOLE_TIMEOUT:-60}
VM_APT_DIR=${VM_APT_DIR:-/etc/apt}  # whose sources name the default mirror (tests point it elsewhere)
SUITE=bookworm
DEFAULT_MIRROR=http://deb.debian.org/debian
IMAGE_SIZE=12G

# What a node has, what the test environment needs in the guest (registries, htpasswd),
# and the shared libraries of the test binaries built on the host (Debian 12 as well).
PACKAGES=(
  systemd systemd-sysv udev dbus kmod linux-image-amd64 initramfs-tools
  docker.io containerd runc iptables iproute2 containernetworking-plugins
  curl ca-certificates procps util-linux tar busybox-static
  runsc docker-registry apache2-utils gcc libc6-dev cmake
  libgrpc++1.51 libprotobuf32 libssl3 zlib1g
)

log() { echo "vm: $*" >&2; }
die() { echo "vm: error: $*" >&2; exit 1; }

need() { # command package
  command -v "$1" >/dev/null || die "$1 not found: apt-get install $2 (as scripts/install-deps.sh does)"
}

# ---- the guest's side -----------------------------------------------------------------------
# Runs at boot (vm-run.service): mounts the shares the host listed, runs the command with
# its output on a shared file, records the exit code there, powers off at once.
guest_runner() {
  cat <<'EOF'
#!/bin/bash
set -u
ctl=/run/vm-ctl
mkdir -p $ctl
mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576,cache=none vmctl $ctl || { echo o >/proc/sysrq-trigger; exit 1; }
while read -r tag dir; do
  mkdir -p "$dir"
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576,cache=mmap "$tag" "$dir" ||
    echo "vm-run: cannot mount $tag at $dir" >>$ctl/output
done <$ctl/mounts
echo "vm-run: guest up after $(cut -d' ' -f1 /proc/uptime) s" >>$ctl/output
(
  set -a
  # shellcheck source=/dev/null
  . $ctl/env
  set +a
  cd "$(cat $ctl/cwd)" 2>/dev/null || cd /
  exec bash $ctl/command </dev/null
) >>$ctl/output 2>&1
echo $? >$ctl/exit-code.new && mv $ctl/exit-code.new $ctl/exit-code
sync
echo o >/proc/sysrq-trigger
EOF
}

guest_unit() {
  cat <<'EOF'
[Unit]
Description=Run the command the host gave (scripts/vm.sh)
After=multi-user.target docker.service containerd.service
Wants=docker.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/vm-run
StandardOutput=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
EOF
}

# Docker on the systemd cgroup driver (its default on cgroup v2 with systemd, said
# explicitly), with the runtime handlers the integration tests use (as scripts/test-env.sh
# gives the host's).
guest_daemon_json() {
  cat <<'EOF'
{
  "exec-opts": ["native.cgroupdriver=systemd"],
  "runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}, "runc-alt": {"path": "/usr/sbin/runc"}}
}
EOF
}

# mmdebstrap hook: everything the image holds beyond its packages.
customize() { # rootdir
  local r=$1
  echo dockershim-vm >"$r/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 dockershim-vm\n::1 localhost\n' >"$r/etc/hosts"
  printf '/dev/vda / ext4 rw,relatime 0 1\n' >"$r/etc/fstab"
  guest_runner >"$r/usr/local/sbin/vm-run"
  chmod 0755 "$r/usr/local/sbin/vm-run"
  guest_unit >"$r/etc/systemd/system/vm-run.service"
  ln -sf /etc/systemd/system/vm-run.service "$r/etc/systemd/system/multi-user.target.wants/vm-run.service"
  mkdir -p "$r/etc/docker"
  guest_daemon_json >"$r/etc/docker/daemon.json"
  # Debian's registry service would hold :5000, which the test registries use.
  rm -f "$r/etc/systemd/system/multi-user.target.wants/docker-registry.service"
  # No login prompt or network wait on a VM that has no network but loopback.
  ln -sf /dev/null "$r/etc/systemd/system/serial-getty@ttyS0.service"
  ln -sf /dev/null "$r/etc/systemd/system/getty@tty1.service"
  ln -sf /dev/null "$r/etc/systemd/system/systemd-networkd-wait-online.service"
  : >"$r/etc/machine-id"
}

# mmdebstrap hook before the kernel is installed: a small initramfs, with only what this
# VM's disk and root file system take (less to unpack under emulation), made once by the
# kernel's own postinst instead of a second update-initramfs.
customize_early() { # rootdir
  local r=$1
  mkdir -p "$r/etc/initramfs-tools/conf.d" "$r/usr/share/initramfs-tools/modules.d"
  printf 'MODULES=list\n' >"$r/etc/initramfs-tools/conf.d/vm"
  printf '%s\n' virtio_pci virtio_blk ext4 >"$r/usr/share/initramfs-tools/modules.d/vm"
}

# ---- the mirror ---------------------------------------------------------------------------------
# The first of the host's apt sources that serves Debian's $SUITE with main (one-line
# .list entries and deb822 .sources stanzas), so that a host behind its own mirror builds
# the image from it; Debian's own when none does.
host_mirror() {
  local f uri
  shopt -s nullglob
  for f in "$VM_APT_DIR/sources.list" "$VM_APT_DIR"/sources.list.d/*.list; do
    [[ -f $f ]] || continue
    uri=$(awk -v suite="$SUITE" '
      { sub(/#.*/, "") }
      $1 == "deb" {
        i = 2
        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        if ($(i + 1) != suite) next
        for (j = i + 2; j <= NF; j++) if ($j == "main") { print $i; exit }
      }' "$f")
    [[ -n $uri ]] && { echo "${uri%/}"; return; }
  done
  for f in "$VM_APT_DIR"/sources.list.d/*.sources; do
    uri=$(awk -v suite="$SUITE" '
      function check() {
        if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " suite " ") && (" " comps " ") ~ / main / && enabled != "no" && uris != "") {
          split(uris, u, " "); print u[1]; found = 1; exit
        }
        types = suites = comps = uris = enabled = ""
      }
      { sub(/#.*/, "") }
      /^[ \t]*$/ { check(); next }
      { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "") }
      key == "types" { types = $0 } key == "uris" { uris = $0 } key == "suites" { suites = $0 }
      key == "components" { comps = $0 } key == "enabled" { enabled = tolower($0) }
      END { if (!found) check() }' "$f")
    [[ -n $uri ]] && { echo "${uri%/}"; return; }
  done
  echo "$DEFAULT_MIRROR"
}
MIRROR=${VM_MIRROR:-$(host_mirror)}

# ---- the image --------------------------------------------------------------------------------
# Its inputs: the suite, the packages and what customize() puts in (so that an edit of
# the rest of this script does not rebuild it).
image_key() {
  { echo "$SUITE $MIRROR ${PACKAGES[*]}"; declare -f customize customize_early guest_runner guest_unit guest_daemon_json; } |
    sha256sum | cut -c1-16
}

build() {
  need mmdebstrap mmdebstrap
  need mke2fs e2fsprogs
  local key dir tmp start=$SECONDS
  key=$(image_key)
  dir=$VM_DIR/image-$key
  if [[ -f $dir/rootfs.img && -f $dir/vmlinuz && -f $dir/initrd.img ]]; then
    echo "$dir"
    return
  fi
  mkdir -p "$VM_DIR"
  exec 8>"$VM_DIR/.build-lock"
  flock 8
  if [[ -f $dir/rootfs.img ]]; then echo "$dir"; return; fi
  log "building the image $dir (Debian $SUITE, $MIRROR; several minutes, cached afterwards)"
  tmp=$(mktemp -d "$VM_DIR/build.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  local pkgs
  pkgs=$(IFS=,; echo "${PACKAGES[*]}")
  if ! mmdebstrap --variant=minbase --include="$pkgs" \
      --essential-hook="'$ROOT/scripts/vm.sh' customize-early \"\$1\"" \
      --customize-hook="'$ROOT/scripts/vm.sh' customize \"\$1\"" \
      --customize-hook="cp \"\$1\"/boot/vmlinuz-* '$tmp/vmlinuz'; cp \"\$1\"/boot/initrd.img-* '$tmp/initrd.img'" \
      "$SUITE" "$tmp/rootfs" "$MIRROR" >"$tmp/mmdebstrap.log" 2>&1; then
    tail -n 30 "$tmp/mmdebstrap.log" >&2
    die "mmdebstrap failed (is $MIRROR reachable? full log above)"
  fi
  # Its "Creating regular file" goes to stdout even with -q, and build's stdout is the
  # image's path.
  mke2fs -q -t ext4 -L root -d "$tmp/rootfs" "$tmp/rootfs.img" "$IMAGE_SIZE" >&2 ||
    die "mke2fs -d failed"
  rm -rf "$tmp/rootfs"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
  # Images of earlier inputs are 12G sparse files each: keep only this one.
  find "$VM_DIR" -maxdepth 1 -name 'image-*' ! -name "image-$key" -exec rm -rf {} +
  log "image ready in $((SECONDS - start)) s: $dir"
  echo "$dir"
}

# ---- running a command ---------------------------------------------------------------------
run() {
  local mounts=()
  while (($#)); do
    case $1 in
      --mount) mounts+=("${2:?--mount HOSTDIR:GUESTDIR}"); shift 2 ;;
      --mount=*) mounts+=("${1#--mount=}"); shift ;;
      --) shift; break ;;
      *) die "usage: $0 run [--mount HOSTDIR:GUESTDIR]... -- COMMAND..." ;;
    esac
  done
  (($#)) || die "usage: $0 run [--mount HOSTDIR:GUESTDIR]... -- COMMAND..."
  need "$VM_QEMU" qemu-system-x86
  local image=${VM_IMAGE:-}
  [[ -n $image ]] || image=$(build)

  local ctl
  mkdir -p "$VM_DIR/runs"
  ctl=$(mktemp -d "$VM_DIR/runs/run.XXXXXX")
  local qemu_pid=""
  # shellcheck disable=SC2064
  trap "cleanup_run '$ctl'" EXIT
  trap 'exit 130' INT TERM

  # The shares: the work tree at its own path, then each --mount.
  local shares=("$ROOT:$ROOT" "${mounts[@]}") share host guest i=0 virtfs=()
  : >"$ctl/mounts"
  for share in "${shares[@]}"; do
    host=${share%%:*}
    guest=${share#*:}
    [[ -d $host ]] || die "--mount $share: $host is not a directory"
    [[ $guest == /* ]] || die "--mount $share: the guest path must be absolute"
    host=$(cd "$host" && pwd)
    virtfs+=(-virtfs "local,path=$host,mount_tag=share$i,security_model=none,multidevs=remap")
    echo "share$i $guest" >>"$ctl/mounts"
    i=$((i + 1))
  done
  virtfs+=(-virtfs "local,path=$ctl,mount_tag=vmctl,security_model=none")

  # The command, its environment and its directory.
  printf '%q ' "$@" >"$ctl/command"
  echo >>"$ctl/command"
  env | grep -E '^(DOCKERSHIM_[A-Z0-9_]*|CI|VM_GUEST_[A-Z0-9_]*)=' | sed 's/^\([^=]*\)=\(.*\)$/\1=\x27\2\x27/' >"$ctl/env" || true
  guest_cwd "${shares[@]}" <<<"$PWD" >"$ctl/cwd"
  : >"$ctl/output"

  local accel start=$SECONDS
  accel=$(choose_accel)
  boot "$accel"

  # Show the output as it comes; watch the bounds.
  tail -n +1 -F "$ctl/output" 2>/dev/null &
  local tail_pid=$!
  local booted=0
  while kill -0 "$qemu_pid" 2>/dev/null; do
    if ((!booted)) && [[ -s $ctl/output ]]; then booted=1; fi
    if [[ $accel == kvm && $VM_ACCEL == auto && ! -s $ctl/console.log ]] &&
        ((SECONDS - start > VM_KVM_CONSOLE_TIMEOUT)); then
      log "the KVM guest printed nothing in ${VM_KVM_CONSOLE_TIMEOUT}s (VM_KVM_CONSOLE_TIMEOUT): KVM cannot run it here; booting again under TCG"
      stop_qemu "$qemu_pid"
      accel=tcg start=$SECONDS
      boot tcg
      continue
    fi
    if ((!booted && SECONDS - start > VM_BOOT_TIMEOUT)); then
      fail_run "$ctl" "the guest did not start the command within ${VM_BOOT_TIMEOUT}s (VM_BOOT_TIMEOUT)"
    fi
    if ((SECONDS - start > VM_TIMEOUT)); then
      fail_run "$ctl" "the run took longer than ${VM_TIMEOUT}s (VM_TIMEOUT)"
    fi
    sleep 1
  done
  wait "$qemu_pid" || true
  sleep 0.3 # the last lines of output
  kill "$tail_pid" 2>/dev/null || true
  wait "$tail_pid" 2>/dev/null || true
  if [[ ! -s $ctl/exit-code ]]; then
    echo "vm: the guest stopped without the command's exit code; the end of its console:" >&2
    tail -n 40 "$ctl/console.log" >&2 || true
    tail -n 5 "$ctl/qemu.log" >&2 || true
    exit 125
  fi
  local rc
  rc=$(cat "$ctl/exit-code")
  log "exit code $rc after $((SECONDS - start)) s"
  exit "$rc"
}

# Boots the image under accelerator $1 in the background; sets qemu_pid. Uses run()'s
# locals (image, ctl, virtfs).
boot() { # accel
  local cpu=max
  [[ $1 == kvm ]] && cpu=host
  log "booting ($1, $VM_CPUS CPUs, $VM_MEMORY; console: $ctl/console.log)"
  : >"$ctl/console.log"
  "$VM_QEMU" -accel "$1" -machine q35 -cpu "$cpu" -smp "$VM_CPUS" -m "$VM_MEMORY" \
    -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
    -append "root=/dev/vda rw console=ttyS0 apparmor=0 psi=1 systemd.unified_cgroup_hierarchy=1 panic=-1" \
    -drive "file=$image/rootfs.img,format=raw,if=virtio,snapshot=on" \
    "${virtfs[@]}" -nic none -display none -monitor none -serial "file:$ctl/console.log" \
    -no-reboot >"$ctl/qemu.log" 2>&1 &
  qemu_pid=$!
  echo "$qemu_pid" >"$ctl/qemu.pid"
}

stop_qemu() { # pid
  kill "$1" 2>/dev/null || true
  sleep 0.5
  kill -9 "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

choose_accel() {
  case $VM_ACCEL in
    kvm | tcg) echo "$VM_ACCEL" ;;
    auto) if kvm_runs_a_guest; then echo kvm; else echo tcg; fi ;;
    *) die "VM_ACCEL=$VM_ACCEL: kvm, tcg or auto" ;;
  esac
}

# Whether KVM runs a guest here: a firmware-only guest (no disk, no kernel) prints
# SeaBIOS's banner on its debug port at once when it does.
kvm_runs_a_guest() {
  local dir pid i ok=1
  dir=$(mktemp -d)
  "$VM_QEMU" -accel kvm -machine q35 -cpu host -m 64M -display none -monitor none -serial none \
    -nic none -no-reboot -chardev "file,id=dbg,path=$dir/debugcon" -device isa-debugcon,iobase=0x402,chardev=dbg \
    >"$dir/qemu.log" 2>&1 &
  pid=$!
  for ((i = 0; i < VM_KVM_PROBE_TIMEOUT * 10; i++)); do
    if grep -qs SeaBIOS "$dir/debugcon"; then ok=0; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  stop_qemu "$pid" >/dev/null 2>&1
  if ((ok)); then
    local why
    why=$(tail -n 1 "$dir/qemu.log" 2>/dev/null)
    log "KVM cannot run a guest here (no firmware output within ${VM_KVM_PROBE_TIMEOUT}s${why:+: $why}): using TCG"
  fi
  rm -rf "$dir"
  return $ok
}

# Where the current directory is in the guest: the same path when a share holds it.
guest_cwd() { # stdin: host cwd; args: host:guest shares
  local cwd share host guest
  read -r cwd
  for share in "$@"; do
    host=$(cd "${share%%:*}" && pwd)
    guest=${share#*:}
    if [[ $cwd == "$host" || $cwd == "$host"/* ]]; then
      echo "$guest${cwd#"$host"}"
      return
    fi
  done
  echo /
}

fail_run() { # ctl message
  echo "vm: error: $2; the end of the guest's console:" >&2
  tail -n 40 "$1/console.log" >&2 || true
  exit 124
}

cleanup_run() { # ctl
  local pid
  pid=$(cat "$1/qemu.pid" 2>/dev/null || true)
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then stop_qemu "$pid"; fi
  jobs -p | xargs -r kill 2>/dev/null || true
  rm -rf "$1"
}

[[ $EUID -eq 0 ]] || die "run as root"
cmd=${1:-}
shift || true
case $cmd in
  build) build >/dev/null ;;
  customize) customize "${1:?rootdir}" ;; # mmdebstrap's hooks
  customize-early) customize_early "${1:?rootdir}" ;;
  run) run "$@" ;;
  accel) choose_accel ;;
  mirror) echo "$MIRROR" ;;
  *) die "usage: $0 build | run [--mount HOSTDIR:GUESTDIR]... -- COMMAND... | accel | mirror" ;;
esac
