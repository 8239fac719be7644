#!/bin/bash
# Prepares what the integration tests need, on this machine, offline. Idempotent; run as root.
#   (a) the Docker Engines: Debian 12's 20.10 (reuses whatever `docker info` reaches, else
#       starts dockerd) and beside it 26.1, 28.5, and 28.5 with the containerd image store
#       (scripts/docker-engines.sh: 26, 28, 28c; 29 when DOCKERSHIM_ENGINE_29_DIR names a
#       hand-built Docker 29); DOCKERSHIM_TEST_ENGINES="20 26 28 28c" (the default) names
#       the ones to prepare;
#   (b) two registries (Debian docker-registry) on 127.0.0.1: :5000 without auth and
#       :5001 with htpasswd auth (tester / s3cret-pass); Docker treats 127.0.0.0/8 as an
#       insecure registry, so plain HTTP works;
#   (c) the test images (scripts/test-images.sh);
#   (d) the settings tests/integration/env.h reads, written to $W/env.sh and printed;
#       sourcing it with DOCKERSHIM_TEST_ENGINE=26 (default 20) selects the engine under test.
# Credentials never go to root's ~/.docker: logins use a throw-away DOCKER_CONFIG.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
W=/var/tmp/dockershim-test
REG_PORT=5000
AUTH_PORT=5001
AUTH_USER=tester
AUTH_PASSWORD=s3cret-pass
CNI_BIN=/usr/lib/cni
ENGINES=${DOCKERSHIM_TEST_ENGINES:-20 26 28 28c}
EXTRA_ENGINES=$(tr ' ' '\n' <<<"$ENGINES" | grep -vx 20 | xargs || true)

log() { echo "test-env: $*"; }
die() { echo "test-env: error: $*" >&2; exit 1; }

[[ $EUID -eq 0 ]] || die "run as root"
command -v docker >/dev/null || die "no docker client on PATH (run scripts/install-deps.sh)"
mkdir -p "$W"
start=$SECONDS

