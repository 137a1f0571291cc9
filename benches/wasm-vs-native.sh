#!/usr/bin/env bash
# Whole-process benchmark: native `cutover` vs `cutover-wasm` + cutover.wasm on the largest input
# available, cold (no compiled-code cache: Cranelift compiles the module) and cached.
# Not run by CI. Needs hyperfine (Debian package `hyperfine`) and python3.
#
#   benches/wasm-vs-native.sh [INPUT.yaml]
#
# Without INPUT it uses benches/large-input.yaml (the benchmark issue's generated input) when
# present, else generates one with benches/gen-large-input.py.
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
    python3 benches/gen-large-input.py 3000 >"$input"
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
echo "small input: $small"
bench "$small" 20 --export-markdown target/bench-wasm-vs-native-small.md
