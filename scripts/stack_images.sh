#!/usr/bin/env bash
# The compose stack's images, built on this machine (no image registry is reachable here): one
# Debian bookworm base made with debootstrap, a stand-in for each official image docker-compose.yaml
# names, under that name and tag (docker/standins/README.md), and the stack's own image
# (docker/Dockerfile). Images live in the project's Docker engine's data root under the tools cache
# (scripts/dockerd.sh), so only a new machine pays the build (7m21s measured on 2 cores); a warm run checks
# labels and takes seconds. Stand-ins are rebuilt when their recipe changes (a label holds its hash).
#
#   scripts/stack_images.sh LAKEFS_BINARY
#
# Starts the engine if it is not running and stops it again when it started it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
LAKEFS_BIN=${1:?usage: scripts/stack_images.sh LAKEFS_BINARY}
TOOLS_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/lakefs-gc
STACK=$TOOLS_CACHE/stack
BASE=lakefs-gc-base:bookworm
STANDINS=$ROOT/docker/standins
die() { echo "stack_images: $*" >&2; exit 1; }
say() { echo "stack_images: $*"; }

out=$(bash scripts/dockerd.sh start) || die "the Docker engine did not start"
export "$(echo "$out" | sed -n 's/^\(DOCKER_HOST=.*\)/\1/p')"
case "$(echo "$out" | tail -n1)" in started*) trap 'bash scripts/dockerd.sh stop' EXIT ;; esac

image_of() {  # image_of PREFIX: the image docker-compose.yaml names that starts with PREFIX
  sed -n "s|^[[:space:]]*image:[[:space:]]*\($1[^[:space:]#]*\).*|\1|p" docker-compose.yaml | head -n1
}
label_of() { docker image inspect --format '{{index .Config.Labels "lakefs-gc.recipe"}}' "$1" 2>/dev/null || true; }

# --- the base: debootstrap, the host's CA certificates, pip and OpenSSL pointed at them ---
base_recipe=$(printf '%s\n' bookworm minbase v1 | sha256sum | cut -c1-16)
if [ "$(label_of "$BASE")" != "$base_recipe" ]; then
  command -v debootstrap >/dev/null 2>&1 || die "debootstrap not found: apt-get install debootstrap (scripts/setup.sh --stack does)"
  say "making the base image $BASE with debootstrap (once per machine, a few minutes)"
  rm -rf "$STACK/rootfs.tmp" && mkdir -p "$STACK"
  debootstrap --variant=minbase \
    --include=ca-certificates,curl,wget,python3,python3-venv,openjdk-17-jre-headless,postgresql-15,dumb-init,procps,netbase \
    bookworm "$STACK/rootfs.tmp" http://deb.debian.org/debian > "$STACK/debootstrap.log" 2>&1 \
    || die "debootstrap failed; its log: $STACK/debootstrap.log
