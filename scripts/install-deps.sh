#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine with rustup (run as root).
# Idempotent: every step checks before it installs.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v kpt >/dev/null || { echo "kpt is required on PATH (kpt 1.0.0-beta.56 was used)" >&2; exit 1; }
command -v kubectl >/dev/null || { echo "kubectl is required on PATH (kubectl 1.32 with kustomize v5.5.0 was used)" >&2; exit 1; }
command -v git >/dev/null || need_apt+=(git)
# kpt's WebAssembly runtime for the kpt-WASM module runs it with node (kpt's glue was written for
# node 18; node 20 was used).
command -v node >/dev/null || need_apt+=(nodejs)
# Container image build and tests: podman builds and runs the image (for kpt and behind
# the kustomize docker shim), buildah is the standalone builder (`buildah build` works with the same
# config), runc is the runtime scripts/containers-env.sh selects.
for tool in podman buildah runc; do
  command -v "$tool" >/dev/null || need_apt+=("$tool")
done

# The real-chart render tests (tests/sylva_chart.rs) run Helm's Go library from Python.
command -v python3 >/dev/null || need_apt+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)

if ((${#need_apt[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}"
fi

rustup component add clippy rustfmt >/dev/null 2>&1 || true
# Static binary for the FROM-scratch image (pure Rust: no musl-tools needed).
rustup target add x86_64-unknown-linux-musl
# The function also ships as a WASI module (wasm-host/ runs it). Checked by its files rather
# than left to rustup: two `rustup target add` run at once can drop one target from rustup's
# records while its files stay, and then a second add fails on the conflict.
if [[ ! -d "$(rustc --print sysroot)/lib/rustlib/wasm32-wasip1/lib" ]]; then
  rustup target add wasm32-wasip1
fi
# ... and as a module for kpt's own WebAssembly runtime (kpt-wasm/), checked the same way.
if [[ ! -d "$(rustc --print sysroot)/lib/rustlib/wasm32-unknown-unknown/lib" ]]; then
  rustup target add wasm32-unknown-unknown
fi

# helm-python-sdk (Helm's own Go library, pinned by hash) in a venv of its own, for
# tests/sylva_chart.rs.
helm_venv=target/helm-venv
if ! "$helm_venv/bin/python" -c 'import helm_python' 2>/dev/null; then
  rm -rf "$helm_venv"
  python3 -m venv "$helm_venv"
  "$helm_venv/bin/pip" install -q --require-hashes -r tests/sylva_chart/requirements.txt
fi
