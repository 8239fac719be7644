#!/bin/bash
# Builds the images the tests use, offline, and pushes them to the local test registries.
#   - rootfs from Debian's busybox-static, fed to `docker import` (no Dockerfile, no network);
#   - the pause image holds only our static tools/pause/pause.c at /pause.
# Idempotent: images carry a label with a hash of their inputs and are rebuilt only when
# missing or stale; a registry tag is pushed only when it does not already hold the local
# image. After pushing, the registry-named local tags are removed (so tests really pull);
# the dockershim-test/* names stay.
# Needs a running dockerd and the registries started by scripts/test-env.sh. Run as root.
set -euo pipefail
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
W=/var/tmp/dockershim-test/images
REG=127.0.0.1:5000
AUTH_REG=127.0.0.1:5001
AUTH_USER=tester
AUTH_PASSWORD=s3cret-pass
LABEL=io.dockershim.test-images
BUSYBOX=/bin/busybox

log() { echo "test-images: $*"; }
die() { echo "test-images: error: $*" >&2; exit 1; }

[[ -x $BUSYBOX ]] || die "$BUSYBOX missing (apt-get install busybox-static)"
command -v gcc >/dev/null || die "gcc missing (apt-get install gcc libc6-dev)"
docker info >/dev/null 2>&1 || die "docker does not answer (run scripts/test-env.sh)"

mkdir -p "$W"
exec 9>"$W/.lock"
flock 9 # one builder at a time

# Everything an image is made of: this script, the pause source, the busybox binary.
STAMP=$(cat "${BASH_SOURCE[0]}" "$ROOT/tools/pause/pause.c" "$BUSYBOX" | sha256sum | cut -c1-16)

BUSYBOX_USER_IMAGES=(
  "dockershim-test/user-uid:latest|USER 1002"
  "dockershim-test/user-username:latest|USER www-data"
  "dockershim-test/user-uid-group:latest|USER 1003:100"
  "dockershim-test/user-username-group:latest|USER www-data:www-data"
)
ALL_IMAGES=(dockershim-test/busybox:latest dockershim-test/pause:latest dockershim-test/httpd:latest)
for e in "${BUSYBOX_USER_IMAGES[@]}"; do ALL_IMAGES+=("${e%%|*}"); done

image_stamp() { docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null || true; }

mkroot() { # dir: a busybox root filesystem
  local r=$1 a p
  rm -rf "$r"
  mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc,root,home,tmp,var/www,var/run,proc,sys,dev}
  install -m 0755 "$BUSYBOX" "$r/bin/busybox"
  # every applet in /bin (like the busybox image), plus its usual place (/usr/bin/env, /sbin/ip, ...)
  for a in $("$BUSYBOX" --list); do
    [[ -e $r/bin/$a || -L $r/bin/$a ]] || ln -s busybox "$r/bin/$a"
  done
  for p in $("$BUSYBOX" --list-full); do
    [[ -e $r/$p || -L $r/$p ]] && continue
    mkdir -p "$(dirname "$r/$p")"
    ln -s /bin/busybox "$r/$p"
  done
  chmod 1777 "$r/tmp"
  cat >"$r/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
  cat >"$r/etc/group" <<'EOF'
root:x:0:
daemon:x:1:
www-data:x:33:
users:x:100:
nogroup:x:65534:
EOF
  echo "hosts: files dns" >"$r/etc/nsswitch.conf"
}

pack() { # dir tarball
  tar --numeric-owner --owner=0 --group=0 -C "$1" -cf "$2" .
}

import() { # tarball name change...
  local tarball=$1 name=$2 c
  shift 2
  local args=(--change "LABEL $LABEL=$STAMP")
  for c in "$@"; do args+=(--change "$c"); done
  docker import "${args[@]}" "$tarball" "$name" >/dev/null
  log "built $name"
}

