# Dockerfile for docs-agent: a static Rust binary in an empty (scratch) image.
#
# Stages
#   1. builder  (rust:1.95-bookworm)
#      - resolves and compiles every dependency against a dummy main.rs, so that
#        editing src/ only recompiles the crate itself (Docker layer cache);
#      - builds the real binary fully static (glibc, crt-static) for $TARGET;
#      - assembles the runtime filesystem under /rootfs with docker/rootfs.sh (which fails
#        if the binary still needs a dynamic loader): the binary, a CA bundle, minimal
#        passwd/group, an empty world-writable /tmp, the eval pack and the sample workspace
#        (root-owned and read-only, except notes/ owned by 10001), and /data and
#        /etc/docs-agent owned by 10001.
#   2. runtime  (scratch)
#      - no shell, no package manager, no libc: only what /rootfs holds;
#      - runs as the unprivileged 10001:10001.
#
# Build and run:
#   docker build -t docs-agent:local .
#   docker run --rm -it docs-agent:local "How do I configure X?"
#   (or, sandboxed next to a local model server: see compose.yaml)
#
# The binary targets x86_64 Linux by default. On an arm64 machine either build
# with `--platform linux/amd64` or pass `--build-arg TARGET=aarch64-unknown-linux-gnu`.

############################ 1. builder ##########################################
FROM rust:1.95-bookworm AS builder

ARG TARGET=x86_64-unknown-linux-gnu

# The same flags for the dependency build and the real build, otherwise cargo
# would throw the cached dependencies away. Because --target is given, these
# flags apply to the target artifacts only, not to build scripts/proc-macros.
# getrandom_backend: the getrandom system call itself (static glibc has no `getrandom` symbol
# to look up, and the file fallback it would take must be opened before the kernel sandbox).
ENV RUSTFLAGS="-C target-feature=+crt-static --cfg getrandom_backend=\"linux_getrandom\"" \
    CARGO_TERM_COLOR=never

WORKDIR /src

# ---- dependency layer: changes only when the manifest (or a bench) changes -----
# Cargo refuses a manifest whose declared targets are missing, so every file that
# Cargo.toml names must be here too: today that is the `index` bench.
COPY Cargo.toml Cargo.lock ./
COPY benches ./benches
RUN set -eux; \
    rustup target add "$TARGET"; \
    mkdir -p src/bin; \
    echo 'fn main() {}' > src/main.rs; \
    echo 'fn main() {}' > src/bin/ollama_stand_in.rs; \
    touch src/lib.rs; \
    cargo build --release --locked --target "$TARGET"; \
    # forget the dummy crate (lib and bin) so the real sources are always rebuilt
    rm -rf src \
        "target/$TARGET/release/.fingerprint/docs-agent-"* \
        "target/$TARGET/release/deps/docs_agent-"* \
        "target/$TARGET/release/deps/libdocs_agent-"* \
        "target/$TARGET/release/docs-agent"*

# ---- the crate itself -----------------------------------------------------------
COPY src ./src
RUN set -eux; \
    # COPY keeps the context's mtimes, which may be older than the dummy build
    find src -type f -exec touch {} +; \
    cargo build --release --locked --target "$TARGET" --bin docs-agent

# ---- runtime filesystem ---------------------------------------------------------
# docker/rootfs.sh, the one assembly docker/prebuilt.sh runs too: it checks the binary is
# static and runs, and packs it with a CA bundle, passwd/group, /tmp, the sample workspace (so
# the image answers without a mount) and the eval pack (so `docker compose run --rm agent
# eval` runs it), root's and read-only, and the folders uid 10001 writes: workspace/notes,
# /data (the session log) and /etc/docs-agent (the api's config, written by `init`).
# .dockerignore keeps workspace/notes/* (runtime output) out of the context.
COPY workspace ./workspace/
COPY evals ./evals/
COPY docker/rootfs.sh ./docker/
RUN set -eux; \
    docker/rootfs.sh "target/$TARGET/release/docs-agent" /rootfs.tar; \
    mkdir /rootfs; \
    # as root, -p and --numeric-owner keep the archive's modes and owners
    tar -xpf /rootfs.tar --numeric-owner -C /rootfs

############################ 2. runtime ##########################################
FROM scratch AS runtime

ARG VERSION=0.1.0
ARG REVISION=unknown

LABEL org.opencontainers.image.title="docs-agent" \
      org.opencontainers.image.description="A docs-assistant agent harness: answers questions from a product's Markdown docs, with every guardrail held by code." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="scratch"

# COPY --from keeps the owners and modes set in the builder
# (root-owned read-only workspace, notes/ owned by 10001, /tmp 1777).
COPY --from=builder /rootfs/ /

USER 10001:10001
# Not /workspace: the binary reads ./docs-agent.toml from the working directory,
# and the (mounted) docs must not be able to reconfigure the agent.
WORKDIR /

# DOCS_AGENT_REQUIRE_SANDBOX: every command enters its Landlock sandbox or refuses to run
# (exit 7); `--no-sandbox` on the command line is refused while it is set.
ENV WORKSPACE=/workspace \
    DOCS_AGENT_REQUIRE_SANDBOX=1 \
    DOCS_AGENT_SESSION_LOG=/data/sessions.db \
    LLM_BASE_URL=http://ollama:11434/v1 \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt

ENTRYPOINT ["/usr/local/bin/docs-agent"]
CMD ["--help"]
