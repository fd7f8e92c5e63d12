#!/usr/bin/env bash
# Runs a command with the services Slipway's tests need, started by this script:
#   - Postgres: the machine's server (started with pg_ctlcluster if it is installed but stopped);
#   - MinIO: built once with `go install` at a pinned version, cached, started on a free loopback
#     port with a temporary data folder, stopped (and its data removed) when the command ends.
#   - Mailpit (the SMTP relay of the mail tests): built once the same way and cached; each test
#     starts its own on free loopback ports (test/mailpit), so only its path is exported.
#   - Chromium, kotlinc and dnf (with rpm): Debian's packages, installed once (test/chromium.sh,
#     test/kotlin.sh, test/dnf.sh).
#   - axe-core: fetched once from the npm registry at a pinned version (test/axe.sh) and cached;
#     its path is exported for the browser tests' accessibility check.
# It exports the SLIPWAY_TEST_* variables the tests read (see test/testenv) and
# SLIPWAY_TEST_REQUIRE_SERVICES=1 so that a test missing a service fails instead of skipping.
#
# Usage: test/with-services.sh go test ./...
set -euo pipefail

CACHE_DIR=${SLIPWAY_CACHE_DIR:-$HOME/.cache/slipway}
BIN_DIR=$CACHE_DIR/bin

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

# --- Tools, built or installed once and cached ------------------------------------------------
# MinIO, the OpenID Connect provider, Mailpit and helm are built with `go install` at pinned
# versions; Chromium comes from Debian. On a fresh machine these take most of the first run's time, so
# they are prepared side by side (the apt install waits on the network and disk while the builds
# use the CPU); later runs find them cached and go straight on.
build_once() { # build_once PACKAGE@VERSION BINARY-NAME DESTINATION
  local tmpbin
  tmpbin=$(mktemp -d)
  (cd "$tmpbin" && GOBIN="$tmpbin" GOFLAGS=-mod=mod go install "$1")
  mv "$tmpbin/$2" "$3"
  rm -rf "$tmpbin"
}
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
MINIO=$BIN_DIR/minio-$MINIO_VERSION
# The zitadel/oidc library's example provider (a static user, in-memory clients), for the
# console's sign-in tests, which start it on a free port.
OIDC_VERSION=v3.51.17
OIDC_PROVIDER=$BIN_DIR/oidc-example-provider-$OIDC_VERSION
# Mailpit: a real SMTP relay with TLS, authentication, an HTTP API to read what arrived and a
# chaos mode to make it refuse.
MAILPIT_VERSION=v1.33.1
MAILPIT=$BIN_DIR/mailpit-$MAILPIT_VERSION
mkdir -p "$BIN_DIR"
TOOLS=$(mktemp -d)
pids=()
if [ ! -x "$MINIO" ]; then
  log "building MinIO $MINIO_VERSION once (a few minutes; cached in $BIN_DIR)"
  build_once "github.com/minio/minio@$MINIO_VERSION" minio "$MINIO" & pids+=($!)
fi
if [ ! -x "$OIDC_PROVIDER" ]; then
  log "building the example OpenID Connect provider $OIDC_VERSION once (cached in $BIN_DIR)"
  build_once "github.com/zitadel/oidc/v3/example/server@$OIDC_VERSION" server "$OIDC_PROVIDER" & pids+=($!)
fi
if [ ! -x "$MAILPIT" ]; then
  log "building Mailpit $MAILPIT_VERSION once (cached in $BIN_DIR)"
  build_once "github.com/axllent/mailpit@$MAILPIT_VERSION" mailpit "$MAILPIT" & pids+=($!)
fi
bash "$(dirname "$0")/tools.sh" helm >"$TOOLS/helm" & pids+=($!)
# These install Debian packages: one after the other (dpkg takes one install at a time).
{ bash "$(dirname "$0")/chromium.sh" >"$TOOLS/chromium" && bash "$(dirname "$0")/kotlin.sh" >"$TOOLS/kotlinc" &&
  bash "$(dirname "$0")/dnf.sh" >"$TOOLS/dnf"; } & pids+=($!)
# axe-core is only the phone test's: if it cannot be fetched, that test fails (it is required
# here) and the others still run.
bash "$(dirname "$0")/axe.sh" >"$TOOLS/axe" & axe_pid=$!
for pid in "${pids[@]}"; do
  wait "$pid" || { log "preparing the test tools failed (see above)"; exit 1; }
done
wait "$axe_pid" || log "fetching axe-core failed (see above): TestBrowserPhonePages will fail"
export SLIPWAY_TEST_OIDC_PROVIDER=$OIDC_PROVIDER
export SLIPWAY_TEST_MAILPIT=$MAILPIT
export SLIPWAY_TEST_HELM=$(cat "$TOOLS/helm")
export SLIPWAY_TEST_CHROMIUM=$(cat "$TOOLS/chromium")
# Debian's kotlinc: the Kotlin example of docs/feedback.md is compiled and run against a server.
export SLIPWAY_TEST_KOTLINC=$(cat "$TOOLS/kotlinc")
# Debian's dnf (with rpm's rpmbuild and rpmsign): a channel's DNF repository is read by dnf itself.
export SLIPWAY_TEST_DNF=$(cat "$TOOLS/dnf")
# axe-core (npm, pinned in test/axe.sh): the accessibility rules the phone test runs in the pages.
export SLIPWAY_TEST_AXE=$(cat "$TOOLS/axe")
rm -rf "$TOOLS"

free_port() { python3 - <<'PY'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

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

set +e
"$@"
status=$?
set -e
# A failed run shows what MinIO said meanwhile: a storage error in a test is then explained.
if [ "$status" != 0 ] && [ -s "$MINIO_DATA.log" ]; then
  log "the command failed; MinIO's log (last 200 lines):"
  tail -n 200 "$MINIO_DATA.log" >&2
fi
exit $status
