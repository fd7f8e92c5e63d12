#!/usr/bin/env bash
# Ensures Debian's Kotlin compiler is installed, for the test that compiles and runs the Kotlin
# example of docs/feedback.md against a real server, and prints the path of kotlinc on stdout
# (everything else goes to stderr). Idempotent: it installs only when kotlinc is missing.
# test/with-services.sh exports the path as SLIPWAY_TEST_KOTLINC. It runs after chromium.sh, not
# beside it: two apt-get installs at once fail on dpkg's lock.
#
# Usage: test/kotlin.sh
set -euo pipefail

BIN=${SLIPWAY_KOTLINC_BIN:-/usr/bin/kotlinc}

if [ ! -x "$BIN" ]; then
  echo "kotlin.sh: installing Debian's kotlin (once)" >&2
  SUDO=
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  {
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends kotlin
  } >&2
fi
echo "kotlin.sh: $("$BIN" -version 2>&1 | tail -n1)" >&2
echo "$BIN"
