#!/usr/bin/env bash
# Runs the whole test suite N times, each time in a fresh clone of the current commit, the way CI
# does (`CI=true bash .ci/run` in a sibling folder, so that ../shared is beside it), and prints how
# many runs passed and the name of every test that failed, with the run it failed in. A failing
# run's full output is kept in the log folder.
#
# Usage: test/soak.sh [N] (default 10). SOAK_LOGS sets the log folder (default ../soak-logs).
set -uo pipefail

runs=${1:-10}
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
parent=$(dirname "$root")
logs=${SOAK_LOGS:-$parent/soak-logs}
clone=$parent/soak-clone
commit=$(git -C "$root" rev-parse --short HEAD) # every run tests this commit, whatever lands meanwhile
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
  echo "soak: uncommitted changes are not tested; the clone is of $commit" >&2
fi
mkdir -p "$logs"
passed=0
failures=()
start=$(date +%s)
for i in $(seq 1 "$runs"); do
  rm -rf "$clone"
  git clone -q "$root" "$clone" && git -C "$clone" checkout -q "$commit"
  log=$logs/run-$i.log
  t0=$(date +%s)
  (cd "$clone" && CI=true bash .ci/run) >"$log" 2>&1
  status=$?
  took=$(( $(date +%s) - t0 ))
  if [ "$status" = 0 ]; then
    passed=$((passed + 1))
    echo "soak: run $i/$runs passed in ${took}s"
    rm -f "$log"
  else
    # Failed tests (deepest names first as go test prints them), failed packages, data races.
    names=$(grep -E '^\s*--- FAIL: ' "$log" | sed -E 's/^\s*--- FAIL: ([^ ]+).*/\1/' | sort -u)
    pkgs=$(grep -E '^FAIL\s+\S+' "$log" | awk '{print $2}' | sort -u)
    races=$(grep -c 'WARNING: DATA RACE' "$log")
    [ -n "$names" ] || names="(no test name: see $log)"
    echo "soak: run $i/$runs FAILED in ${took}s (log: $log)"
    for n in $names; do echo "soak:   test $n"; failures+=("run $i: $n"); done
    for p in $pkgs; do echo "soak:   package $p"; done
    [ "$races" = 0 ] || echo "soak:   $races data race report(s)"
  fi
done
rm -rf "$clone"
echo "soak: $passed of $runs runs passed ($commit, $(( ($(date +%s) - start) / 60 )) min)"
for f in "${failures[@]}"; do echo "soak: failed: $f"; done
[ "$passed" = "$runs" ]
