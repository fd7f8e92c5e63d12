# Slipway's build, run and test entry points. `make run` and `make test` need nothing set up by
# hand on a machine with Go and a local Postgres: the test services (MinIO, a fresh database) are
# built, started and stopped by test/with-services.sh.

GO       ?= go
BIN      ?= bin/slipway
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X github.com/slipwayhq/slipway/pkg/buildinfo.Version=$(VERSION) -X github.com/slipwayhq/slipway/pkg/buildinfo.Commit=$(COMMIT)

# The Dockerfile builds with exactly this command line (CGO_ENABLED=0, -trimpath, LDFLAGS).
.PHONY: build
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/slipway

# Runs the service on its embedded defaults: local Postgres (database "slipway", created on the
# first start because this target sets SLIPWAY_CREATE_DATABASE=true; nothing else creates a
# database) and filesystem storage in ./data/objects, on http://localhost:8080.
.PHONY: run
run: build
	@echo "Slipway on http://localhost:8080 — create a token with: $(BIN) token create --name me --scope admin"
	SLIPWAY_CREATE_DATABASE=true $(BIN) serve

# The whole test suite, with real Postgres and MinIO, under the race detector.
.PHONY: test
test: lint
	bash test/with-services.sh $(GO) test -race -count=1 -timeout 30m ./...
	@# Parse allocations against their bounds, as the shipped binary makes them (-race allocates more).
	$(GO) test -count=1 -run '^TestParseWithinBound$$' ./pkg/appinfo/platforms/

# Dependency vulnerabilities: govulncheck (built from the module proxy, pinned in test/tools.sh)
# over the whole module, with the vulnerability database that the module proxy serves as
# golang.org/x/vulndb (a dated snapshot, indexed once into the cache), so it needs no network but
# the module proxy. It fails on a vulnerability the code calls in a module dependency (go get fixes
# it) and warns about those of the standard library, which only a newer Go fixes (test/lint/
# vulnreport). VULNDB=online uses govulncheck's own, live database instead, where it is reachable.
.PHONY: vuln
vuln:
	@govulncheck=$$(bash test/tools.sh govulncheck) || exit 1; \
	if [ "$(VULNDB)" = online ]; then db_flag=""; else db=$$(bash test/tools.sh vulndb) || exit 1; db_flag="-db file://$$db"; fi; \
	mkdir -p bin; $$govulncheck $$db_flag -format json ./... > bin/govulncheck.json; code=$$?; \
	if [ $$code -ne 0 ] && [ $$code -ne 3 ]; then echo "make vuln: govulncheck failed (exit $$code)" >&2; exit 1; fi; \
	$(GO) run ./test/lint/vulnreport < bin/govulncheck.json

# make lint runs vuln too (CI does); LINT_VULN=0 leaves it out, saying so, for a quick local run.
LINT_VULN ?= 1
.PHONY: lint
lint: $(if $(filter 1,$(LINT_VULN)),vuln,vuln-skipped)
	@unformatted=$$(gofmt -l cmd pkg test migrations); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@# A pooled *gin.Context must never be used as a context.Context (test/lint/ginctx).
	$(GO) build -o bin/ginctx ./test/lint/ginctx/cmd/ginctx
	$(GO) vet -vettool=$(CURDIR)/bin/ginctx ./...

.PHONY: vuln-skipped
vuln-skipped:
	@echo "make lint: govulncheck skipped (LINT_VULN=0); run make vuln"

# Short fuzzing of every parser (each target FUZZTIME).
FUZZTIME ?= 20s
.PHONY: fuzz
fuzz:
	@for pkg in ./pkg/appinfo/apple ./pkg/appinfo/android ./pkg/appinfo/harmony ./pkg/appinfo/windows ./pkg/appinfo/linux ./pkg/debuginfo ./pkg/zipread; do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$target"; $(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 100x $$pkg || exit 1; \
	  done; \
	done

# End-to-end benchmark: a 256 MiB .ipa through Slipway into MinIO and the
# filesystem against direct writes, peak RSS, parse reads and read-API latency; writes
# docs/benchmarks.md. Takes a few minutes.
.PHONY: bench
bench:
	bash test/with-services.sh $(GO) run ./test/bench -out docs/benchmarks.md

