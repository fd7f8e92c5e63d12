#!/usr/bin/env bash
# Ensures axe-core (the accessibility rules the browser tests run inside the pages) is cached,
# fetched once from the npm registry at a pinned version with `npm pack` and checked against the
# registry's integrity hash, and prints the path of its axe.min.js on stdout (everything else goes
# to stderr). test/with-services.sh exports the path as SLIPWAY_TEST_AXE.
#
# Usage: test/axe.sh
set -euo pipefail
. "$(dirname "$0")/debian.sh"

AXE_VERSION=4.10.3
CACHE_DIR=${SLIPWAY_CACHE_DIR:-$HOME/.cache/slipway}
DIR=$CACHE_DIR/axe-core-$AXE_VERSION
JS=$DIR/axe.min.js

if [ ! -s "$JS" ]; then
  echo "axe.sh: fetching axe-core $AXE_VERSION from the npm registry (once; cached in $DIR)" >&2
  if ! command -v npm >/dev/null; then
    echo "axe.sh: installing Debian's npm (once), to fetch axe-core" >&2
    debian_install npm
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # npm pack verifies the tarball against the registry's integrity field.
  (cd "$tmp" && npm pack --silent "axe-core@$AXE_VERSION" >&2)
  tar -xzf "$tmp/axe-core-$AXE_VERSION.tgz" -C "$tmp" package/axe.min.js package/LICENSE
  mkdir -p "$DIR"
  mv "$tmp/package/LICENSE" "$DIR/LICENSE"
  mv "$tmp/package/axe.min.js" "$JS"
fi
echo "axe.sh: axe-core $AXE_VERSION" >&2
echo "$JS"
