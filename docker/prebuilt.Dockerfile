# The agent image from what docker/prebuilt.sh built on this machine: the same runtime as the
# Dockerfile's last stage, for a build that reaches no registry.
#   docker/prebuilt.sh && DOCS_AGENT_DOCKERFILE=docker/prebuilt.Dockerfile docker compose build
# tests/compose_policy.rs checks that this stage and the Dockerfile's runtime stage agree.
FROM scratch AS runtime

ARG VERSION=0.1.0
ARG REVISION=unknown

LABEL org.opencontainers.image.title="docs-agent" \
      org.opencontainers.image.description="A docs-assistant agent harness: answers questions from a product's Markdown docs, with every guardrail held by code." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.base.name="scratch"

# The archive keeps the owners and modes docker/prebuilt.sh set
# (root-owned read-only workspace, notes/, /data and /etc/docs-agent owned by 10001, /tmp 1777).
ADD dist/rootfs.tar /

USER 10001:10001
WORKDIR /

ENV WORKSPACE=/workspace \
    DOCS_AGENT_REQUIRE_SANDBOX=1 \
    DOCS_AGENT_SESSION_LOG=/data/sessions.db \
    LLM_BASE_URL=http://ollama:11434/v1 \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt

ENTRYPOINT ["/usr/local/bin/docs-agent"]
CMD ["--help"]
