#!/bin/sh
# The part of the official postgres image's entrypoint that docker/compose.yaml relies on (CI stand-in only):
# on an empty PGDATA, a cluster whose superuser is POSTGRES_USER with POSTGRES_PASSWORD, reachable over the
# network with that password, and the database POSTGRES_DB; then the server in the foreground.
set -eu
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  # Single-user mode runs as the bootstrap superuser, so no server has to be started and stopped for this.
  if [ "$db" != postgres ]; then echo "CREATE DATABASE \"$db\"" | postgres --single -D "$PGDATA" postgres >/dev/null; fi
  echo "postgres-entrypoint: initialized $PGDATA (database $db, user $user)"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
