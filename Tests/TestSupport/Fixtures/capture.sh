#!/usr/bin/env bash
# Captures the golden /proc fixtures the tests read, from real processes started here.
#
#   Tests/TestSupport/Fixtures/capture.sh [BUILD_DIR]     (default .build/debug; run from the repo top)
#
# For each process it stops it (SIGSTOP: all of them are started by this script), copies
# /proc/PID/{smaps,smaps_rollup,stat,status,cgroup}, writes expected.json with the totals the
# kernel itself computed (smaps_rollup, read with awk, not with our parser) and the number of
# region headers (grep), and continues it. It also records two VM reports of the hog taken
# before and after its heap grew, and the `mempressure diff` of them.
set -euo pipefail
build=${1:-.build/debug}
here=$(cd "$(dirname "$0")" && pwd)
hog="$build/mempressure-hog"
mp="$build/mempressure"
[ -x "$hog" ] && [ -x "$mp" ] || { echo "build first: swift build" >&2; exit 1; }

tmp=$(mktemp -d /tmp/mempressure-fixture.XXXXXX)
pids=()
cleanup() {
  exec 3>&- 4<&- 2>/dev/null || true
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

rm -rf "$here/proc" "$here/reports"
mkdir -p "$here/proc" "$here/reports"

wait_state() {  # pid letter
  for _ in $(seq 1 1000); do
    [ "$(awk '/^State:/ {print $2}' /proc/$1/status)" = "$2" ] && return 0
    sleep 0.01
  done
  echo "pid $1 never reached state $2" >&2; exit 1
}

wait_comm() {  # pid name: until the forked shell has exec'd the program
  for _ in $(seq 1 1000); do
    [ "$(cat /proc/$1/comm)" = "$2" ] && return 0
    sleep 0.01
  done
  echo "pid $1 never became $2" >&2; exit 1
}

capture() {  # pid label [extra-json]
  local pid=$1 label=$2 extra=${3:-null}
  kill -STOP "$pid"; wait_state "$pid" T
  local d="$here/proc/$pid"
  mkdir -p "$d"
  for f in smaps smaps_rollup stat status cgroup; do cat "/proc/$pid/$f" > "$d/$f"; done
  local regions
  regions=$(grep -c -E '^[0-9a-f]+-[0-9a-f]+ ' "$d/smaps")
  {
    printf '{"label":"%s","pid":%s,"regionCount":%s,"info":%s,"rollup":{' "$label" "$pid" "$regions" "$extra"
    awk 'NR > 1 && $3 == "kB" { sub(":", "", $1); printf "%s\"%s\":%d", (n++ ? "," : ""), $1, $2 * 1024 }' "$d/smaps_rollup"
    printf '}}\n'
  } > "$d/expected.json"
  kill -CONT "$pid"
  echo "captured $label: pid $pid, $regions regions"
}

# 1. The hog: dirty, a clean file mapping, purgeable memory, and files with awkward names.
mkdir -p "$tmp/odd"
mkfifo "$tmp/in" "$tmp/out"
"$hog" --dirty 4m --file "$tmp/data.bin" --file-bytes 2m --purgeable 3m --odd-files "$tmp/odd" <"$tmp/in" >"$tmp/out" &
hogpid=$!
pids+=("$hogpid")
exec 3>"$tmp/in" 4<"$tmp/out"
read -r ready <&4
info=${ready#ready }
capture "$hogpid" hog "$info"

# 2. A Python interpreter (many shared libraries), 3. sleep (a minimal C program).
python3 -c 'import json, sqlite3, ssl, time; time.sleep(3600)' &
pids+=("$!")
wait_comm "$!" python3
sleep 0.5  # let it import before the snapshot (fixture capture only; tests never sleep)
capture "$!" python3
sleep 3600 &
pids+=("$!")
wait_comm "$!" sleep
capture "$!" sleep

# Reports before and after the hog's heap grows, and their diff.
"$mp" vm "$hogpid" --only --regions --json --sort address > "$here/reports/before.json"
echo "grow-heap 1048576" >&3
read -r answer <&4
echo "hog: $answer"
"$mp" vm "$hogpid" --only --regions --json --sort address > "$here/reports/after.json"
"$mp" diff "$here/reports/before.json" "$here/reports/after.json" > "$here/reports/diff.txt"
echo "reports written to $here/reports"