build_images() {
  gcc -std=c11 -Wall -Wextra -Werror -static -Os -s -o "$W/pause" "$ROOT/tools/pause/pause.c"

  mkroot "$W/rootfs"
  pack "$W/rootfs" "$W/busybox.tar"
  import "$W/busybox.tar" dockershim-test/busybox:latest 'CMD ["sh"]'
  local e
  for e in "${BUSYBOX_USER_IMAGES[@]}"; do
    import "$W/busybox.tar" "${e%%|*}" "${e#*|}" 'CMD ["sh"]'
  done

  mkdir -p "$W/rootfs/www"
  echo "hello from dockershim-test" >"$W/rootfs/www/index.html"
  pack "$W/rootfs" "$W/httpd.tar"
  import "$W/httpd.tar" dockershim-test/httpd:latest 'EXPOSE 80/tcp' 'CMD ["sh","-c","trap \"exit 0\" TERM; httpd -f -p 80 -h /www & wait"]'

  rm -rf "$W/pauseroot"
  mkdir -p "$W/pauseroot"
  install -m 0755 "$W/pause" "$W/pauseroot/pause"
  pack "$W/pauseroot" "$W/pause.tar"
  import "$W/pause.tar" dockershim-test/pause:latest 'ENTRYPOINT ["/pause"]'

  # The registry's busybox differs from dockershim-test/busybox (a marker file), so
  # tests may remove it by ID without touching the local test images. It lives
  # locally only as a saved archive: docker load restores the same image ID.
  echo "served by the test registry" >"$W/rootfs/registry-image"
  pack "$W/rootfs" "$W/registry-busybox.tar"
  import "$W/registry-busybox.tar" dockershim-test/registry-busybox:latest 'CMD ["sh"]'
  docker save -o "$W/registry-busybox.image" dockershim-test/registry-busybox:latest
  docker rmi dockershim-test/registry-busybox:latest >/dev/null

  rm -rf "$W/rootfs" "$W/pauseroot" "$W"/*.tar
}

stale=0
[[ -f $W/registry-busybox.image ]] || stale=1
for img in "${ALL_IMAGES[@]}"; do
  [[ $(image_stamp "$img") == "$STAMP" ]] || { stale=1; break; }
done
if ((stale)); then
  build_images
else
  log "local images up to date (${#ALL_IMAGES[@]} dockershim-test/* images)"
fi

# ---- push -------------------------------------------------------------------------------
# "local source|registry reference"
PUSHES=(
  "dockershim-test/registry-busybox:latest|$REG/busybox:latest"
  "dockershim-test/registry-busybox:latest|$REG/busybox:1.0"
  "dockershim-test/pause:latest|$REG/pause:3.10"
  "dockershim-test/httpd:latest|$REG/httpd:latest"
  "dockershim-test/user-uid:latest|$REG/user-uid:latest"
  "dockershim-test/user-username:latest|$REG/user-username:latest"
  "dockershim-test/user-uid-group:latest|$REG/user-uid-group:latest"
  "dockershim-test/user-username-group:latest|$REG/user-username-group:latest"
  "dockershim-test/registry-busybox:latest|$AUTH_REG/private/busybox:latest"
)

# The config digest of registry/repo:tag, which is the image ID docker pushed; empty if absent.
remote_id() { # ref [user:password]
  local ref=$1 creds=${2:-} host path repo tag
  host=${ref%%/*}
  path=${ref#*/}
  repo=${path%:*}
  tag=${path##*:}
  local curl_args=(-sf --max-time 10 -H 'Accept: application/vnd.docker.distribution.manifest.v2+json')
  [[ -n $creds ]] && curl_args+=(-u "$creds")
  { curl "${curl_args[@]}" "http://$host/v2/$repo/manifests/$tag" || true; } |
    tr -d ' \t\r\n' | grep -o '"config":{[^}]*}' | grep -o 'sha256:[0-9a-f]\{64\}' | head -n1 || true
}

AUTH_CONFIG=
cleanup() {
  if [[ -n $AUTH_CONFIG ]]; then
    DOCKER_CONFIG=$AUTH_CONFIG docker logout "$AUTH_REG" >/dev/null 2>&1 || true
    rm -rf "$AUTH_CONFIG"
  fi
}
trap cleanup EXIT

# ID of a push source; the registry busybox is restored from its archive when needed.
source_id() { # src
  if [[ $1 == dockershim-test/registry-busybox:latest ]]; then
    tar -xOf "$W/registry-busybox.image" manifest.json | grep -o '"Config":"[^"]*"' | grep -o '[0-9a-f]\{64\}' | sed 's/^/sha256:/'
  else
    docker image inspect -f '{{.Id}}' "$1"
  fi
}

