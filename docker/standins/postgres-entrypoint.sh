#!/bin/bash
# The official postgres image's start, as far as docker-compose.yaml uses it: a first start makes the
# cluster with POSTGRES_USER (superuser) / POSTGRES_PASSWORD and creates POSTGRES_DB; every start
# runs the server as `postgres`, listening on every interface of the container, md5 passwords.
set -euo pipefail
if [ "${1:-}" != postgres ]; then exec "$@"; fi
: "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
chown -R postgres:postgres "$PGDATA"
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp) && printf '%s\n' "$POSTGRES_PASSWORD" > "$pw" && chown postgres "$pw"
  runuser -u postgres -- initdb -D "$PGDATA" --username="$user" --pwfile="$pw" --auth-local=trust \
    --auth-host=md5 --encoding=UTF8 >/dev/null
  rm -f "$pw"
  echo "host all all all md5" >> "$PGDATA/pg_hba.conf"
  runuser -u postgres -- pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$db" != postgres ]; then
    runuser -u postgres -- psql -v ON_ERROR_STOP=1 --username "$user" --dbname postgres \
      -c "CREATE DATABASE \"$db\"" >/dev/null
  fi
  runuser -u postgres -- pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "postgres stand-in: cluster initialised (user $user, database $db)"
fi
exec runuser -u postgres -- postgres -D "$PGDATA" -c listen_addresses='*'
