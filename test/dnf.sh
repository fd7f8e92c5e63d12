#!/usr/bin/env bash
# Ensures Debian's dnf, rpm (rpmbuild, rpmsign) and gpg are installed, for the tests that build
# .rpm packages with rpmbuild and install them with dnf from a channel's DNF repository (pkg/httpapi
# rpm_dnf_test.go), and prints the path of dnf on stdout (everything else goes to stderr).
# Idempotent: it installs only what is missing. test/with-services.sh exports the path as
# SLIPWAY_TEST_DNF.
#
# Usage: test/dnf.sh
set -euo pipefail
. "$(dirname "$0")/debian.sh"

BIN=${SLIPWAY_DNF_BIN:-/usr/bin/dnf}

if [ ! -x "$BIN" ] || ! command -v rpmbuild >/dev/null || ! command -v rpmsign >/dev/null || ! command -v gpg >/dev/null; then
  echo "dnf.sh: installing Debian's dnf, rpm and gpg (once)" >&2
  debian_install dnf rpm gpg gpg-agent
fi
echo "dnf.sh: dnf $("$BIN" --version 2>/dev/null | head -n1), $(rpm --version)" >&2
echo "$BIN"
