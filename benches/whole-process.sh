#!/usr/bin/env bash
# Whole-process benchmark: `cutover` against `cutover-identity` (same parser and emitter, no
# transform) and against the floor `cutover-identity --events` (libyaml's events over the whole
# input plus a copy of the bytes, nothing built: what any correct reader pays) on generated
# inputs, with hyperfine for time and GNU time for peak RSS.
# Not part of CI or scripts/test.sh. Documented in docs/benchmarks.md.
#
#   benches/whole-process.sh                 # presets lb-1k lb-10k lb-100k sylva
#   benches/whole-process.sh lb-10k sylva    # some presets
#   RUNS=5 WARMUP=1 RUNS_LARGE=2 benches/whole-process.sh
#
# Writes inputs to target/bench-inputs/, hyperfine JSON to target/bench-results/, and prints a
# Markdown table: mean times, ratio cutover/identity, peak RSS and RSS/input size.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
# 100k inputs take seconds per run: fewer runs.
RUNS_LARGE=${RUNS_LARGE:-3}
WARMUP_LARGE=${WARMUP_LARGE:-1}
presets=("$@")
[ ${#presets[@]} -eq 0 ] && presets=(lb-1k lb-10k lb-100k lb-1k-cutover lb-10k-cutover lb-100k-cutover sylva
  platform-10k platform-100k sylva-platform)

command -v hyperfine >/dev/null || { echo "hyperfine missing (apt-get install -y hyperfine)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing (apt-get install -y time)" >&2; exit 1; }

cargo build --release --features bench-tools --bin cutover --bin cutover-identity --bin cutover-gen >&2
bin=target/release
inputs=target/bench-inputs
results=target/bench-results
mkdir -p "$inputs" "$results"

# Peak RSS in KiB of one run of $2 with arguments $3... on $1.
peak_rss_args() {
  local input="$1"
  shift
  /usr/bin/time -f '%M' -o "$results/time.out" "$@" <"$input" >/dev/null 2>"$results/stderr.out" || true
  tail -n 1 "$results/time.out"
}

# Peak RSS in KiB of one run of $1 on $2 (the exit code is ignored: a mode may report errors).
peak_rss() {
  /usr/bin/time -f '%M' -o "$results/time.out" "$1" <"$2" >/dev/null 2>"$results/stderr.out" || true
  tail -n 1 "$results/time.out"
}

echo "| input | MiB | floor s | identity s | identity --emit-all s | cutover s | cutover/identity (wall) | cutover/identity (CPU) | cutover/floor (CPU) | exit | floor RSS MiB | identity RSS MiB | cutover RSS MiB | cutover RSS / input | RSS target MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for preset in "${presets[@]}"; do
  input="$inputs/$preset.yaml"
  "$bin/cutover-gen" "$preset" -o "$input"
  # Mode runs that end in an error result echo the input: note the exit code so nobody reads an
  # error run as a transform run.
  code=0
  "$bin/cutover" <"$input" >/dev/null 2>"$results/$preset.stderr" || code=$?
  # hyperfine 1.15 has no --input: redirect in its shell (it subtracts the shell spawn time).
  runs=$RUNS warmup=$WARMUP
  case "$preset" in *100k*) runs=$RUNS_LARGE warmup=$WARMUP_LARGE ;; esac
  hyperfine --style none --warmup "$warmup" --runs "$runs" -i \
    --export-json "$results/$preset.json" \
    -n floor "$bin/cutover-identity --events < $input > /dev/null" \
    -n identity "$bin/cutover-identity < $input > /dev/null" \
    -n identity-emit-all "$bin/cutover-identity --emit-all < $input > /dev/null" \
    -n cutover "$bin/cutover < $input > /dev/null 2>&1" >&2
  bytes=$(stat -c %s "$input")
  rss_fl=$(peak_rss_args "$input" "$bin/cutover-identity" --events)
  rss_id=$(peak_rss "$bin/cutover-identity" "$input")
  rss_cu=$(peak_rss "$bin/cutover" "$input")
  jq -r --arg preset "$preset" --argjson bytes "$bytes" --argjson code "$code" \
     --argjson rss_fl "$rss_fl" --argjson rss_id "$rss_id" --argjson rss_cu "$rss_cu" '
    def r($c): .results[] | select(.command == $c);
    def s(x): x * 1000 | round / 1000;
    def t($c): "\(s(r($c).mean)) ±\(s(r($c).stddev))";
    def cpu($c): r($c).user + r($c).system;
    "| \($preset) | \($bytes / 1048576 * 10 | round / 10) | \(t("floor")) | \(t("identity")) | \(t("identity-emit-all")) | \(t("cutover")) | \(r("cutover").mean / r("identity").mean * 100 | round / 100) | \(cpu("cutover") / cpu("identity") * 100 | round / 100) | \(cpu("cutover") / cpu("floor") * 100 | round / 100) | \($code) | \($rss_fl / 1024 | round) | \($rss_id / 1024 | round) | \($rss_cu / 1024 | round) | \($rss_cu * 1024 / $bytes * 10 | round / 10)x | \(3 * $bytes / 1048576 + 16 | round) |"
  ' "$results/$preset.json"
done

# Near-linearity: 100k vs 10k Services (target <= 11), wall and CPU time.
for base in lb lb-cutover; do
  small="$results/${base/lb/lb-10k}.json"
  large="$results/${base/lb/lb-100k}.json"
  [ -f "$small" ] && [ -f "$large" ] || continue
  for cmd in identity cutover; do
    jq -rn --arg c "$cmd" --arg base "$base" --slurpfile a "$small" --slurpfile b "$large" '
      def r($f): $f[0].results[] | select(.command == $c);
      "\($base) \($c): 100k/10k time ratio = \(r($b).mean / r($a).mean * 100 | round / 100) (wall), \((r($b).user + r($b).system) / (r($a).user + r($a).system) * 100 | round / 100) (CPU)"'
  done
done
