#!/usr/bin/env bash
# Runs the whole test suite N times, each time in a fresh clone of the current commit, the way CI
# does (`CI=true bash .ci/run` in a sibling folder, so that ../shared is beside it), and prints how
# many runs passed and the name of every test that failed, with the run it failed in. A failing
# run's full output is kept in the log folder.
#
# Usage: test/soak.sh [--hog[=CORES]] [N] (default 10 runs). SOAK_LOGS sets the log folder
# (default ../soak-logs).
#
# --hog runs a CPU hog beside the suite for the whole soak, so that the runs see a loaded machine
# as a shared CI runner does: CORES processes (default 1), each a busy loop pinned to a core of
# its own (the last cores, with taskset), or stress-ng's CPU workers when stress-ng is installed
# (`apt-get install stress-ng`). A test that fails only beside the hog asserts something a busy
# machine can change (a wall-clock bound): that is a defect of the test, or a real stall.
set -uo pipefail

hog=0
while [ $# -gt 0 ]; do
  case $1 in
    --hog) hog=1 ;;
    --hog=*) hog=${1#--hog=} ;;
    -*) echo "soak: unknown option $1 (usage: test/soak.sh [--hog[=CORES]] [N])" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
if ! [[ $hog =~ ^[0-9]+$ ]]; then
  echo "soak: --hog takes a number of cores, not $hog" >&2
  exit 2
fi
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

# The hog: started once, ended when the script ends (however it ends), by the ids it was given.
hog_pids=()
stop_hog() { [ ${#hog_pids[@]} = 0 ] || kill "${hog_pids[@]}" 2>/dev/null; wait "${hog_pids[@]}" 2>/dev/null; hog_pids=(); }
trap stop_hog EXIT
trap 'exit 130' INT TERM
if [ "$hog" -gt 0 ]; then
  cores=$(nproc)
  if command -v stress-ng >/dev/null; then
    stress-ng --cpu "$hog" --cpu-method loop --quiet &
    hog_pids+=($!)
    echo "soak: CPU hog: stress-ng --cpu $hog (pid ${hog_pids[*]}) beside the suite on $cores cores"
  else
    for k in $(seq 1 "$hog"); do
      core=$(( (cores - k % cores) % cores ))
      if command -v taskset >/dev/null; then
        taskset -c "$core" bash -c 'while :; do :; done' &
      else
        bash -c 'while :; do :; done' &
      fi
      hog_pids+=($!)
    done
    echo "soak: CPU hog: $hog busy loop(s) (pids ${hog_pids[*]}) beside the suite on $cores cores"
  fi
fi

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
hogged=""
[ "$hog" = 0 ] || hogged=", beside a CPU hog of $hog core(s)"
echo "soak: $passed of $runs runs passed ($commit, $(( ($(date +%s) - start) / 60 )) min$hogged)"
for f in "${failures[@]}"; do echo "soak: failed: $f"; done
[ "$passed" = "$runs" ]
