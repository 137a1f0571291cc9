#!/usr/bin/env bash
# Size and speed of the kpt-WASM module (kpt-wasm/) under other build settings: the table of
# docs/wasm.md#size-and-speed. Each candidate is the `kpt-wasm` profile of Cargo.toml changed with
# `--config` overrides (each one rebuilds every crate: minutes), then timed inside node the way
# kpt's glue calls it (benches/kpt-wasm-calls.js after the `wasm_exec.js` of a real kpt run).
# Candidates and inputs are interleaved round by round, so a busy machine slows them alike;
# the medians over the rounds are printed. Not run by CI. Needs kpt and node.
#
#   benches/kpt-wasm-profiles.sh                       # every candidate, 7 rounds
#   ROUNDS=3 benches/kpt-wasm-profiles.sh kpt-wasm cutover-3
#   WASM_OPT=/path/to/wasm-opt benches/kpt-wasm-profiles.sh   # adds binaryen's -O3 after fat LTO
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in kpt node; do
  command -v "$tool" >/dev/null || { echo "$tool missing" >&2; exit 1; }
done
rounds=${ROUNDS:-7}
inputs=(lb-10k lb-1k sylva)
work=$PWD/target/bench-kpt-wasm-profiles
mkdir -p "$work/tmp" target/bench-inputs

P=profile.kpt-wasm
cold=()
for crate in jiff jiff-core schemars regex-lite serde_json base64 serde_path_to_error k8s-openapi; do
  cold+=(--config "$P.package.$crate.opt-level=\"s\"")
done
# name and the overrides of the `kpt-wasm` profile that make it.
declare -A candidates=(
  [kpt-wasm]=""
  [release-profile]="--config $P.opt-level=3"
  [cutover-3]="--config $P.package.cutover.opt-level=3"
  [cutover-2]="--config $P.package.cutover.opt-level=2"
  [all-z]="--config $P.opt-level=\"z\""
  [all-s-fat]="--config $P.lto=\"fat\" --config $P.codegen-units=1"
  [o3-fat]="--config $P.opt-level=3 --config $P.lto=\"fat\" --config $P.codegen-units=1"
  [o3-fat-cold-s]="--config $P.opt-level=3 --config $P.lto=\"fat\" --config $P.codegen-units=1 ${cold[*]}"
)
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(kpt-wasm cutover-3 cutover-2 release-profile all-z all-s-fat o3-fat o3-fat-cold-s)

for name in "${names[@]}"; do
  [[ -v "candidates[$name]" ]] || { echo "unknown candidate $name" >&2; exit 1; }
  # shellcheck disable=SC2086 # the overrides are words
  cargo build --target wasm32-unknown-unknown --profile kpt-wasm -p cutover-kpt-wasm \
    ${candidates[$name]} >&2
  cp target/wasm32-unknown-unknown/kpt-wasm/cutover_kpt.wasm "$work/$name.wasm"
done
if [[ -n ${WASM_OPT:-} && -f $work/o3-fat.wasm ]]; then
  # Features rustc enables for wasm32-unknown-unknown (the stripped module does not list them).
  "$WASM_OPT" -O3 --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-multivalue --enable-reference-types \
    "$work/o3-fat.wasm" -o "$work/o3-fat-wasm-opt.wasm"
  names+=(o3-fat-wasm-opt)
fi
# Leave the module of the committed profile where the tests and benches/kpt-wasm.sh expect it.
cargo build --target wasm32-unknown-unknown --profile kpt-wasm -p cutover-kpt-wasm >&2

cargo build --release -p cutover --bin cutover-gen --features bench-tools >&2
for input in "${inputs[@]}"; do
  target/release/cutover-gen "$input" -o "target/bench-inputs/$input.yaml"
done

# The glue kpt writes for one run: Go's wasm_exec.js ends where kpt's own script starts.
rm -rf "$work/tmp/kpt-wasm-fn" "$work/package"
mkdir -p "$work/package"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n' >"$work/package/cm.yaml"
TMPDIR=$work/tmp KPT_FN_WASM_RUNTIME=nodejs kpt fn eval "$work/package" --allow-alpha-wasm \
  --exec "$work/${names[0]}.wasm" -- mode=load-balancer-announcer announcer=metallb >/dev/null 2>&1
glue=$(find "$work/tmp/kpt-wasm-fn" -name kpt-fn-wasm-glue-runner.js | head -n 1)
sed '/^\/\/ The code below run the wasm function\./,$d' "$glue" >"$work/calls.js"
cat benches/kpt-wasm-calls.js >>"$work/calls.js"

results=$work/results.jsonl
: >"$results"
for ((round = 1; round <= rounds; round++)); do
  echo "round $round/$rounds" >&2
  for name in "${names[@]}"; do
    for input in "${inputs[@]}"; do
      line=$(KPT_FN_WASM_PATH=$work/$name.wasm INPUT=target/bench-inputs/$input.yaml RUNS=3 \
        node "$work/calls.js" 2>/dev/null)
      echo "{\"candidate\":\"$name\",\"input\":\"$input\",${line#\{}" >>"$results"
    done
  done
done

# Medians over the rounds: CPU ms of the first call (the one kpt pays) and of the later ones.
node - "$results" "${inputs[@]}" <<'EOF'
const [file, ...inputs] = process.argv.slice(2);
const rows = require('fs').readFileSync(file, 'utf-8').trim().split('\n').map(JSON.parse);
const median = (a) => { a = [...a].sort((x, y) => x - y); const m = a.length >> 1;
  return a.length % 2 ? a[m] : (a[m - 1] + a[m]) / 2; };
const names = [...new Set(rows.map((r) => r.candidate))];
console.log(`| candidate | bytes | ${inputs.map((i) => `${i} first | ${i} later`).join(' | ')} |`);
console.log(`| --- | ---: | ${inputs.map(() => '---: | ---:').join(' | ')} |`);
for (const name of names) {
  const cells = inputs.map((input) => {
    const runs = rows.filter((r) => r.candidate === name && r.input === input);
    const first = median(runs.map((r) => r.first_call_cpu_ms));
    const later = median(runs.map((r) => r.later_calls_cpu_mean_ms));
    return `${Math.round(first)} ms | ${Math.round(later)} ms`;
  });
  const bytes = rows.find((r) => r.candidate === name).module_bytes;
  console.log(`| ${name} | ${bytes.toLocaleString('en-US')} | ${cells.join(' | ')} |`);
}
EOF