# The container image for linux/amd64 and linux/arm64 with docker buildx (the Dockerfile's build
# stage cross-compiles on the builder's platform, so no emulation is needed). Without a running
# buildx builder it says so and fails. By default the image is written as an OCI archive to
# IMAGE_OCI (IMAGE_OUTPUT takes any buildx --output); PUSH=1 pushes IMAGE to its registry instead.
# test/deploy (TestImageMultiArch) builds it where a builder exists and checks each platform's binary.
#
# Attestations: SLSA provenance (mode=max), made by BuildKit itself, and an SPDX SBOM, made by
# BuildKit's scanner image (docker/buildkit-syft-scanner, which the builder pulls: mirror it for an
# offline builder, or SBOM=0 to leave the SBOM out). PROVENANCE=0 leaves the provenance out. Both
# travel with the image (in the OCI archive, or pushed beside it): `docker buildx imagetools
# inspect IMAGE --format '{{ json .SBOM }}'` reads the SBOM back.
IMAGE           ?= ghcr.io/slipwayhq/slipway:$(VERSION)
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_OCI       ?= bin/slipway-image.oci.tar
IMAGE_OUTPUT    ?= type=oci,dest=$(IMAGE_OCI)
SBOM            ?= 1
PROVENANCE      ?= 1
IMAGE_ATTEST    := $(if $(filter 1,$(SBOM)),--sbom=true) $(if $(filter 1,$(PROVENANCE)),--provenance=mode=max,--provenance=false)
.PHONY: image
image:
	@if ! docker buildx version >/dev/null 2>&1; then \
	  echo "make image: docker buildx is not available: install Docker with the buildx plugin (https://docs.docker.com/build/)" >&2; exit 1; fi
	@if ! docker buildx inspect --bootstrap >/dev/null 2>&1; then \
	  echo "make image: no buildx builder is running: start the Docker engine, or create a builder with 'docker buildx create --use'" >&2; exit 1; fi
	@if ! grep -q '^ARG GO_IMAGE_DIGEST=@sha256:' Dockerfile || ! grep -q '^ARG RUNTIME_IMAGE_DIGEST=@sha256:' Dockerfile; then \
	  echo "make image: note: the base images are pinned by tag only; 'make pin-images' pins them by digest (docs/deploy.md, Base image digests)" >&2; fi
	@mkdir -p $(dir $(IMAGE_OCI))
	docker buildx build --platform $(IMAGE_PLATFORMS) \
	  --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) $(IMAGE_ATTEST) \
	  $(if $(PUSH),--push,--output $(IMAGE_OUTPUT)) .

# Pins the Dockerfile's base images by digest: resolves golang:$GO_VERSION and the distroless
# runtime tag to their current multi-platform index digests through the registry (docker buildx
# imagetools), and writes them into the GO_IMAGE_DIGEST and RUNTIME_IMAGE_DIGEST defaults. Run it
# where the registries are reachable, review the diff and commit it; run it again to take a newer
# base image (a Go patch release, distroless security fixes).
.PHONY: pin-images
pin-images:
	@go_version=$$(sed -n 's/^ARG GO_VERSION=//p' Dockerfile); \
	go_digest=$$(docker buildx imagetools inspect "golang:$$go_version" --format '{{ .Manifest.Digest }}') || exit 1; \
	runtime_digest=$$(docker buildx imagetools inspect gcr.io/distroless/static-debian12:nonroot --format '{{ .Manifest.Digest }}') || exit 1; \
	case "$$go_digest$$runtime_digest" in *sha256:*sha256:*) ;; *) echo "make pin-images: no digest resolved" >&2; exit 1;; esac; \
	sed -i "s|^ARG GO_IMAGE_DIGEST=.*|ARG GO_IMAGE_DIGEST=@$$go_digest|; s|^ARG RUNTIME_IMAGE_DIGEST=.*|ARG RUNTIME_IMAGE_DIGEST=@$$runtime_digest|" Dockerfile; \
	echo "golang:$$go_version@$$go_digest"; echo "gcr.io/distroless/static-debian12:nonroot@$$runtime_digest"

.PHONY: clean
clean:
	rm -rf bin data
