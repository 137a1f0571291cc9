#!/usr/bin/env bash
# The kpt-WASM module (kpt-wasm/, docs/wasm.md) against the other ways to run cutover:
#  1. whole `kpt fn eval` of a package written from a generated input (`kpt fn sink`): the exec
#     binary, the WASI module through `cutover-wasm` (an exec function, compiled code cached),
#     and the kpt-WASM module (`--allow-alpha-wasm`, node runtime);
#  2. time per `processResourceList` call inside one node process (benches/kpt-wasm-calls.js with
#     the glue kpt writes, taken from one of the runs above), beside the native binary's whole run.
# Not run by CI. Needs hyperfine (Debian package), kpt and node. Results: docs/benchmarks.md.
#
#   benches/kpt-wasm.sh                          # kpt runs on sylva and lb-1k; calls on lb-10k
#   benches/kpt-wasm.sh lb-1k-cutover            # other cutover-gen presets for the kpt runs
#   CALLS=lb-1k RUNS=20 benches/kpt-wasm.sh      # calls on another preset; runs per measurement
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in hyperfine kpt node; do
  command -v "$tool" >/dev/null || { echo "$tool missing" >&2; exit 1; }
done
runs=${RUNS:-10}
calls=${CALLS:-lb-10k}
presets=("$@")
[ ${#presets[@]} -eq 0 ] && presets=(sylva lb-1k)

cargo build --release -p cutover --features bench-tools --bin cutover --bin cutover-gen >&2
cargo build --release --target wasm32-wasip1 -p cutover --bin cutover >&2
cargo build --target wasm32-unknown-unknown --profile kpt-wasm -p cutover-kpt-wasm >&2
cargo build --release -p cutover-wasm >&2 # wasmtime: many minutes the first time

root=$PWD
work=$root/target/bench-kpt-wasm
rm -rf "$work"
mkdir -p "$work/tmp" "$work/cache" target/bench-inputs target/bench-results
# kpt leaves a directory per wasm run in $TMPDIR; the host's compiled-code cache stays warm.
export TMPDIR=$work/tmp CUTOVER_WASM_CACHE_DIR=$work/cache
native=$root/target/release/cutover
host="$root/target/release/cutover-wasm --module $root/target/wasm32-wasip1/release/cutover.wasm"
module=$root/target/wasm32-unknown-unknown/kpt-wasm/cutover_kpt.wasm
echo "kpt-WASM module: $(stat -c %s "$module") bytes; kpt $(kpt version); node $(node --version)"

# One `kpt fn eval` of a fresh copy of package $1 with the function given by the rest.
eval_copy() {
  local package=$1
  shift
  rm -rf "$work/run"
  cp -r "$package" "$work/run"
  kpt fn eval "$work/run" --fn-config "$work/run/fn-config.yaml" "$@" >/dev/null 2>&1
}

# A digest of every file of the package last evaluated.
digest() { (cd "$work/run" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum); }

for preset in "${presets[@]}"; do
  input=target/bench-inputs/$preset.yaml
  target/release/cutover-gen "$preset" -o "$input"
  package=$work/$preset
  kpt fn sink "$package" <"$input"
  echo
  echo "== kpt fn eval, $preset: $(stat -c %s "$input") bytes, $(find "$package" -type f | wc -l) files"
  # Same files and exit code from the three, or the timings compare different work.
  code=0
  eval_copy "$package" --exec "$native" || code=$?
  want=$(digest)
  for way in host wasm; do
    got=0
    if [[ $way == host ]]; then
      eval_copy "$package" --exec "$host" || got=$?
    else
      KPT_FN_WASM_RUNTIME=nodejs eval_copy "$package" --allow-alpha-wasm --exec "$module" || got=$?
    fi
    [[ $got == "$code" ]] || { echo "$way: exit code $got, exec binary $code" >&2; exit 1; }
    [[ $(digest) == "$want" ]] || { echo "$way: files differ from the exec binary's" >&2; exit 1; }
  done
  echo "same files and exit code ($code) from the three"
  prepare="rm -rf $work/run && cp -r $package $work/run"
  eval="kpt fn eval $work/run --fn-config $work/run/fn-config.yaml"
  hyperfine --warmup 2 --runs "$runs" --ignore-failure --prepare "$prepare" \
    --export-markdown "target/bench-results/kpt-wasm-$preset.md" \
    -n exec "$eval --exec $native" \
    -n wasi-host "$eval --exec '$host'" \
    -n kpt-wasm "KPT_FN_WASM_RUNTIME=nodejs $eval --allow-alpha-wasm --exec $module"
done

# The glue of the runs above: Go's wasm_exec.js ends where kpt's own script starts.
glue=$(find "$TMPDIR/kpt-wasm-fn" -name kpt-fn-wasm-glue-runner.js | head -n 1)
sed '/^\/\/ The code below run the wasm function\./,$d' "$glue" >"$work/calls.js"
cat benches/kpt-wasm-calls.js >>"$work/calls.js"
input=target/bench-inputs/$calls.yaml
target/release/cutover-gen "$calls" -o "$input"
echo
echo "== calls inside node, $calls: $(stat -c %s "$input") bytes, $runs calls per process"
"$native" <"$input" >"$work/native.out" 2>/dev/null || true
for _ in 1 2 3; do
  KPT_FN_WASM_PATH=$module INPUT=$input RUNS=$runs OUTPUT=$work/wasm.out node "$work/calls.js" 2>/dev/null
done
cmp "$work/native.out" "$work/wasm.out"
echo "the module's output is the native binary's, byte for byte"
hyperfine --warmup 2 --runs "$runs" --ignore-failure \
  -n "native, whole process" "$native <$input >/dev/null 2>&1"
