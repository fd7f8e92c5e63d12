# Sourced by the scripts that install Debian packages for the tests (chromium.sh, kotlin.sh,
# axe.sh, ...). debian_install runs `apt-get update` and `apt-get install` for its packages under
# one lock of the project's, so that two of these scripts, or two test runs on one machine, wait
# for each other instead of failing on dpkg's lock ("Could not get lock
# /var/lib/dpkg/lock-frontend", seen when two runs prepared their tools at once); an apt-get of
# someone else's is waited for too (DPkg::Lock::Timeout). Output goes to stderr.
#
# Usage: . "$(dirname "$0")/debian.sh"; debian_install PACKAGE...
debian_install() {
  local sudo=
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  (
    flock 9
    $sudo apt-get -o DPkg::Lock::Timeout=600 update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "$@"
  ) 9>"${TMPDIR:-/tmp}/slipway-debian-install.lock" >&2
}
