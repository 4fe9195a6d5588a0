#!/usr/bin/env bash
# The whole test suite, STRESS_RUNS times (default 10), with two CPU-bound processes beside it:
# a test that only passes on an idle machine fails here. After each run it checks that nothing
# was left behind — a process of a test's supervisor, a cgroup, a runtime directory, a temporary
# directory or a registry file — and says what. Exit status 1 if any run failed or left
# anything. Started by `make test-stress` (which builds first); SWIFT names the swift driver.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${STRESS_RUNS:-10}
swift=${SWIFT:-swift}
logs=$(mktemp -d /tmp/mempressure-stress.XXXXXX)
hogs=()
stop_hogs() {
  # Our own children, by the PIDs $! gave us; still ours until we reap them below.
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${hogs[@]}"; do wait "$p" 2>/dev/null; done
  hogs=()
}
trap 'stop_hogs' EXIT
trap 'stop_hogs; echo "test-stress: interrupted (logs in $logs)" >&2; exit 130' INT TERM
for _ in 1 2; do
  sh -c 'while :; do :; done' &
  hogs+=("$!")
done

# What a test run may leave behind, one line each (empty: nothing).
leftovers() {
  local found=""
  for h in memory freezer; do
    for g in /sys/fs/cgroup/$h/mempressure-*; do [ -d "$g" ] && found+="cgroup $g"$'\n'; done
  done
  for d in /tmp/mempressure-test.* /run/mempressure-[0-9]* /tmp/mempressure-[0-9]*; do
    [ -e "$d" ] && found+="directory $d"$'\n'
  done
  for p in /proc/[0-9]*; do
    local comm
    comm=$(cat "$p/comm" 2>/dev/null) || continue
    case "$comm" in
      mempressure-wor*|mempressure-hog|mempressure-gua|mempressure-exe) found+="process ${p#/proc/} ($comm)"$'\n' ;;
    esac
    if [ "$comm" = sleep ] && grep -qa '^3199[0-9]' "$p/cmdline" 2>/dev/null; then found+="process ${p#/proc/} (a test's sleep)"$'\n'; fi
  done
  printf '%s' "$found"
}

failed=0
before=$(leftovers)
if [ -n "$before" ]; then
  echo "test-stress: the machine already holds what a test run could leave; they are not counted:" >&2
  printf '%s' "$before" | sed 's/^/  /' >&2
fi
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  if "$swift" test --skip-build --skip FreezeDryTests >"$logs/run-$i.log" 2>&1; then
    result=passed
  else
    result=FAILED
    failed=1
  fi
  # A guardian still running means a test's supervisor was never shut down: the guardian cleans
  # up after the test process now. Said, and waited for (30 s at most) before the check.
  guardians=$(leftovers | grep -c '(mempressure-gua)' || true)
  for _ in $(seq 1 300); do
    leftovers | grep -q '(mempressure-gua)' || break
    sleep 0.1
  done
  left=$(comm -13 <(printf '%s' "$before" | sort) <(leftovers | sort))
  if [ "$guardians" -gt 0 ]; then
    left+=$'\n'"$guardians supervisor(s) not shut down by their test (their guardians cleaned up after the test process)"
  fi
  echo "run $i/$runs: $result in $(( $(date +%s) - start )) s$([ -n "$left" ] && echo ', left behind:')"
  if [ -n "$left" ]; then
    printf '%s\n' "$left" | sed 's/^/  /'
    failed=1
  fi
  if [ "$result" = FAILED ]; then
    grep -E '✘ Test .* (recorded an issue|failed)' "$logs/run-$i.log" | sed 's/^/  /' | head -20
  fi
done
stop_hogs
if [ "$failed" = 0 ]; then
  echo "test-stress: $runs runs passed beside two CPU-bound processes, nothing left behind"
  rm -rf "$logs"
else
  echo "test-stress: FAILED (each run's log is in $logs)" >&2
  exit 1
fi
