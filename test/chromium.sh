#!/usr/bin/env bash
# Ensures Debian's chromium is installed, for the browser tests of the release pages, and prints
# the path of its binary on stdout (everything else goes to stderr). Idempotent: it installs only
# when the binary is missing. test/with-services.sh exports the path as SLIPWAY_TEST_CHROMIUM.
#
# Usage: test/chromium.sh
set -euo pipefail
. "$(dirname "$0")/debian.sh"

BIN=${SLIPWAY_CHROMIUM_BIN:-/usr/bin/chromium}

if [ ! -x "$BIN" ]; then
  echo "chromium.sh: installing Debian's chromium (once)" >&2
  debian_install chromium fonts-dejavu-core
fi
echo "chromium.sh: $("$BIN" --version 2>/dev/null)" >&2
echo "$BIN"
