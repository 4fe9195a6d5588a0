#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for FUZZ_SECONDS (default 60) on a scratch copy of
# its corpus, so the repository is not touched (`make fuzz`). Crash, timeout and out-of-memory
# inputs go to a scratch directory, removed at the end unless something was found: then its
# path and the command that reproduces each finding are printed and the exit status is 1.
#
#   FUZZ_SECONDS=600 make fuzz           longer runs
#   FUZZ_TARGETS="fuzz-smaps" make fuzz  some targets only
#   FUZZ_MERGE=1 make fuzz               afterwards, merge what the runs found that reaches new
#                                        code into Corpus/<target>/ (libFuzzer -merge=1, on
#                                        edges alone: -use_counters=0 keeps the additions to
#                                        tens of files), to review and commit
set -uo pipefail
cd "$(dirname "$0")"
seconds="${FUZZ_SECONDS:-60}"
targets="${FUZZ_TARGETS:-fuzz-smaps fuzz-stat fuzz-status fuzz-meminfo fuzz-diff fuzz-scenario fuzz-admin fuzz-protocol fuzz-trace}"
swift="${SWIFT:-swift}"

"$swift" build -c release -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library || exit 1
bin="$("$swift" build -c release -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library --show-bin-path)" || exit 1

# Swift's own crash handler would take the trap's signal before libFuzzer's, which then writes
# no crash input: leave the signal to libFuzzer (a reproduction run shows Swift's backtrace).
export SWIFT_BACKTRACE=enable=no

scratch="$(mktemp -d /tmp/mempressure-fuzz.XXXXXX)" || exit 1
found=0
trap '[ "$found" = 1 ] || rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM

for t in $targets; do
  mkdir -p "$scratch/corpus/$t" "$scratch/artifacts/$t"
  cp -R "Corpus/$t/." "$scratch/corpus/$t/"
  "$bin/$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -dict="Dictionaries/$t.dict" -artifact_prefix="$scratch/artifacts/$t/" "$scratch/corpus/$t" \
    >"$scratch/$t.log" 2>&1
  status=$?
  # The last status line: "#RUNS DONE cov: N ft: N corp: N/SIZE lim: N exec/s: N rss: N".
  done_line="$(grep -E '^#[0-9]+[[:space:]]+DONE' "$scratch/$t.log" | tail -n 1)"
  if [ "$status" = 0 ] && [ -n "$done_line" ]; then
    echo "$t: $(echo "$done_line" | sed -E 's/^#([0-9]+)[[:space:]]+DONE[[:space:]]+/runs: \1 /')"
  else
    found=1
    echo "$t: FOUND A FAILURE (libFuzzer exit status $status); its output: $scratch/$t.log"
    grep -E 'ERROR|Fatal error|SUMMARY|deadly signal|Test unit written' "$scratch/$t.log" | head -n 5 | sed 's/^/    /'
    for a in "$scratch/artifacts/$t"/*; do
      [ -e "$a" ] || continue
      echo "    reproduce: $bin/$t $a"
      echo "    minimise:  $bin/$t -minimize_crash=1 -runs=100000 -exact_artifact_path=$a.min $a"
    done
  fi
  if [ "${FUZZ_MERGE:-0}" = 1 ]; then
    "$bin/$t" -merge=1 -use_counters=0 -rss_limit_mb=2048 -timeout=10 "Corpus/$t" "$scratch/corpus/$t" >"$scratch/$t.merge.log" 2>&1 \
      || echo "$t: merge failed: $scratch/$t.merge.log"
  fi
done

if [ "$found" = 1 ]; then
  echo "fuzz: failures found; inputs and logs kept in $scratch" >&2
  exit 1
fi
echo "fuzz: no failures in $seconds s per target"
