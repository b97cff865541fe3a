#!/usr/bin/env bash
# Runs libFuzzer targets for a set time each, JOBS at a time, and prints one line per target: its wall time,
# executions, corpus size and whether it found something. Findings land in BUILD/findings/<target>-*.
# A finding does not stop the other targets; the exit status is 1 when any target found something.
#   fuzz/run_fuzzers.sh BUILD SECONDS JOBS TARGET...
set -uo pipefail
build=$1 seconds=$2 jobs=$3
shift 3
mkdir -p "$build/findings"
run_one() {
  local t=$1 log="$build/fuzz_$1.log"
  local start=$SECONDS
  "$build/bin/fuzz_$t" "$build/corpus/$t" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$build/findings/$t-" >"$log" 2>&1
  local status=$? wall=$((SECONDS - start))
  local execs corpus
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  corpus=$(ls "$build/corpus/$t" | wc -l)
  if [ $status -eq 0 ]; then
    echo "fuzz_$t: ${wall} s, ${execs:-?} executions, corpus ${corpus} files, no finding"
  else
    echo "fuzz_$t: ${wall} s, ${execs:-?} executions: FINDING (exit $status), see $log and $build/findings/"
  fi
  return $status
}
failed=0
pids=()
for t in "$@"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || failed=1; done
  run_one "$t" &
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
exit $failed
