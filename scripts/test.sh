#!/usr/bin/env bash
# The whole test suite: installs what it needs, then lint, build and tests against real kpt,
# kubectl kustomize, podman and wasmtime. This is the command README.md and .ci/run name.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

cargo fmt --all --check
cargo clippy --workspace --all-targets --features cutover/bench-tools -- -D warnings
# The kpt-WASM shim compiles to nothing on the host: lint it on its own target.
cargo clippy --target wasm32-unknown-unknown -p cutover-kpt-wasm -- -D warnings
cargo build --release --bin cutover

# Container image: built into a private podman store under target/containers/ (see
# scripts/containers-env.sh), used by tests/container.rs, removed on exit whatever happens.
# (tests/readme.rs builds it once more, as the README says, into an empty default store of its own.)
# shellcheck source=scripts/containers-env.sh
source scripts/containers-env.sh
trap cutover_containers_cleanup EXIT
scripts/build-image.sh --private
export CUTOVER_CONTAINER_TESTS=1

# WASI module: the module the host tests run, in parity with the native binary above.
cargo build --target wasm32-wasip1 --release -p cutover --bin cutover
# The module for kpt's own WebAssembly runtime (its own profile, see Cargo.toml), run through
# node and kpt by tests/kpt_wasm/.
cargo build --target wasm32-unknown-unknown --profile kpt-wasm -p cutover-kpt-wasm
# Includes the fuzz suites (tests/fuzz_styles.rs, tests/fuzz_mutation.rs, their regression
# replays) with their fixed seeds and default case counts: FUZZ_* variables are for long runs
# only (docs/reliability.md).
unset FUZZ_CASES FUZZ_SEED FUZZ_FEATURES FUZZ_MUTATIONS FUZZ_KEEP_GOING FUZZ_NO_SHRINK \
    FUZZ_SAVE_REGRESSION FUZZ_TIME_LIMIT_MS FUZZ_HANG_SECS FUZZ_FIRST_CASE
cargo test --no-fail-fast -p cutover --features bench-tools
# Host tests in release only: this also builds target/release/cutover-wasm, with the same
# features as the tests (the `wat` dev-dependency changes wasmtime's), so wasmtime is compiled
# once, not again in debug or for a separate `cargo build`. Not `cargo test --workspace`, which
# would build wasmtime in debug too.
cargo test --no-fail-fast --release -p cutover-wasm
