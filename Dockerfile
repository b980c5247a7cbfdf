# Countersign's container image: a static binary on distroless, as a non-root
# user, its data in the /data volume. Build it with the version stamped:
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t countersign .
# The build stage compiles with `make binary`, the same compile `make build`
# runs after `make generate`; the generated files (templ, the esbuild bundle,
# the icons) are committed, so the stage needs Go alone, not Node.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN make binary VERSION=${VERSION} \
 && ./countersign version \
 && mkdir -p /out/data \
 && cp countersign /out/countersign

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/countersign /countersign
# An empty /data owned by the image's user, so that a new volume mounted
# there is writable by it (Docker copies the ownership into the volume).
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV COUNTERSIGN_DATA=/data \
    COUNTERSIGN_ADDR=:8080
VOLUME ["/data"]
EXPOSE 8080
# Every waiting agent and open ask page holds a connection, and so an open
# file: run with --ulimit nofile=65536:65536 (compose.yaml sets it) for
# thousands of them (docs/deploy.md).
# distroless has no shell or curl: the binary probes itself (GET /readyz).
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 CMD ["/countersign", "healthcheck"]
ENTRYPOINT ["/countersign"]
CMD ["serve"]
