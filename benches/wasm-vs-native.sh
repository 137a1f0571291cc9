#!/usr/bin/env bash
# Whole-process benchmark: native `cutover` vs `cutover-wasm` + cutover.wasm on the largest input
# available, cold (no compiled-code cache: Cranelift compiles the module) and cached.
# Not run by CI. Needs hyperfine (Debian package `hyperfine`), python3 and kpt.
#
#   benches/wasm-vs-native.sh [INPUT.yaml]
#
# Without INPUT it uses benches/large-input.yaml (the benchmark issue's generated input) when
# present, else generates one with benches/gen-large-input.py (an example plus filler items).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p cutover --bin cutover
cargo build --release --target wasm32-wasip1 -p cutover --bin cutover
cargo build --release -p cutover-wasm

native=target/release/cutover
host=target/release/cutover-wasm
module=target/wasm32-wasip1/release/cutover.wasm
input=${1:-}
if [[ -z $input ]]; then
  input=benches/large-input.yaml
  if [[ ! -f $input ]]; then
    input=target/bench-large-input.yaml
    # A real example (the prepull mode on an upgrade) plus 9000 filler items.
    example=examples/prepull-upgrade-native-bgp
    base=target/bench-base.yaml
    if [[ -d $example ]]; then
      kpt fn source "$example" --fn-config "$example/fn-config.yaml" >"$base"
      python3 benches/gen-large-input.py 3000 "$base" >"$input"
    else
      python3 benches/gen-large-input.py 3000 >"$input"
    fi
  fi
fi
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT

echo "input: $input ($(wc -c <"$input") bytes)"
echo "module: $module ($(wc -c <"$module") bytes); host: $host ($(wc -c <"$host") bytes)"
# Sanity: identical output before timing anything.
cmp <("$native" <"$input" 2>/dev/null || true) \
    <(CUTOVER_WASM_CACHE_DIR="$cache" "$host" --module "$module" <"$input" 2>/dev/null || true)

export CUTOVER_WASM_CACHE_DIR=$cache
# hyperfine 1.15 (Debian) has no --input: the commands redirect stdin themselves, through the
# shell whose start-up hyperfine measures and subtracts. One --prepare per command.
bench() {
  local in=$1 runs=$2; shift 2
  hyperfine --warmup 2 --min-runs "$runs" --ignore-failure "$@" \
    --prepare true --prepare true --prepare "rm -rf $cache/*" \
    -n native "$native <$in >/dev/null 2>&1" \
    -n wasm-cached "$host --module $module <$in >/dev/null 2>&1" \
    -n wasm-cold "$host --module $module <$in >/dev/null 2>&1"
}
bench "$input" 10 --export-markdown target/bench-wasm-vs-native.md
small=tests/inputs/valid/announcer-metallb.yaml
# A run on a small input takes about a millisecond, below what hyperfine can separate from the
# shell's start-up: time 20 runs per sample instead (divide by 20).
echo "small input: $small (times are for 20 runs)"
loop() { echo "for i in \$(seq 20); do $1 <$small >/dev/null 2>&1; done"; }
hyperfine --warmup 2 --min-runs 10 --ignore-failure \
  --export-markdown target/bench-wasm-vs-native-small.md \
  -n native-x20 "$(loop "$native")" \
  -n wasm-cached-x20 "$(loop "$host --module $module")"
# The cold run (compiling the module) is long enough to time alone.
hyperfine --min-runs 10 --ignore-failure --prepare "rm -rf $cache/*" \
  -n wasm-cold "$host --module $module <$small >/dev/null 2>&1"
