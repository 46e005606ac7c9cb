#!/bin/sh
# Builds what the images hold on this machine, for a `docker compose build` that reaches no
# registry (no rust image, no crates.io inside a container):
#
#   docker/prebuilt.sh
#   DOCS_AGENT_DOCKERFILE=docker/prebuilt.Dockerfile docker compose build
#
# It builds both binaries static (glibc, crt-static) for $TARGET, checks they need no dynamic
# loader, and writes into dist/:
#   rootfs.tar       the agent image's filesystem, made by docker/rootfs.sh as the Dockerfile's
#                    builder stage makes it (owners and modes in the archive: no root needed);
#   ollama-stand-in  the stand-in for Ollama (docker/stand-in.Dockerfile), for tests.
set -eu
cd "$(dirname "$0")/.."
TARGET=${TARGET:-x86_64-unknown-linux-gnu}
DIST=dist
# the same flags as the Dockerfile's builder stage
RUSTFLAGS='-C target-feature=+crt-static --cfg getrandom_backend="linux_getrandom"' \
    cargo build --release --locked --target "$TARGET" --bins
OUT="target/$TARGET/release"
docker/rootfs.sh --static "$OUT/ollama-stand-in"
rm -rf "$DIST" && mkdir -p "$DIST"
# the same assembly as the Dockerfile's builder stage
docker/rootfs.sh "$OUT/docs-agent" "$DIST/rootfs.tar"
install -m 0555 "$OUT/ollama-stand-in" "$DIST/ollama-stand-in"
echo "docker/prebuilt.sh: $DIST/rootfs.tar ($(du -h "$DIST/rootfs.tar" | cut -f1)) and $DIST/ollama-stand-in are ready" >&2
