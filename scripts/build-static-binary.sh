#!/usr/bin/env bash
# Builds the static x86_64-unknown-linux-musl release binary of cutover, reproducibly, and prints
# its path (relative to the repository root) on stdout; cargo's output goes to stderr.
#
# The container image (scripts/build-image.sh) and the exec release artifact (scripts/release.sh)
# are this one build, so function.yaml's two sha256 values describe the same bytes. Reproducible:
# the same sources, Cargo.lock and toolchain give the same binary wherever the checkout and the
# cargo home live, because the only absolute paths rustc would embed (panic locations of
# dependencies in the cargo registry, build-script outputs under target/) are remapped.
# RUSTFLAGS from the environment would change the bytes, so they are ignored here; the remap is
# set for the musl target only (CARGO_TARGET_<TRIPLE>_RUSTFLAGS), so host builds (proc macros,
# build scripts) keep sharing cargo's cache with ordinary builds.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

readonly target=x86_64-unknown-linux-musl
repo="$(pwd -P)"
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="--remap-path-prefix=$repo=/cutover --remap-path-prefix=$cargo_home=/cargo"
cargo build --release --locked --target "$target" --bin cutover >&2
echo "${CARGO_TARGET_DIR:-target}/$target/release/cutover"