$(tail -n 20 "$STACK/debootstrap.log")"
  r=$STACK/rootfs.tmp
  # the host's own CA certificates: a TLS-intercepting proxy may sit in front of the registries
  if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
    cp /usr/local/share/ca-certificates/*.crt "$r/usr/local/share/ca-certificates/"
  fi
  chroot "$r" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed in the base"
  # postgresql-15's package made a cluster at install: the stand-in makes its own at first start
  rm -rf "$r/var/lib/postgresql/15" "$r/etc/postgresql/15/main"
  chroot "$r" apt-get clean
  rm -rf "$r/var/lib/apt/lists/"* "$r/var/cache/apt/"*.bin
  tar -C "$r" -c . | docker import \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV LANG=C.UTF-8" \
    --change "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt" \
    --change "ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt" \
    --change "ENV REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt" \
    --change "LABEL lakefs-gc.recipe=$base_recipe" \
    --change 'CMD ["bash"]' - "$BASE" >/dev/null
  rm -rf "$r"
  say "base image $BASE made"
fi

build_standin() {  # build_standin TAG DOCKERFILE [FILE...]: a context of the recipe and its files
  local tag=$1 df=$2; shift 2
  [ -n "$tag" ] || die "docker-compose.yaml names no image for $df"
  local ctx recipe
  # the recipe: the image it starts FROM (by id), the Dockerfile, and every file it copies
  recipe=$( (docker image inspect --format '{{.Id}}' "$(sed -n 's/^FROM[[:space:]]*//p' "$STANDINS/$df" | head -n1)"
    cat "$STANDINS/$df"; for f in "$@"; do
    if [ -f "$STANDINS/$f" ]; then cat "$STANDINS/$f"; else sha256sum < "$f"; fi; done) | sha256sum | cut -c1-16)
  [ "$(label_of "$tag")" = "$recipe" ] && return 0
  say "building the stand-in $tag ($df)"
  ctx=$(mktemp -d "$STACK/ctx.XXXXXX")
  cp "$STANDINS/$df" "$ctx/Dockerfile"
  for f in "$@"; do
    if [ -f "$STANDINS/$f" ]; then cp -p "$STANDINS/$f" "$ctx/"; else cp -p "$f" "$ctx/$(basename "$f")"; fi
  done
  docker build --label "lakefs-gc.recipe=$recipe" -t "$tag" "$ctx" > "$STACK/build-$df.log" 2>&1 \
    || { rm -rf "$ctx"; die "building $tag failed; log: $STACK/build-$df.log
$(tail -n 30 "$STACK/build-$df.log")"; }
  rm -rf "$ctx"
}

AIRFLOW_IMAGE=$(sed -n 's/^ARG AIRFLOW_IMAGE=\(.*\)/\1/p' docker/Dockerfile)
# the Airflow stand-in's CPython: this machine's own 3.11 (>= 3.11.3), without its site-packages
PYHOME=$(python3 -c 'import sys; print(sys.base_prefix)')
pyver=$("$PYHOME/bin/python3" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
case "$pyver" in 3.11.[3-9]|3.11.[1-9][0-9]) ;; *) die "python3 is $pyver: the Airflow stand-in needs the host's CPython 3.11.3 or newer" ;; esac
pytar=$STACK/cpython-$pyver/python.tar; mkdir -p "$(dirname "$pytar")"
if [ ! -f "$pytar" ]; then
  tar -C "$PYHOME" --exclude='./lib/python3.11/site-packages/*' --exclude='./lib/python3.11/test' \
    --exclude='__pycache__' -cf "$pytar.tmp" . && mv "$pytar.tmp" "$pytar"
fi
build_standin "$AIRFLOW_IMAGE" airflow.Dockerfile airflow-entrypoint.sh "$pytar"
build_standin "$(image_of postgres:)" postgres.Dockerfile postgres-entrypoint.sh
minio_tag=$(image_of minio/minio:)
build_standin "$minio_tag" minio.Dockerfile minio.py
# minio/mc is the same stand-in image under the other name
docker tag "$minio_tag" "$(image_of minio/mc:)"
# lakeFS: the binary the set-up builds (it may still be building: wait for it, bounded)
for _ in $(seq 1 1800); do [ -x "$LAKEFS_BIN" ] && break; sleep 1; done
[ -x "$LAKEFS_BIN" ] || die "no lakeFS binary at $LAKEFS_BIN after 30 minutes"
build_standin "$(image_of treeverse/lakefs:)" lakefs.Dockerfile "$LAKEFS_BIN"

# --- the stack's own image, as docker-compose.yaml builds it (its layers cached for the test) ---
own=$(sed -n 's/^[[:space:]]*image:[[:space:]]*\(lakefs-gc-airflow:[^[:space:]]*\).*/\1/p' docker-compose.yaml | head -n1)
say "building $own (docker/Dockerfile; cached layers make a warm build take seconds)"
docker build -f docker/Dockerfile -t "$own" . > "$STACK/build-own.log" 2>&1 \
  || die "building $own failed; log: $STACK/build-own.log
$(tail -n 30 "$STACK/build-own.log")"
say "ok: $(docker images --format '{{.Repository}}:{{.Tag}}' | grep -v '<none>' | sort | tr '\n' ' ')"
