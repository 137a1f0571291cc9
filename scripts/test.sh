#!/usr/bin/env bash
# The whole test suite: installs what it needs, then lint, build and tests against real kpt,
# kubectl kustomize, podman and wasmtime. This is the command README.md and .ci/run name.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
cargo build --release --bin cutover

# Container image (issue 5): built into a private podman store under target/containers/ (see
# scripts/containers-env.sh), used by tests/container.rs, removed on exit whatever happens.
# shellcheck source=scripts/containers-env.sh
source scripts/containers-env.sh
trap cutover_containers_cleanup EXIT
scripts/build-image.sh
export CUTOVER_CONTAINER_TESTS=1

cargo test --workspace
