#!/bin/sh
# The `scale` profile's outside images, for a machine that reaches no registry: one image made
# from Debian's own packages (debootstrap, plain HTTP), tagged as NAME, that plays both
#   postgres   the official postgres:15 image's interface: POSTGRES_USER, POSTGRES_PASSWORD,
#              POSTGRES_DB, PGDATA=/var/lib/postgresql/data, pg_isready on the PATH, and a
#              first start that creates the cluster with password (scram) logins over TCP;
#   haproxy    haproxy on the PATH, as in the official haproxy image (the config mounted at
#              /usr/local/etc/haproxy/haproxy.cfg, run as user haproxy).
#
#   docker/scale-stand-in.sh NAME       # needs root and debootstrap; about a minute
#
# Only docker/compose_test.sh uses it (tagged NAME in an override file, never as the official
# images' tags). A real deployment pulls the official images that compose.yaml names.
set -eu
NAME=${1:?usage: docker/scale-stand-in.sh NAME}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT
R="$ROOT/rootfs"
debootstrap --variant=minbase --include=postgresql-15,haproxy bookworm "$R" "$MIRROR" > "$ROOT/debootstrap.log" 2>&1 \
    || { tail -20 "$ROOT/debootstrap.log" >&2; echo "docker/scale-stand-in.sh: debootstrap failed" >&2; exit 1; }
# what a container never needs: the package cache, docs, translations, the cluster that the
# package's own scripts made (the entrypoint makes its own in PGDATA)
rm -rf "$R"/var/cache/apt/archives/*.deb "$R"/var/lib/apt/lists/* "$R"/usr/share/doc \
    "$R"/usr/share/locale "$R"/usr/share/man "$R"/var/lib/postgresql/15 "$R"/etc/postgresql/15
mkdir -p "$R/var/lib/postgresql/data" "$R/usr/local/etc/haproxy"
chroot "$R" chown postgres:postgres /var/lib/postgresql/data
chmod 0700 "$R/var/lib/postgresql/data"
install -m 0555 "$(dirname "$0")/stand-in-postgres.sh" "$R/usr/local/bin/docker-entrypoint.sh"
tar --numeric-owner -C "$R" -c . | docker import \
    --change 'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV PGDATA=/var/lib/postgresql/data' \
    --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
    --change 'CMD ["postgres"]' \
    - "$NAME" > /dev/null
echo "docker/scale-stand-in.sh: $NAME is ready" >&2
