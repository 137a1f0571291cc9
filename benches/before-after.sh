#!/usr/bin/env bash
# Before/after: the `cutover` binary of another commit against this checkout's, whole process,
# on generated inputs. The two run alternately, round by round, so a shared machine's load
# slows both alike; the table gives the medians of wall and user+system CPU time and the
# after/before ratios. The outputs are compared byte for byte first (a speed-up that changes the
# output is not one). Not run by CI. Documented in docs/benchmarks.md.
#
#   benches/before-after.sh BEFORE_COMMIT [PRESET...]       # default presets as whole-process.sh
#   ROUNDS=9 benches/before-after.sh 5a4e624 lb-10k-cutover sylva
#
# The before binary is built in a worktree under target/before-after/ (its own target dir).
set -euo pipefail
cd "$(dirname "$0")/.."

before=${1:?usage: benches/before-after.sh BEFORE_COMMIT [PRESET...]}
shift
presets=("$@")
[ ${#presets[@]} -eq 0 ] && presets=(lb-1k lb-10k lb-100k lb-1k-cutover lb-10k-cutover lb-100k-cutover sylva)
rounds=${ROUNDS:-11}
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing (apt-get install -y time)" >&2; exit 1; }

work=$PWD/target/before-after
tree=$work/src-$before
if [ ! -d "$tree" ]; then
  git worktree add --detach "$tree" "$before" >&2
fi
(cd "$tree" && CARGO_TARGET_DIR=$work/target cargo build --release --bin cutover >&2)
cargo build --release --features bench-tools --bin cutover --bin cutover-gen >&2
old=$work/target/release/cutover
new=target/release/cutover
mkdir -p target/bench-inputs "$work/out"

# "wall cpu" seconds of one run of $1 on $2.
one_run() {
  /usr/bin/time -f '%e %U %S' -o "$work/time.out" "$1" <"$2" >/dev/null 2>&1 || true
  awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$work/time.out"
}
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "| input | before wall s | after wall s | wall after/before | before CPU s | after CPU s | CPU after/before |"
echo "|---|---|---|---|---|---|---|"
for preset in "${presets[@]}"; do
  input=target/bench-inputs/$preset.yaml
  target/release/cutover-gen "$preset" -o "$input"
  "$old" <"$input" >"$work/out/before.yaml" 2>/dev/null || true
  "$new" <"$input" >"$work/out/after.yaml" 2>/dev/null || true
  cmp -s "$work/out/before.yaml" "$work/out/after.yaml" ||
    echo "note: $preset: before and after outputs differ" >&2
  n=$rounds
  case "$preset" in *100k*) n=$(((rounds + 2) / 3)) ;; esac
  : >"$work/before.txt"
  : >"$work/after.txt"
  one_run "$old" "$input" >/dev/null # warm the page cache
  for ((i = 0; i < n; i++)); do
    one_run "$old" "$input" >>"$work/before.txt"
    one_run "$new" "$input" >>"$work/after.txt"
  done
  bw=$(cut -d' ' -f1 "$work/before.txt" | median)
  aw=$(cut -d' ' -f1 "$work/after.txt" | median)
  bc=$(cut -d' ' -f2 "$work/before.txt" | median)
  ac=$(cut -d' ' -f2 "$work/after.txt" | median)
  awk -v p="$preset" -v bw="$bw" -v aw="$aw" -v bc="$bc" -v ac="$ac" 'BEGIN {
    printf "| %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f |\n", p, bw, aw, aw / bw, bc, ac, ac / bc }'
done
