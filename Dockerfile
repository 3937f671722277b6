# Modgud for Swift: a multi-stage image. The build stage compiles a release binary with the
# Swift toolchain and libpq's headers; the runtime stage is Debian slim with libpq only.
#   docker build -t modgud .
#   docker run --rm -e MODGUD_DATABASE_URL=... -e MODGUD_MASTER_KEY=... -p 8080:8080 modgud serve
FROM swift:6.3-bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpq-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Dependencies first, so a source change does not refetch them.
COPY Package.swift ./
RUN swift package resolve
COPY Sources Sources
COPY schema schema
COPY Tests Tests
RUN swift build -c release --product modgud --static-swift-stdlib \
 && install -D "$(swift build -c release --show-bin-path)/modgud" /out/modgud

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libpq5 ca-certificates tzdata curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home /nonexistent --shell /usr/sbin/nologin modgud
COPY --from=build /out/modgud /usr/local/bin/modgud
USER modgud
ENV MODGUD_HOST=0.0.0.0 MODGUD_PORT=8080
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=2s --retries=3 CMD curl -fsS http://127.0.0.1:8080/health/live || exit 1
ENTRYPOINT ["modgud"]
CMD ["serve"]
