#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine with rustup (run as root).
# Idempotent: every step checks before it installs.
set -euo pipefail

need_apt=()
command -v kpt >/dev/null || { echo "kpt is required on PATH (kpt 1.0.0-beta.56 was used)" >&2; exit 1; }
command -v kubectl >/dev/null || { echo "kubectl is required on PATH (kubectl 1.32 with kustomize v5.5.0 was used)" >&2; exit 1; }
command -v git >/dev/null || need_apt+=(git)

if ((${#need_apt[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need_apt[@]}"
fi

rustup component add clippy rustfmt >/dev/null 2>&1 || true
# The function also ships as a WASI module (wasm-host/ runs it); a no-op when already installed.
rustup target add wasm32-wasip1 >/dev/null
