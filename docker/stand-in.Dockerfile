# The stand-in for Ollama (src/bin/ollama_stand_in.rs) as an image, for tests where
# ollama/ollama cannot be pulled: tag it as the compose file's Ollama image.
#   docker/prebuilt.sh && docker build -f docker/stand-in.Dockerfile -t ollama/ollama:0.32.13 .
# It answers `ollama list` (compose's health check) and `ollama serve` (the default).
FROM scratch
COPY dist/ollama-stand-in /bin/ollama
ENV OLLAMA_HOST=0.0.0.0:11434
ENTRYPOINT ["/bin/ollama"]
CMD ["serve"]
