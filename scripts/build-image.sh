#!/usr/bin/env bash
# Builds the cutover container image locally, without a Docker engine and without a registry:
#   1. the static x86_64-unknown-linux-musl release binary (cargo);
#   2. a build context staged under target/containers/context/ (binary + passwd + group);
#   3. `podman build` of ./Containerfile with the private containers config written by
#      scripts/containers-env.sh (vfs, runc, cgroupfs, no ulimits, store under target/containers/);
#   4. tags localhost/cutover:<Cargo.toml version> and localhost/cutover:dev; prints the size.
# Run as root. The image lives in target/containers/storage: every podman/kpt/kubectl command that
# should see it must run with the same environment (`source scripts/containers-env.sh`).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly target=x86_64-unknown-linux-musl
readonly repo=localhost/cutover

# One source of truth for the image metadata: the [package] table of Cargo.toml.
package_field() {
  sed -n "/^\[package\]/,/^\[/ s/^$1 = \"\(.*\)\"$/\1/p" Cargo.toml | head -n 1
}
version="$(package_field version)"
[[ -n "$version" ]] || { echo "build-image: no version in Cargo.toml" >&2; exit 1; }

cargo build --release --locked --target "$target" --bin cutover
binary="target/$target/release/cutover"

# shellcheck source=scripts/containers-env.sh
source scripts/containers-env.sh

context="$CUTOVER_CONTAINERS_DIR/context"
rm -rf "$context"
mkdir -p "$context"
cp "$binary" "$context/cutover"
# nologin paths do not exist in the image; nothing ever logs in, the entries only map names to ids.
cat >"$context/passwd" <<'PASSWD'
root:x:0:0:root:/:/sbin/nologin
nobody:x:65534:65534:nobody:/:/sbin/nologin
PASSWD
cat >"$context/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP

# --pull=never: FROM scratch needs nothing, and nothing may come from a registry here.
# --layers=false: no intermediate images left behind (there is nothing to cache).
# --timestamp 0: the image ID depends only on the inputs (reproducible across rebuilds).
podman build \
  --pull=never \
  --layers=false \
  --format oci \
  --timestamp 0 \
  --file Containerfile \
  --build-arg "VERSION=$version" \
  --build-arg "SOURCE=$(package_field repository)" \
  --build-arg "LICENSES=$(package_field license)" \
  --build-arg "DESCRIPTION=$(package_field description)" \
  --tag "$repo:$version" \
  --tag "$repo:dev" \
  "$context"

size="$(podman image inspect --format '{{.Size}}' "$repo:dev")"
echo "build-image: $repo:$version and $repo:dev, $size bytes uncompressed ($((size / 1024)) KiB)"
# The issue's budget; fail loudly rather than ship a regression.
if ((size > 8 * 1024 * 1024)); then
  echo "build-image: image is larger than the 8 MiB budget" >&2
  exit 1
fi
