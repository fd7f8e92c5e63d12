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

.PHONY: lint
lint:
	@unformatted=$$(gofmt -l cmd pkg test migrations); if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@# A pooled *gin.Context must never be used as a context.Context (test/lint/ginctx).
	$(GO) build -o bin/ginctx ./test/lint/ginctx/cmd/ginctx
	$(GO) vet -vettool=$(CURDIR)/bin/ginctx ./...

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
IMAGE           ?= ghcr.io/slipwayhq/slipway:$(VERSION)
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_OCI       ?= bin/slipway-image.oci.tar
IMAGE_OUTPUT    ?= type=oci,dest=$(IMAGE_OCI)
.PHONY: image
image:
	@if ! docker buildx version >/dev/null 2>&1; then \
	  echo "make image: docker buildx is not available: install Docker with the buildx plugin (https://docs.docker.com/build/)" >&2; exit 1; fi
	@if ! docker buildx inspect --bootstrap >/dev/null 2>&1; then \
	  echo "make image: no buildx builder is running: start the Docker engine, or create a builder with 'docker buildx create --use'" >&2; exit 1; fi
	@mkdir -p $(dir $(IMAGE_OCI))
	docker buildx build --platform $(IMAGE_PLATFORMS) \
	  --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE) \
	  $(if $(PUSH),--push,--output $(IMAGE_OUTPUT)) .

.PHONY: clean
clean:
	rm -rf bin data
