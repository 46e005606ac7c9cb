#!/bin/sh
# Builds what the images hold on this machine, for a `docker compose build` that reaches no
# registry (no rust image, no crates.io inside a container):
#
#   docker/prebuilt.sh
#   DOCS_AGENT_DOCKERFILE=docker/prebuilt.Dockerfile docker compose build
#
# It builds both binaries static (glibc, crt-static) for $TARGET, checks they need no dynamic
# loader, and writes into dist/:
#   rootfs.tar       the agent image's filesystem, exactly as the Dockerfile's builder stage
#                    makes it (owners and modes in the archive, so no root is needed here);
#   ollama-stand-in  the stand-in for Ollama (docker/stand-in.Dockerfile), for tests.
set -eu
cd "$(dirname "$0")/.."
TARGET=${TARGET:-x86_64-unknown-linux-gnu}
DIST=dist
# the same flags as the Dockerfile's builder stage
RUSTFLAGS='-C target-feature=+crt-static --cfg getrandom_backend="linux_getrandom"' \
    cargo build --release --locked --target "$TARGET" --bins
OUT="target/$TARGET/release"
for bin in docs-agent ollama-stand-in; do
    # assigned first, so a readelf that fails stops the script (set -e)
    HEADERS=$(readelf -lW "$OUT/$bin"); DYNAMIC=$(readelf -dW "$OUT/$bin")
    case "$HEADERS" in *'program interpreter'*)
        echo "docker/prebuilt.sh: $OUT/$bin is dynamically linked" >&2; exit 1;; esac
    case "$DYNAMIC" in *'(NEEDED)'*)
        echo "docker/prebuilt.sh: $OUT/$bin needs shared libraries" >&2; exit 1;; esac
done
"$OUT/docs-agent" --help > /dev/null

rm -rf "$DIST" && mkdir -p "$DIST"
ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT
R="$ROOT/rootfs"
install -D -m 0555 "$OUT/docs-agent" "$R/usr/local/bin/docs-agent"
install -D -m 0444 /etc/ssl/certs/ca-certificates.crt "$R/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\ndocs-agent:x:10001:10001:docs-agent:/nonexistent:/sbin/nologin\n' > "$R/etc/passwd"
printf 'root:x:0:\ndocs-agent:x:10001:\n' > "$R/etc/group"
chmod 0444 "$R/etc/passwd" "$R/etc/group"
mkdir -p "$R/tmp" && chmod 1777 "$R/tmp"
cp -R workspace "$R/workspace"
cp -R evals "$R/evals"
find "$R/workspace/notes" -mindepth 1 ! -name .gitkeep -exec rm -rf {} +
chmod -R u=rwX,go=rX "$R/workspace" "$R/evals"
mkdir -p "$R/data" "$R/etc/docs-agent"
chmod 0750 "$R/workspace/notes"
chmod 0700 "$R/data" "$R/etc/docs-agent"
# Everything root's, then the three folders uid 10001 writes appended as its: a later entry
# for the same path wins when the archive is unpacked.
tar --numeric-owner --owner=0 --group=0 -C "$R" -cf "$DIST/rootfs.tar" .
tar --numeric-owner --owner=10001 --group=10001 --no-recursion -C "$R" -rf "$DIST/rootfs.tar" \
    ./data ./etc/docs-agent ./workspace/notes
install -m 0555 "$OUT/ollama-stand-in" "$DIST/ollama-stand-in"
echo "docker/prebuilt.sh: $DIST/rootfs.tar ($(du -h "$DIST/rootfs.tar" | cut -f1)) and $DIST/ollama-stand-in are ready" >&2