pushed=0
for e in "${PUSHES[@]}"; do
  src=${e%%|*}
  dst=${e#*|}
  creds=
  [[ $dst == "$AUTH_REG"/* ]] && creds="$AUTH_USER:$AUTH_PASSWORD"
  local_id=$(source_id "$src")
  [[ $(remote_id "$dst" "$creds") == "$local_id" ]] && continue
  if ! docker image inspect "$src" >/dev/null 2>&1; then
    docker load -q -i "$W/registry-busybox.image" >/dev/null
  fi
  docker tag "$src" "$dst"
  if [[ -n $creds ]]; then
    if [[ -z $AUTH_CONFIG ]]; then
      AUTH_CONFIG=$(mktemp -d /tmp/dockershim-test-auth.XXXXXX)
      out=$(DOCKER_CONFIG=$AUTH_CONFIG docker login -u "$AUTH_USER" --password-stdin "$AUTH_REG" \
        <<<"$AUTH_PASSWORD" 2>&1) || die "docker login $AUTH_REG failed: $out"
    fi
    DOCKER_CONFIG=$AUTH_CONFIG docker push -q "$dst" >/dev/null
  else
    docker push -q "$dst" >/dev/null
  fi
  docker rmi "$dst" >/dev/null # untag only: the dockershim-test/* name keeps the image
  [[ $(remote_id "$dst" "$creds") == "$local_id" ]] || die "push of $dst did not land"
  log "pushed $dst"
  pushed=$((pushed + 1))
done
cleanup
AUTH_CONFIG=
docker rmi dockershim-test/registry-busybox:latest >/dev/null 2>&1 || true

# ---- a multi-platform index ---------------------------------------------------------------
# $REG/multiarch:latest: an OCI index of this node's platform (the registry busybox's
# manifest) and another one (a layer of its own holding /platform, an arm64 config on an
# amd64 node, else amd64), so that tests see that only this node's platform is pulled.
# Built with the registry's HTTP API (no buildx offline); blobs are reproducible (fixed
# tar mtime and owner, gzip -n), so an index that is there already is left alone.
MULTI=multiarch
ACCEPT_MANIFEST='application/vnd.docker.distribution.manifest.v2+json'
ACCEPT_INDEX='application/vnd.oci.image.index.v1+json'
upload_blob() { # file: into $MULTI unless there
  local digest
  digest=sha256:$(sha256sum "$1" | cut -c1-64)
  curl -sf -o /dev/null -I "http://$REG/v2/$MULTI/blobs/$digest" && return
  local location
  location=$(curl -sf -D - -o /dev/null -X POST "http://$REG/v2/$MULTI/blobs/uploads/" |
    tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
  [[ -n $location ]] || die "registry $REG refused a blob upload to $MULTI"
  [[ $location == http* ]] || location="http://$REG$location"
  [[ $location == *\?* ]] && location+="&" || location+="?"
  curl -sf -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' --data-binary "@$1" \
    "${location}digest=$digest" || die "upload of blob $digest to $REG/$MULTI failed"
}
put_manifest() { # file media-type reference
  curl -sf -o /dev/null -X PUT -H "Content-Type: $2" --data-binary "@$1" "http://$REG/v2/$MULTI/manifests/$3" ||
    die "registry $REG refused manifest $3 of $MULTI"
}
digest_of() { echo "sha256:$(sha256sum "$1" | cut -c1-64)"; }
size_of() { stat -c %s "$1"; }

M=$(mktemp -d /tmp/dockershim-test-multiarch.XXXXXX)
host_arch=$(dpkg --print-architecture)
if [[ $host_arch == amd64 ]]; then other_arch=arm64; else other_arch=amd64; fi
# this node's platform: the registry busybox, its manifest as the registry holds it
curl -sf -H "Accept: $ACCEPT_MANIFEST" "http://$REG/v2/busybox/manifests/latest" >"$M/host.json" ||
  die "no $REG/busybox:latest to build the multi-platform index from"
for digest in $(grep -o 'sha256:[0-9a-f]\{64\}' "$M/host.json"); do
  curl -sf -o /dev/null -X POST "http://$REG/v2/$MULTI/blobs/uploads/?mount=$digest&from=busybox" ||
    die "cannot mount blob $digest into $REG/$MULTI"
done
# the other platform
mkdir -p "$M/root"
echo "$other_arch" >"$M/root/platform"
tar --numeric-owner --owner=0 --group=0 --mtime=@0 --sort=name -C "$M/root" -cf "$M/layer.tar" .
gzip -n -c "$M/layer.tar" >"$M/layer.tar.gz"
printf '{"architecture":"%s","os":"linux","config":{"Cmd":["sh"]},"rootfs":{"type":"layers","diff_ids":["%s"]}}' \
  "$other_arch" "$(digest_of "$M/layer.tar")" >"$M/config.json"
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"%s","size":%s}]}' \
  "$(digest_of "$M/config.json")" "$(size_of "$M/config.json")" \
  "$(digest_of "$M/layer.tar.gz")" "$(size_of "$M/layer.tar.gz")" >"$M/other.json"
printf '{"schemaVersion":2,"mediaType":"%s","manifests":[{"mediaType":"%s","digest":"%s","size":%s,"platform":{"architecture":"%s","os":"linux"}},{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"architecture":"%s","os":"linux"}}]}' \
  "$ACCEPT_INDEX" "$ACCEPT_MANIFEST" "$(digest_of "$M/host.json")" "$(size_of "$M/host.json")" "$host_arch" \
  "$(digest_of "$M/other.json")" "$(size_of "$M/other.json")" "$other_arch" >"$M/index.json"
remote_index=$(curl -sf -I -H "Accept: $ACCEPT_INDEX" "http://$REG/v2/$MULTI/manifests/latest" |
  tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p' || true)
if [[ $remote_index != "$(digest_of "$M/index.json")" ]]; then
  upload_blob "$M/layer.tar.gz"
  upload_blob "$M/config.json"
  put_manifest "$M/host.json" "$ACCEPT_MANIFEST" "$(digest_of "$M/host.json")"
  put_manifest "$M/other.json" application/vnd.oci.image.manifest.v1+json "$(digest_of "$M/other.json")"
  put_manifest "$M/index.json" "$ACCEPT_INDEX" latest
  log "pushed $REG/$MULTI:latest ($host_arch and $other_arch)"
fi
rm -rf "$M"

# Registry-named tags left behind (e.g. by an earlier test run that pulled) go too.
for ref in $(docker images --format '{{.Repository}}:{{.Tag}}' | grep -E "^($REG|$AUTH_REG)/" || true); do
  docker rmi "$ref" >/dev/null 2>&1 || log "note: could not untag $ref (in use?)"
done
log "registries up to date (${#PUSHES[@]} tags, $pushed pushed now)"
