#!/usr/bin/env bash
# Ensures Debian's Kotlin compiler is installed, for the test that compiles and runs the Kotlin
# example of docs/feedback.md against a real server, and prints the path of kotlinc on stdout
# (everything else goes to stderr). Idempotent: it installs only when kotlinc is missing.
# test/with-services.sh exports the path as SLIPWAY_TEST_KOTLINC.
#
# Usage: test/kotlin.sh
set -euo pipefail
. "$(dirname "$0")/debian.sh"

BIN=${SLIPWAY_KOTLINC_BIN:-/usr/bin/kotlinc}

if [ ! -x "$BIN" ]; then
  echo "kotlin.sh: installing Debian's kotlin (once)" >&2
  debian_install kotlin
fi
echo "kotlin.sh: $("$BIN" -version 2>&1 | tail -n1)" >&2
echo "$BIN"
