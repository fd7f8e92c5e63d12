#!/usr/bin/env bash
# Runs a command with the services Slipway's tests need, started by this script:
#   - Postgres: the machine's server (started with pg_ctlcluster if it is installed but stopped);
#   - MinIO: built once with `go install` at a pinned version, cached, started on a free loopback
#     port with a temporary data folder, stopped (and its data removed) when the command ends.
# It exports the SLIPWAY_TEST_* variables the tests read (see test/testenv) and
# SLIPWAY_TEST_REQUIRE_SERVICES=1 so that a test missing a service fails instead of skipping.
#
# Usage: test/with-services.sh go test ./...
set -euo pipefail

MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
CACHE_DIR=${SLIPWAY_CACHE_DIR:-$HOME/.cache/slipway}
BIN_DIR=$CACHE_DIR/bin
MINIO=$BIN_DIR/minio-$MINIO_VERSION

log() { echo "with-services: $*" >&2; }

# --- Postgres -----------------------------------------------------------------------------------
export SLIPWAY_TEST_DATABASE_URL=${SLIPWAY_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
if command -v pg_isready >/dev/null && ! pg_isready -q -h 127.0.0.1 -p 5432; then
  if command -v pg_ctlcluster >/dev/null; then
    log "starting the local Postgres cluster"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
fi

# --- MinIO --------------------------------------------------------------------------------------
if [ ! -x "$MINIO" ]; then
  log "building MinIO $MINIO_VERSION once (a few minutes; cached in $BIN_DIR)"
  mkdir -p "$BIN_DIR"
  tmpbin=$(mktemp -d)
  (cd "$tmpbin" && GOBIN="$tmpbin" GOFLAGS=-mod=mod go install "github.com/minio/minio@$MINIO_VERSION")
  mv "$tmpbin/minio" "$MINIO"
  rm -rf "$tmpbin"
fi

free_port() { python3 - <<'PY'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

# --- An OpenID Connect provider for the console's sign-in tests ---------------------------------
# The zitadel/oidc library's example provider (a static user, in-memory clients): built once with
# `go install` at a pinned version and cached like MinIO; tests start it on a free port.
OIDC_VERSION=v3.51.17
OIDC_PROVIDER=$BIN_DIR/oidc-example-provider-$OIDC_VERSION
if [ ! -x "$OIDC_PROVIDER" ]; then
  log "building the example OpenID Connect provider $OIDC_VERSION once (cached in $BIN_DIR)"
  tmpbin=$(mktemp -d)
  (cd "$tmpbin" && GOBIN="$tmpbin" GOFLAGS=-mod=mod go install "github.com/zitadel/oidc/v3/example/server@$OIDC_VERSION")
  mv "$tmpbin/server" "$OIDC_PROVIDER"
  rm -rf "$tmpbin"
fi
export SLIPWAY_TEST_OIDC_PROVIDER=$OIDC_PROVIDER

MINIO_DATA=$(mktemp -d -t slipway-minio.XXXXXX)
MINIO_PORT=$(free_port)
MINIO_CONSOLE_PORT=$(free_port)
export MINIO_ROOT_USER=slipwaytest
export MINIO_ROOT_PASSWORD=slipwaytest-secret-$RANDOM$RANDOM
MINIO_BROWSER=off MINIO_UPDATE=off "$MINIO" server --quiet --address "127.0.0.1:$MINIO_PORT" \
  --console-address "127.0.0.1:$MINIO_CONSOLE_PORT" "$MINIO_DATA" >"$MINIO_DATA.log" 2>&1 &
MINIO_PID=$!
cleanup() {
  kill "$MINIO_PID" 2>/dev/null || true
  wait "$MINIO_PID" 2>/dev/null || true
  rm -rf "$MINIO_DATA" "$MINIO_DATA.log"
}
trap cleanup EXIT INT TERM

for i in $(seq 1 100); do
  if curl -fsS "http://127.0.0.1:$MINIO_PORT/minio/health/live" >/dev/null 2>&1; then break; fi
  if ! kill -0 "$MINIO_PID" 2>/dev/null; then log "MinIO exited:"; cat "$MINIO_DATA.log" >&2; exit 1; fi
  [ "$i" = 100 ] && { log "MinIO did not become ready"; cat "$MINIO_DATA.log" >&2; exit 1; }
  sleep 0.2
done

export SLIPWAY_TEST_S3_ENDPOINT=http://127.0.0.1:$MINIO_PORT
export SLIPWAY_TEST_S3_ACCESS_KEY=$MINIO_ROOT_USER
export SLIPWAY_TEST_S3_SECRET_KEY=$MINIO_ROOT_PASSWORD
export SLIPWAY_TEST_S3_REGION=us-east-1
# The MinIO binary itself, for tests that stop and restart the server (fault injection).
export SLIPWAY_TEST_MINIO_BIN=$MINIO
export SLIPWAY_TEST_MINIO_PID=$MINIO_PID
export SLIPWAY_TEST_MINIO_DATA=$MINIO_DATA
export SLIPWAY_TEST_REQUIRE_SERVICES=1
log "MinIO on $SLIPWAY_TEST_S3_ENDPOINT, Postgres at 127.0.0.1:5432"
export SLIPWAY_TEST_HELM=$(bash "$(dirname "$0")/tools.sh" helm)
export SLIPWAY_TEST_CHROMIUM=$(bash "$(dirname "$0")/chromium.sh")

set +e
"$@"
status=$?
set -e
exit $status
