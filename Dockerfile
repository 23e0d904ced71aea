# Mycorrhizal in one container: the binary serves the web client, the JSON API, CardDAV/CalDAV and
# its own health check, so the image needs no proxy, no shell tools and no curl.
#
#   docker build -t mycorrhizal .                 (podman: podman build --format docker ...)
#   docker run -d -p 7300:7300 -v mycorrhizal-data:/data --name mycorrhizal mycorrhizal

# Build stage: the release binary, against the locked dependency set. The registry and the build
# folder are cache mounts, so a rebuild compiles only what changed. Behind a proxy that signs TLS
# with its own authority, give cargo that bundle as a build secret:
#   docker build --secret id=cacert,src=/etc/ssl/certs/ca-certificates.crt -t mycorrhizal .
FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry,sharing=locked \
    --mount=type=cache,target=/src/target,sharing=locked \
    --mount=type=secret,id=cacert \
    if [ -s /run/secrets/cacert ]; then export CARGO_HTTP_CAINFO=/run/secrets/cacert; fi \
 && cargo build --release --locked -p mycorrhizal \
 && install -D -m 0755 target/release/mycorrhizal /out/mycorrhizal

# Runtime stage: Debian slim with the CA certificates outbound TLS needs (email API, OIDC,
# webhooks), a non-root user, and the data in a volume.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 7300 mycorrhizal \
 && useradd --system --uid 7300 --gid mycorrhizal --home-dir /data --shell /usr/sbin/nologin mycorrhizal \
 && install -d -o mycorrhizal -g mycorrhizal -m 0700 /data /backups
COPY --from=build /out/mycorrhizal /usr/local/bin/mycorrhizal
USER mycorrhizal:mycorrhizal
ENV DATA_DIR=/data \
    BIND_ADDR=0.0.0.0:7300 \
    BACKUP_DIR=/backups
VOLUME ["/data", "/backups"]
EXPOSE 7300
# The binary asks itself: GET /health/ready on BIND_ADDR (a wildcard address is asked on loopback).
# The start period covers migrations, during which nothing listens.
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 CMD ["mycorrhizal", "healthcheck"]
ENTRYPOINT ["mycorrhizal"]
CMD ["serve"]
