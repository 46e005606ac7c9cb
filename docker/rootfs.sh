#!/bin/sh
# The agent image's filesystem, as one archive: the one assembly that both the Dockerfile's
# builder stage and docker/prebuilt.sh run, so the two images cannot drift apart.
#
#   docker/rootfs.sh BIN OUT.tar      # BIN: the static docs-agent; run from anywhere
#   docker/rootfs.sh --static BIN...  # only checks that each BIN is static
#
# The archive holds:
#   /usr/local/bin/docs-agent   BIN, after checking it needs no dynamic loader and runs;
#   /etc/ssl/certs/...          a CA bundle for HTTPS model servers (Debian's, no local CA);
#   /etc/passwd, /etc/group     uid 10001 named, with no shell;
#   /tmp                        empty, 1777;
#   /workspace, /evals          the sample workspace and the eval pack, root's and read-only;
#   /workspace/notes, /data, /etc/docs-agent
#                               uid 10001's, the only places it writes (notes, the session
#                               log, the api's config written by `init`).
# Owners and modes are set in the archive itself, so no root is needed to make it; unpacked
# as root (`tar -xpf`) or by Docker's ADD, they are kept.
set -eu
HERE=$(cd "$(dirname "$0")/.." && pwd)

# A static binary has no program interpreter and no DT_NEEDED entries. The headers are read
# into variables first (no pipes: a SIGPIPE could silently turn the check off; set -e stops
# on a readelf that fails).
check_static() {
    for bin in "$@"; do
        HEADERS=$(readelf -lW "$bin"); DYNAMIC=$(readelf -dW "$bin")
        case "$HEADERS" in *'program interpreter'*)
            echo "docker/rootfs.sh: $bin is dynamically linked" >&2; exit 1;; esac
        case "$DYNAMIC" in *'(NEEDED)'*)
            echo "docker/rootfs.sh: $bin needs shared libraries" >&2; exit 1;; esac
    done
}

if [ "${1:-}" = --static ]; then
    shift
    check_static "$@"
    exit 0
fi
if [ $# -ne 2 ]; then
    echo "usage: docker/rootfs.sh BIN OUT.tar   (or --static BIN...)" >&2
    exit 2
fi
BIN=$1
OUT=$2
check_static "$BIN"
"$BIN" --help > /dev/null

ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT
R="$ROOT/rootfs"
install -D -m 0555 "$BIN" "$R/usr/local/bin/docs-agent"
# The CA bundle from Debian's ca-certificates package alone (Mozilla's roots), never this
# machine's /etc/ssl/certs/ca-certificates.crt: that one also holds any CA the machine's owner
# added under /usr/local/share/ca-certificates (a company proxy's), which the image must not
# trust. The same on a build host and in the rust image.
mkdir -p "$R/etc/ssl/certs"
cat /usr/share/ca-certificates/mozilla/*.crt > "$R/etc/ssl/certs/ca-certificates.crt"
chmod 0444 "$R/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\ndocs-agent:x:10001:10001:docs-agent:/nonexistent:/sbin/nologin\n' > "$R/etc/passwd"
printf 'root:x:0:\ndocs-agent:x:10001:\n' > "$R/etc/group"
chmod 0444 "$R/etc/passwd" "$R/etc/group"
mkdir -p "$R/tmp" && chmod 1777 "$R/tmp"
cp -R "$HERE/workspace" "$R/workspace"
cp -R "$HERE/evals" "$R/evals"
# notes/ ships empty: never bake a user's notes into an image
mkdir -p "$R/workspace/notes"
find "$R/workspace/notes" -mindepth 1 ! -name .gitkeep -exec rm -rf {} +
# nor a secret or an editor's litter left beside the docs (what .dockerignore keeps out of the
# Dockerfile's context; docker/prebuilt.sh reads the checkout itself)
find "$R/workspace" "$R/evals" \( -name '.env' -o -name '.env.*' -o -name '*.pem' -o -name '*.key' \
    -o -name '*.swp' -o -name '*~' -o -name '.DS_Store' \) -exec rm -rf {} +
chmod -R u=rwX,go=rX "$R/workspace" "$R/evals"
mkdir -p "$R/data" "$R/etc/docs-agent"
chmod 0750 "$R/workspace/notes"
chmod 0700 "$R/data" "$R/etc/docs-agent"
# Everything root's, then the three folders uid 10001 writes appended as its: a later entry
# for the same path wins when the archive is unpacked.
tar --numeric-owner --owner=0 --group=0 -C "$R" -cf "$OUT" .
tar --numeric-owner --owner=10001 --group=10001 --no-recursion -C "$R" -rf "$OUT" \
    ./data ./etc/docs-agent ./workspace/notes
