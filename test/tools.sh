#!/usr/bin/env bash
# Ensures a pinned developer tool is built and cached, then prints its path on stdout.
#
#   bash test/tools.sh helm         # Helm, for the chart tests in test/deploy
#   bash test/tools.sh govulncheck  # govulncheck, for make vuln
#   bash test/tools.sh vulndb       # Go's vulnerability database, indexed, for make vuln
#
# Tools are built from source once with `go install` (the Go module proxy is the only source this
# needs) into $SLIPWAY_CACHE_DIR (default ~/.cache/slipway), one folder per version, so a bump of
# the pinned version builds afresh and an old cache is never used by mistake. Build output goes to
# stderr; stdout carries only the path, for `export SLIPWAY_TEST_HELM=$(bash test/tools.sh helm)`.
set -euo pipefail

HELM_VERSION=v3.22.0
GOVULNCHECK_VERSION=v1.9.0
# Go's vulnerability database as the module proxy serves it (golang.org/x/vulndb: its data/osv
# holds every report): a snapshot, so bump it to take newer reports (go list -m -versions
# golang.org/x/vulndb). Its own indexdb command turns it into the database layout govulncheck
# reads with -db file://.
VULNDB_VERSION=v0.0.0-20261105234957-e22db6528018
CACHE_DIR=${SLIPWAY_CACHE_DIR:-$HOME/.cache/slipway}

log() { echo "tools.sh: $*" >&2; }

# ensure_go_tool NAME MODULE@VERSION DIR: builds MODULE into DIR unless DIR/NAME exists.
ensure_go_tool() {
  local name=$1 pkg=$2 dir=$3
  if [ ! -x "$dir/$name" ]; then
    log "building $pkg once (a few minutes; cached in $dir)"
    mkdir -p "$dir"
    local tmp
    tmp=$(mktemp -d)
    # Built outside the repository so its go.mod is not consulted or changed.
    (cd "$tmp" && GOBIN="$tmp" GOFLAGS=-mod=mod go install "$pkg") >&2
    mv "$tmp/$name" "$dir/$name"
    rm -rf "$tmp"
  fi
  echo "$dir/$name"
}

case "${1:-}" in
  helm)
    ensure_go_tool helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" "$CACHE_DIR/bin-helm-$HELM_VERSION"
    ;;
  govulncheck)
    ensure_go_tool govulncheck "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION" "$CACHE_DIR/bin-govulncheck-$GOVULNCHECK_VERSION"
    ;;
  vulndb)
    db="$CACHE_DIR/vulndb-$VULNDB_VERSION"
    if [ ! -f "$db/index/db.json" ]; then
      indexdb=$(ensure_go_tool indexdb "golang.org/x/vulndb/cmd/indexdb@$VULNDB_VERSION" "$CACHE_DIR/bin-indexdb-$VULNDB_VERSION")
      src=$( (cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION") | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
      [ -d "$src/data/osv" ] || { log "golang.org/x/vulndb@$VULNDB_VERSION has no data/osv"; exit 1; }
      log "indexing the vulnerability database of $VULNDB_VERSION once (cached in $db)"
      rm -rf "$db.tmp" && "$indexdb" -vulns "$src/data/osv" -out "$db.tmp" >&2 && mv "$db.tmp" "$db"
    fi
    echo "$db"
    ;;
  *)
    echo "usage: bash test/tools.sh helm|govulncheck|vulndb" >&2
    exit 2
    ;;
esac
