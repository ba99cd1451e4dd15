#!/bin/sh
# The first start makes the cluster (POSTGRES_USER as its superuser, password
# logins from the network) and POSTGRES_DB; every start then serves it.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
  pwfile="$(mktemp)"
  printf '%s' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then createdb -U "$POSTGRES_USER" "$POSTGRES_DB"; fi
  pg_ctl -D "$PGDATA" -w -m fast stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*'
