#!/usr/bin/env bash
# Whole-process benchmark: native `cutover` vs `cutover-wasm` + cutover.wasm, on the benchmark
# generator's inputs (`cutover-gen`, docs/benchmarks.md) and on a small input; the WASM side cold
# (no compiled-code cache: Cranelift compiles the module) and cached.
# Not run by CI. Needs hyperfine (Debian package `hyperfine`). Documented in docs/wasm.md.
#
#   benches/wasm-vs-native.sh                       # presets lb-10k-cutover and sylva
#   benches/wasm-vs-native.sh lb-1k sylva           # other cutover-gen presets
#   benches/wasm-vs-native.sh path/to/input.yaml    # any ResourceList
set -euo pipefail
cd "$(dirname "$0")/.."

command -v hyperfine >/dev/null || { echo "hyperfine missing (apt-get install -y hyperfine)" >&2; exit 1; }
cargo build --release -p cutover --features bench-tools --bin cutover --bin cutover-gen >&2
cargo build --release --target wasm32-wasip1 -p cutover --bin cutover >&2
cargo build --release -p cutover-wasm >&2

native=target/release/cutover
host=target/release/cutover-wasm
module=target/wasm32-wasip1/release/cutover.wasm
inputs=target/bench-inputs
mkdir -p "$inputs" target/bench-results
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export CUTOVER_WASM_CACHE_DIR=$cache

args=("$@")
[ ${#args[@]} -eq 0 ] && args=(lb-10k-cutover sylva)

echo "module: $module ($(stat -c %s "$module") bytes); host: $host ($(stat -c %s "$host") bytes)"
for arg in "${args[@]}"; do
  if [[ -f $arg ]]; then
    input=$arg name=$(basename "$arg" .yaml)
  else
    input=$inputs/$arg.yaml name=$arg
    target/release/cutover-gen "$arg" -o "$input"
  fi
  echo
  echo "== $name: $input ($(stat -c %s "$input") bytes)"
  # Same bytes and exit code first, or the timings compare different work.
  code_native=0 code_wasm=0
  "$native" <"$input" >"target/bench-results/$name.native.out" 2>/dev/null || code_native=$?
  "$host" --module "$module" <"$input" >"target/bench-results/$name.wasm.out" 2>/dev/null || code_wasm=$?
  cmp "target/bench-results/$name.native.out" "target/bench-results/$name.wasm.out"
  [[ $code_native == "$code_wasm" ]] || { echo "exit codes differ: $code_native vs $code_wasm" >&2; exit 1; }
  echo "exit code $code_native on both"
  # hyperfine 1.15 (Debian) has no --input: the commands redirect stdin in hyperfine's shell,
  # whose start-up it measures and subtracts. One --prepare per command.
  hyperfine --warmup 2 --min-runs 10 --ignore-failure \
    --export-markdown "target/bench-results/wasm-vs-native-$name.md" \
    --prepare true --prepare true --prepare "rm -rf $cache/*" \
    -n native "$native <$input >/dev/null 2>&1" \
    -n wasm-cached "$host --module $module <$input >/dev/null 2>&1" \
    -n wasm-cold "$host --module $module <$input >/dev/null 2>&1"
done

small=tests/inputs/valid/announcer-metallb.yaml
# A run on a small input takes about a millisecond, below what hyperfine can separate from the
# shell's start-up: time 20 runs per sample instead (divide by 20).
echo
echo "== small input: $small (times are for 20 runs)"
loop() { echo "for i in \$(seq 20); do $1 <$small >/dev/null 2>&1; done"; }
hyperfine --warmup 2 --min-runs 10 --ignore-failure \
  -n native-x20 "$(loop "$native")" \
  -n wasm-cached-x20 "$(loop "$host --module $module")"
# The cold run (compiling the module) is long enough to time alone.
hyperfine --min-runs 10 --ignore-failure --prepare "rm -rf $cache/*" \
  -n wasm-cold "$host --module $module <$small >/dev/null 2>&1"
