#!/usr/bin/env bash
# Ensures a pinned developer tool is built and cached, then prints its path on stdout.
#
#   bash test/tools.sh helm     # Helm, for the chart tests in test/deploy
#
# Tools are built from source once with `go install` (the Go module proxy is the only source this
# needs) into $SLIPWAY_CACHE_DIR (default ~/.cache/slipway), one folder per version, so a bump of
# the pinned version builds afresh and an old cache is never used by mistake. Build output goes to
# stderr; stdout carries only the path, for `export SLIPWAY_TEST_HELM=$(bash test/tools.sh helm)`.
set -euo pipefail

HELM_VERSION=v3.22.0
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
  *)
    echo "usage: bash test/tools.sh helm" >&2
    exit 2
    ;;
esac
