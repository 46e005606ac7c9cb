#!/bin/sh
# The entrypoint of docker/scale-stand-in.sh's image. `postgres [ARGS]`: as the official
# postgres image does on its first start, create the cluster in $PGDATA with $POSTGRES_USER
# (password $POSTGRES_PASSWORD, required) and the database $POSTGRES_DB, allow password
# (scram-sha-256) logins from any address, then run the server listening on every address.
# Anything else is run as it is (haproxy, pg_isready, psql).
set -eu
if [ "${1:-}" != postgres ]; then
    exec "$@"
fi
shift
: "${PGDATA:=/var/lib/postgresql/data}"
USER_NAME=${POSTGRES_USER:-postgres}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "Error: the database is not initialised and POSTGRES_PASSWORD is not set" >&2
        exit 1
    fi
    PWFILE=$(mktemp)
    printf '%s\n' "$POSTGRES_PASSWORD" > "$PWFILE"
    initdb -D "$PGDATA" -U "$USER_NAME" --pwfile="$PWFILE" --auth-local=scram-sha-256 \
        --auth-host=scram-sha-256 > /dev/null
    rm -f "$PWFILE"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    DB=${POSTGRES_DB:-$USER_NAME}
    if [ "$DB" != postgres ]; then
        # a server on a private socket only, to create the database, then stopped
        SOCK=$(mktemp -d)
        pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -k $SOCK" start > /dev/null
        PGPASSWORD=$POSTGRES_PASSWORD createdb -h "$SOCK" -U "$USER_NAME" "$DB"
        pg_ctl -D "$PGDATA" -w stop > /dev/null
        rm -rf "$SOCK"
    fi
    echo "stand-in postgres: created the cluster, user $USER_NAME, database $DB" >&2
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
