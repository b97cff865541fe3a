#!/bin/bash
# Checks that the tests catch the defects they were written for: each line of a manifest names a patch that
# brings one old defect back into the current code, the test binary and the functions that must then fail.
# For each line the patch is applied, the target built, the functions run (they must fail), and the patch
# reverted. Reports "caught" or "MISSED" per function; exits 1 when any was missed or a patch did not apply.
#
#   scripts/mutation_check.sh [MANIFEST...]     default: tests/mutations/*/manifest.tsv; BUILD=build
#
# Manifest lines, tab-separated: id, patch file (beside the manifest), cmake target, functions, what fails.
# The files a patch touches must have no uncommitted changes (they are restored with `git apply -R`).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
manifests=("$@")
[ ${#manifests[@]} -eq 0 ] && manifests=(tests/mutations/*/manifest.tsv)
# The environment CTest gives the suites (tests/CMakeLists.txt).
export QT_QPA_PLATFORM=offscreen:configfile="$PWD/$BUILD/test-home/offscreen-screen.json" QTEST_FUNCTION_TIMEOUT=1800000 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
  HEADSCOPE_THREADS=1 MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 \
  XDG_CONFIG_HOME="$PWD/$BUILD/test-home/config" XDG_CACHE_HOME="$PWD/$BUILD/test-home/cache" \
  HF_HOME="$PWD/$BUILD/test-home/hf" HF_HUB_CACHE=
status=0
for manifest in "${manifests[@]}"; do
  dir=$(dirname "$manifest")
  while IFS=$'\t' read -r id patch target functions why; do
    [[ -z "$id" || "$id" == \#* ]] && continue
    files=$(git apply --numstat "$dir/$patch" | cut -f3)
    if ! git diff --quiet -- $files || ! git apply "$dir/$patch"; then
      echo "$id: $patch does not apply to a clean copy of $files"
      status=1
      continue
    fi
    if ! cmake --build "$BUILD" --target "$target" > "$BUILD/mutation-$id.log" 2>&1; then
      echo "$id: $target does not build with $patch (see $BUILD/mutation-$id.log)"
      status=1
    else
      for f in $functions; do
        if timeout 1200 "$BUILD/bin/$target" "$f" > "$BUILD/mutation-$id-$f.log" 2>&1; then
          echo "$id: MISSED  $target::$f passes with $patch ($why)"
          status=1
        else
          echo "$id: caught  $target::$f: $(grep -m1 -E '^FAIL!' "$BUILD/mutation-$id-$f.log" | cut -c1-160)"
        fi
      done
    fi
    git apply -R "$dir/$patch" || { echo "$id: could not revert $patch"; exit 2; }
  done < "$manifest"
done
exit $status
