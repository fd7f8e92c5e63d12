# syntax=docker/dockerfile:1
#
# Slipway's container image: a static binary on distroless, run as a non-root user.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#                --build-arg COMMIT=$(git rev-parse HEAD) -t slipway .
#
# Both platforms at once (`make image` runs this):
#
#   docker buildx build --platform linux/amd64,linux/arm64 ... .
#
# The go build line below is the Makefile's `build` target, flag for flag (CGO_ENABLED=0,
# -trimpath, -ldflags "-s -w -X ...Version -X ...Commit"); test/deploy checks that the two never
# drift. GOOS/GOARCH only select the target platform and are not build flags.
#
# Multi-arch: the build stage runs on the builder's own platform ($BUILDPLATFORM) and
# cross-compiles for the image's platform. BuildKit sets TARGETOS and TARGETARCH for each platform
# of --platform; they are declared below WITHOUT a default, because a default given in the stage
# (ARG TARGETARCH=amd64) would replace BuildKit's value and put an amd64 binary into the arm64
# image. The final stage runs nothing, so no emulation (QEMU) is needed for either platform.
# test/deploy cross-compiles the RUN line for arm64 and checks the ELF header, and where a buildx
# builder exists builds both platforms and checks each image's binary.
#
# No HEALTHCHECK: the image has no shell and no HTTP client, and probes belong to the
# orchestrator (Kubernetes probes /healthz and /readyz, see charts/slipway). deploy/docker-compose.yml
# declares no healthcheck for Slipway either, for the same reason.

ARG GO_VERSION=1.26.8
# The base images' digests ("@sha256:..."), pinning them beyond their tags; `make pin-images` sets
# them where a registry is reachable (docs/deploy.md, "Base image digests"). Empty: by tag only.
ARG GO_IMAGE_DIGEST=
ARG RUNTIME_IMAGE_DIGEST=

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}${GO_IMAGE_DIGEST} AS build
WORKDIR /src
# Modules first, so source edits do not invalidate the download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
# Set by BuildKit from --platform (linux/arm64 -> linux, arm64); no defaults, see above. A plain
# `docker build` with BuildKit sets them to the engine's platform.
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags "-s -w -X github.com/slipwayhq/slipway/pkg/buildinfo.Version=${VERSION} -X github.com/slipwayhq/slipway/pkg/buildinfo.Commit=${COMMIT}" -o /out/slipway ./cmd/slipway

# distroless/static: CA certificates (S3 over https), tzdata (SLIPWAY_TIMEZONE), /etc/passwd with
# the nonroot user (65532), no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot${RUNTIME_IMAGE_DIGEST}
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="slipway" \
      org.opencontainers.image.description="Self-hosted app distribution service (Zealot-compatible API)" \
      org.opencontainers.image.source="https://github.com/slipwayhq/slipway" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
COPY --from=build /out/slipway /slipway
# Numeric, so Kubernetes' runAsNonRoot can verify it without an /etc/passwd lookup.
USER 65532:65532
# The nonroot user's home: writable, so the default file://./data/objects storage works in a bare
# `docker run` (Kubernetes and compose set SLIPWAY_STORAGE_URL to S3).
WORKDIR /home/nonroot
EXPOSE 8080
ENTRYPOINT ["/slipway"]
CMD ["serve"]