# throw-away DOCKER_CONFIG directories live here
TMP=$(mktemp -d /tmp/dockershim-test-env.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/login" "$TMP/anonymous"

# ---- (a) Docker Engine --------------------------------------------------------------------
# Runtime handlers for the RuntimeClass tests: gVisor (Debian's runsc; on restricted
# hosts it runs only without its own network stack) and a second runc entry.
RUNTIMES_JSON='{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}, "runc-alt": {"path": "/usr/sbin/runc"}}}'
if [[ ! -f /etc/docker/daemon.json ]]; then
  mkdir -p /etc/docker
  echo "$RUNTIMES_JSON" >/etc/docker/daemon.json
  log "wrote /etc/docker/daemon.json (runtimes runsc, runc-alt)"
elif ! grep -q '"runc-alt"' /etc/docker/daemon.json; then
  log "note: /etc/docker/daemon.json has no runc-alt/runsc runtimes; runtime handler tests will skip"
fi
if docker info >/dev/null 2>&1; then
  if ! docker info 2>/dev/null | grep -q 'runc-alt' && grep -q '"runc-alt"' /etc/docker/daemon.json; then
    pkill -HUP -x dockerd && sleep 1 && log "asked dockerd to reload /etc/docker/daemon.json"
  fi
  log "dockerd answers (server $(docker version -f '{{.Server.Version}}'))"
else
  command -v dockerd >/dev/null || die "dockerd not found (apt-get install docker.io)"
  log "starting dockerd (log: $W/dockerd.log)"
  setsid dockerd >>"$W/dockerd.log" 2>&1 </dev/null &
  deadline=$((SECONDS + 60))
  until docker info >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      tail -n 30 "$W/dockerd.log" >&2 || true
      die "dockerd did not answer within 60s"
    fi
    sleep 0.5
  done
  log "dockerd up (server $(docker version -f '{{.Server.Version}}'))"
fi

# The newer engines, each beside the 20.10 daemon with its own socket, state and bridge.
# shellcheck disable=SC2086
[[ -z $EXTRA_ENGINES ]] || "$ROOT/scripts/docker-engines.sh" start $EXTRA_ENGINES
engine_endpoint() { # n
  if [[ $1 == 20 ]]; then
    if [[ ${DOCKER_HOST:-} == unix://* ]]; then echo "$DOCKER_HOST"; else echo unix:///var/run/docker.sock; fi
  else
    "$ROOT/scripts/docker-engines.sh" endpoint "$1"
  fi
}
ENDPOINT_20=$(engine_endpoint 20)

# ---- (b) registries -----------------------------------------------------------------------
http_code() { # url [curl args...]: the HTTP status, 000 if nothing answers
  local url=$1
  shift
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" "$url" 2>/dev/null || true
}

write_config() { # port [auth]
  local port=$1 auth=${2:-} cfg="$W/registry-$1.yml"
  local new
  new=$(
    cat <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $W/registry-$port
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  headers:
    X-Content-Type-Options: [nosniff]
EOF
    if [[ -n $auth ]]; then
      cat <<EOF
auth:
  htpasswd:
    realm: dockershim-test
    path: $W/htpasswd
EOF
    fi
  )
  [[ -f $cfg && $(cat "$cfg") == "$new" ]] || printf '%s\n' "$new" >"$cfg"
}

start_registry() { # port expected-anonymous-code
  local port=$1 want=$2 code
  code=$(http_code "http://127.0.0.1:$port/v2/")
  if [[ $code == "$want" ]]; then
    log "registry on 127.0.0.1:$port answers"
    return
  fi
  if [[ $code != 000 ]] && command -v systemctl >/dev/null && systemctl is-active --quiet docker-registry.service 2>/dev/null; then
    # Debian's docker-registry package starts a service on :5000 with htpasswd auth
    # (/etc/docker/registry/config.yml); the test registries replace it.
    log "stopping and disabling Debian's docker-registry.service (it holds :5000)"
    systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
    sleep 0.5
    code=$(http_code "http://127.0.0.1:$port/v2/")
  fi
  [[ $code == 000 ]] || die "something else answers on 127.0.0.1:$port (HTTP $code on /v2/, want $want)"
  command -v docker-registry >/dev/null || die "docker-registry not found (apt-get install docker-registry)"
  mkdir -p "$W/registry-$port"
  log "starting registry on 127.0.0.1:$port (log: $W/registry-$port.log)"
  setsid docker-registry serve "$W/registry-$port.yml" >>"$W/registry-$port.log" 2>&1 </dev/null &
  local deadline=$((SECONDS + 20))
  until [[ $(http_code "http://127.0.0.1:$port/v2/") == "$want" ]]; do
    if ((SECONDS >= deadline)); then
      tail -n 20 "$W/registry-$port.log" >&2 || true
      die "registry on 127.0.0.1:$port did not come up"
    fi
    sleep 0.2
  done
}

if ! [[ -s $W/htpasswd ]] || ! htpasswd -vb "$W/htpasswd" "$AUTH_USER" "$AUTH_PASSWORD" >/dev/null 2>&1; then
  command -v htpasswd >/dev/null || die "htpasswd not found (apt-get install apache2-utils)"
  htpasswd -Bbn "$AUTH_USER" "$AUTH_PASSWORD" >"$W/htpasswd"
fi
write_config "$REG_PORT"
write_config "$AUTH_PORT" auth
start_registry "$REG_PORT" 200
start_registry "$AUTH_PORT" 401

# the auth registry accepts tester and rejects anyone else
[[ $(http_code "http://127.0.0.1:$AUTH_PORT/v2/" -u "$AUTH_USER:$AUTH_PASSWORD") == 200 ]] ||
  die "127.0.0.1:$AUTH_PORT rejects $AUTH_USER (htpasswd differs from $W/htpasswd?)"
[[ $(http_code "http://127.0.0.1:$AUTH_PORT/v2/" -u "$AUTH_USER:wrong-password") == 401 ]] ||
  die "127.0.0.1:$AUTH_PORT accepts a wrong password"
DOCKER_CONFIG=$TMP/login docker login -u "$AUTH_USER" --password-stdin "127.0.0.1:$AUTH_PORT" \
  <<<"$AUTH_PASSWORD" >/dev/null 2>&1 || die "docker login 127.0.0.1:$AUTH_PORT failed"
DOCKER_CONFIG=$TMP/login docker logout "127.0.0.1:$AUTH_PORT" >/dev/null 2>&1 || true
log "docker login 127.0.0.1:$AUTH_PORT works (throw-away DOCKER_CONFIG)"

# ---- (c) images ---------------------------------------------------------------------------
# Containers an interrupted earlier run left (every CRI container carries the type label)
# would hold the test images and make the image-removal tests fail.
for n in $ENGINES; do
  [[ $n == 20 ]] && endpoint=$ENDPOINT_20 || endpoint=$(engine_endpoint "$n")
  leftovers=$(DOCKER_HOST=$endpoint docker ps -aq --filter label=io.kubernetes.docker.type)
  if [[ -n $leftovers ]]; then
    log "removing $(wc -w <<<"$leftovers") containers an earlier test run left on docker $n"
    DOCKER_HOST=$endpoint docker rm -f $leftovers >/dev/null
  fi
done
"$ROOT/scripts/test-images.sh"
# The other engines get the very same images. On a graph driver they have the same IDs
# (the config's digest); the containerd store names an image by its manifest's digest,
# which a load makes anew, so an image is compared by what it is made of.
IDENTITY='{{.Created}} {{.RootFS.Layers}} {{.Config.User}}'
mapfile -t test_images < <(docker images --format '{{.Repository}}:{{.Tag}}' 'dockershim-test/*')
for n in $EXTRA_ENGINES; do
  endpoint=$(engine_endpoint "$n")
  missing=()
  for image in "${test_images[@]}"; do
    want=$(docker image inspect -f "$IDENTITY" "$image")
    have=$(DOCKER_HOST=$endpoint docker image inspect -f "$IDENTITY" "$image" 2>/dev/null || true)
    [[ $want == "$have" ]] || missing+=("$image")
  done
  if ((${#missing[@]})); then
    log "loading ${#missing[@]} test images into docker $n"
    docker save "${missing[@]}" | DOCKER_HOST=$endpoint docker load -q >/dev/null
  fi
done

# anonymous pulls from the auth registry fail
private=127.0.0.1:$AUTH_PORT/private/busybox:latest
if DOCKER_CONFIG=$TMP/anonymous docker pull -q "$private" >/dev/null 2>&1; then
  docker rmi "$private" >/dev/null 2>&1 || true
  die "anonymous pull of $private succeeded"
fi
log "anonymous pull of $private is refused"

for p in bridge host-local loopback portmap; do
  [[ -x $CNI_BIN/$p ]] || die "CNI plugin $CNI_BIN/$p missing (apt-get install containernetworking-plugins)"
done

# ---- (d) settings -------------------------------------------------------------------------
{
  cat <<EOF
# Written by scripts/test-env.sh; read by tests/integration/env.h (these are its defaults).
# DOCKERSHIM_TEST_ENGINE (one of DOCKERSHIM_TEST_ENGINES) selects the engine under test.
export DOCKERSHIM_TEST_ENGINES="$ENGINES"
EOF
  for n in $ENGINES; do
    [[ $n == 20 ]] && endpoint=$ENDPOINT_20 || endpoint=$(engine_endpoint "$n")
    echo "export DOCKERSHIM_TEST_DOCKER_$n=$endpoint"
  done
  cat <<'EOF'
export DOCKERSHIM_TEST_ENGINE=${DOCKERSHIM_TEST_ENGINE:-${DOCKERSHIM_TEST_ENGINES%% *}}
eval "export DOCKERSHIM_TEST_DOCKER=\$DOCKERSHIM_TEST_DOCKER_$DOCKERSHIM_TEST_ENGINE"
EOF
  cat <<EOF
export DOCKERSHIM_TEST_REGISTRY=127.0.0.1:$REG_PORT
export DOCKERSHIM_TEST_AUTH_REGISTRY=127.0.0.1:$AUTH_PORT
export DOCKERSHIM_TEST_AUTH_USER=$AUTH_USER
export DOCKERSHIM_TEST_AUTH_PASSWORD=$AUTH_PASSWORD
export DOCKERSHIM_TEST_CNI_BIN=$CNI_BIN
# Stops and starts the private engines (26, 28, 28c, 29) for the tests that restart dockerd.
export DOCKERSHIM_TEST_ENGINE_CTL=$ROOT/scripts/docker-engines.sh
EOF
  # which engine 29 is, for that script
  [[ -z ${DOCKERSHIM_ENGINE_29_DIR:-} ]] || echo "export DOCKERSHIM_ENGINE_29_DIR=$DOCKERSHIM_ENGINE_29_DIR"
} >"$W/env.sh"
log "ready in $((SECONDS - start))s; settings (source $W/env.sh):"
sed -n 's/^export /  /p' "$W/env.sh"
