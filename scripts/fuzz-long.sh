#!/usr/bin/env bash
# One shard of a long fuzz run: cases FIRST..END-1 of SEED for one suite, release build,
# every failing class collected (FUZZ_KEEP_GOING), a progress line every 10 000 cases.
#
#   scripts/fuzz-long.sh styles|mutation SEED FIRST END
#   scripts/fuzz-long.sh styles 0x20 0 1000000        # the whole run in one go
#   scripts/fuzz-long.sh mutation 0x20 300000 600000  # or a shard of it
#
# A case depends only on the seed, its number and the code, so shards of the same seed run on
# the same code (anywhere, at any time, in any order) add up to the run of all their cases.
# "The same code" is the fingerprint printed first: the git trees of everything a case
# depends on (the function's sources, the vendored libyaml, the fuzz harness, the examples it
# starts from, Cargo.lock). A shard run on a dirty tree says so and has no fingerprint.
#
# The test binary is copied out of target/ first, so building while a shard runs is safe.
# Output: target/fuzz-long/<suite>-<seed>-<first>-<end>/log (also on stdout); the last line
# says how many cases ran, the time, and the failures.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
if (($# != 4)); then
  usage >&2
  exit 2
fi
suite="$1" seed="$2" first="$3" end="$4"
case "$suite" in
  styles) test_name=fuzz_styles filter=styles_keep_the_items ;;
  mutation) test_name=fuzz_mutation filter=mutations_keep_the_contract ;;
  *) echo "fuzz-long: suite is styles or mutation, not $suite" >&2; exit 2 ;;
esac

inputs=(src vendor tests/fuzz tests/"$test_name".rs tests/common examples Cargo.toml Cargo.lock)
if [[ -n "$(git status --porcelain -- "${inputs[@]}")" ]]; then
  fingerprint="none (uncommitted changes in ${inputs[*]})"
else
  fingerprint="$(for p in "${inputs[@]}"; do git rev-parse "HEAD:$p"; done | sha256sum | cut -c1-16)"
fi

dir="target/fuzz-long/$suite-$seed-$first-$end"
mkdir -p "$dir"
# Cargo also lists the cutover binary the suite runs, in no fixed order: pick the test target.
binary="$(cargo test --release -p cutover --test "$test_name" --no-run --message-format=json 2>/dev/null |
  grep -F "\"kind\":[\"test\"],\"crate_types\":[\"bin\"],\"name\":\"$test_name\"" |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)"
[[ -x "$binary" ]] || { echo "fuzz-long: no test binary for $test_name" >&2; exit 1; }
cp "$binary" "$dir/bin"

{
  echo "fuzz-long: $suite seed $seed cases $first..$end at $(git rev-parse --short HEAD), code fingerprint $fingerprint"
  echo "fuzz-long: $(uname -srm), $(nproc) CPUs, $(rustc --version), started $(date -u +%FT%TZ)"
} | tee "$dir/log"
FUZZ_SEED="$seed" FUZZ_FIRST_CASE="$first" FUZZ_CASES="$end" FUZZ_KEEP_GOING=1 \
  nice -n 10 "$dir/bin" "$filter" --exact --nocapture 2>&1 | tee -a "$dir/log"
