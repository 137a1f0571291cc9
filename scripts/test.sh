#!/usr/bin/env bash
# The whole test suite: installs what it needs, then lint, build and tests against real kpt,
# kubectl kustomize, podman and wasmtime. This is the command README.md and .ci/run name.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo build --release --bin cutover
cargo test --workspace
