#!/usr/bin/env bash
# Runs the container image's own commands outside Docker (no engine runs in CI): the build stage
# (`npm run build`), then the runtime stage's `npm ci --omit=dev` in a directory holding only what the
# image copies (package*.json, dist/, specs/, bin/), then the entrypoint. Fails on any difference.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=$(mktemp -d /tmp/l2stack-image-XXXXXX)
trap 'rm -rf "$stage"' EXIT

npm run build >/dev/null
cp package.json package-lock.json "$stage"/
cp -r dist specs bin "$stage"/
(cd "$stage" && NODE_ENV=production npm ci --omit=dev --no-audit --no-fund --ignore-scripts >/dev/null)
[ ! -d "$stage/src" ] || { echo "image-smoke: src/ must not be in the runtime stage"; exit 1; }

entry=(node "$stage/bin/l2stack.js")
version=$("${entry[@]}" --version)
[ "$version" = "$(node -p 'require("./package.json").version')" ] || { echo "image-smoke: --version printed '$version'"; exit 1; }
"${entry[@]}" --help | grep -q "Usage: l2stack" || { echo "image-smoke: --help did not print the usage"; exit 1; }
set +e
"${entry[@]}" --no-such-flag >/dev/null 2>&1; code=$?
set -e
[ "$code" = 2 ] || { echo "image-smoke: an unknown flag exited $code, expected 2"; exit 1; }
# The compose file's migrate service runs this against Postgres; here on embedded PGlite in one directory,
# as the image sets DATABASE_PGLITE_DIR=/data/pglite.
(cd "$stage" && DATABASE_PGLITE_DIR="$stage/data/pglite" "${entry[@]}" migrate >/dev/null)
[ -f "$stage/data/pglite/PG_VERSION" ] || { echo "image-smoke: migrate did not create the embedded database in DATABASE_PGLITE_DIR"; exit 1; }
echo "image-smoke: build, runtime install and entrypoint OK (version $version)"
