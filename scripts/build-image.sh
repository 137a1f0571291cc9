#!/usr/bin/env bash
# Builds the cutover container image locally, without a registry:
#   1. the static musl release binary (scripts/build-static-binary.sh, reproducible);
#   2. a build context of the binary plus minimal passwd/group files;
#   3. ./Containerfile (FROM scratch) built and tagged localhost/cutover:<Cargo.toml version> and
#      localhost/cutover:dev; prints the engine, the image ID and the size.
#
#   scripts/build-image.sh [--private] [--engine podman|docker] [--save FILE]
#
# Where the image goes (so that the engine kpt or kustomize then runs finds it):
#   default        the engine you use: `docker build` when a Docker engine answers (`docker info`;
#                  kpt and kustomize run containers with docker unless told otherwise), else
#                  `podman build` into your normal podman/buildah store (whatever your
#                  storage.conf or CONTAINERS_STORAGE_CONF says) — then run kpt with
#                  KPT_FN_RUNTIME=podman;
#   --engine E     that engine, without probing;
#   --private      the throw-away store of scripts/containers-env.sh under target/containers/
#                  (what the test suite uses; same as CUTOVER_IMAGE_STORE=private). Commands that
#                  should see the image need the same environment: `source scripts/containers-env.sh`.
#   --save FILE    also write the image to FILE for loading elsewhere: an OCI archive with podman
#                  (`podman load -i FILE`), a `docker save` archive with docker (`docker load -i FILE`).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

readonly repo=localhost/cutover
engine=""
save=""
private="${CUTOVER_IMAGE_STORE:-}"
while (($#)); do
  case "$1" in
    --private) private=private ;;
    --engine) engine="${2:?--engine needs podman or docker}"; shift ;;
    --engine=*) engine="${1#--engine=}" ;;
    --save) save="${2:?--save needs a file name}"; shift ;;
    --save=*) save="${1#--save=}" ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [[ -n "$private" && "$private" != private ]]; then
  echo "build-image: CUTOVER_IMAGE_STORE must be 'private' or empty, not '$private'" >&2
  exit 2
fi

# One source of truth for the image metadata: the [package] table of Cargo.toml.
package_field() {
  sed -n "/^\[package\]/,/^\[/ s/^$1 = \"\(.*\)\"$/\1/p" Cargo.toml | head -n 1
}
version="$(package_field version)"
[[ -n "$version" ]] || { echo "build-image: no version in Cargo.toml" >&2; exit 1; }

if [[ -n "$private" ]]; then
  [[ -z "$engine" || "$engine" == podman ]] || { echo "build-image: --private builds with podman" >&2; exit 2; }
  engine=podman
  # shellcheck source=scripts/containers-env.sh
  source scripts/containers-env.sh
  context="$CUTOVER_CONTAINERS_DIR/context"
else
  context=target/image-context
  if [[ -z "$engine" ]]; then
    if command -v docker >/dev/null && timeout 20 docker info >/dev/null 2>&1; then
      engine=docker
    elif command -v podman >/dev/null; then
      engine=podman
    else
      echo "build-image: neither a Docker engine (docker info failed) nor podman found" >&2
      exit 1
    fi
  fi
fi
case "$engine" in
  podman | docker) command -v "$engine" >/dev/null || { echo "build-image: $engine not found" >&2; exit 1; } ;;
  *) echo "build-image: unknown engine $engine (podman or docker)" >&2; exit 2 ;;
esac

binary="$(scripts/build-static-binary.sh)"

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

build_args=(
  --file Containerfile
  --build-arg "VERSION=$version"
  --build-arg "SOURCE=$(package_field repository)"
  --build-arg "LICENSES=$(package_field license)"
  --build-arg "DESCRIPTION=$(package_field description)"
  --tag "$repo:$version"
  --tag "$repo:dev"
)
if [[ "$engine" == podman ]]; then
  # --pull=never: FROM scratch needs nothing, and nothing may come from a registry here.
  # --layers=false: no intermediate images left behind (there is nothing to cache).
  # --timestamp 0: the image ID depends only on the inputs (function.yaml's container sha256).
  podman build --pull=never --layers=false --format oci --timestamp 0 "${build_args[@]}" "$context"
else
  # BuildKit (for COPY --chmod); its image ID differs from podman's (other builder, timestamps).
  DOCKER_BUILDKIT=1 docker build "${build_args[@]}" "$context"
fi

id="$("$engine" image inspect --format '{{.Id}}' "$repo:dev")"
size="$("$engine" image inspect --format '{{.Size}}' "$repo:dev")"
store="your $engine store"
[[ -n "$private" ]] && store="the private store $CUTOVER_CONTAINERS_DIR (source scripts/containers-env.sh to use it)"
echo "build-image: $repo:$version and $repo:dev in $store"
echo "build-image: image ID ${id#sha256:}, $size bytes uncompressed ($((size / 1024)) KiB)"
if [[ -n "$save" ]]; then
  mkdir -p "$(dirname "$save")"
  rm -f "$save"
  if [[ "$engine" == podman ]]; then
    podman save --format oci-archive --output "$save" "$repo:$version"
  else
    docker save --output "$save" "$repo:$version" "$repo:dev"
  fi
  echo "build-image: saved $repo:$version to $save ($engine load -i $save)"
fi
if [[ "$engine" == podman && -z "$private" ]]; then
  echo "build-image: run it with KPT_FN_RUNTIME=podman kpt fn eval PKG --image $repo:dev --image-pull-policy never"
fi
# The size budget; fail loudly rather than ship a regression.
if ((size > 8 * 1024 * 1024)); then
  echo "build-image: image is larger than the 8 MiB budget" >&2
  exit 1
fi
