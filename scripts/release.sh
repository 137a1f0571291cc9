#!/usr/bin/env bash
# Produces the release artifacts that function.yaml's runtimes name, and checks (default) or
# updates (--update) the two sha256 values function.yaml gives for them:
#
#   target/release-artifacts/
#     cutover-<version>-linux-amd64   the static exec binary: spec.versions[].runtime.exec
#                                     (uri .../releases/download/v<version>/cutover-<version>-linux-amd64)
#     cutover-<version>.oci.tar       the container image localhost/cutover:<version> as an OCI archive
#                                     (`podman load -i`; `skopeo copy oci-archive:... docker://REGISTRY/...`
#                                     publishes it with the same image ID): runtime.container
#     SHA256SUMS                      sha256sum of both files, plus the image ID
#
# Both come from one reproducible build (scripts/build-static-binary.sh: same sources, Cargo.lock
# and toolchain give the same bytes wherever the checkout lives; the image is built with
# --timestamp 0, so its ID depends only on its inputs). Publishing — uploading the binary and the
# SHA256SUMS to the GitHub release of tag v<version> and pushing the image — is the release
# manager's step after this script passes; nothing here talks to a registry.
#
#   scripts/release.sh [--update] [--out DIR]
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

update=0
out=target/release-artifacts
while (($#)); do
  case "$1" in
    --update) update=1 ;;
    --out) out="${2:?--out needs a directory}"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "release: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

version="$(sed -n '/^\[package\]/,/^\[/ s/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
mkdir -p "$out"
binary_name="cutover-$version-linux-amd64"
archive_name="cutover-$version.oci.tar"

cp "$(scripts/build-static-binary.sh)" "$out/$binary_name"
# The image in the throw-away store (the release must not depend on the builder's own store).
scripts/build-image.sh --private --save "$out/$archive_name" >&2
# shellcheck source=scripts/containers-env.sh
source scripts/containers-env.sh
image_id="$(podman image inspect --format '{{.Id}}' "localhost/cutover:$version")"
image_id="${image_id#sha256:}"
binary_sha="$(sha256sum "$out/$binary_name" | cut -d' ' -f1)"
(
  cd "$out"
  sha256sum "$binary_name" "$archive_name"
  echo "$image_id  image-id:localhost/cutover:$version"
) >"$out/SHA256SUMS"
cat "$out/SHA256SUMS"

# The values function.yaml carries now (every document carries the same runtime).
yaml_image="$(sed -n 's/^ *sha256: \([0-9a-f]\{64\}\) *# image ID$/\1/p' function.yaml | sort -u)"
yaml_binary="$(sed -n 's/^ *sha256: \([0-9a-f]\{64\}\) *# exec binary$/\1/p' function.yaml | sort -u)"
if [[ "$yaml_image" == "$image_id" && "$yaml_binary" == "$binary_sha" ]]; then
  echo "release: function.yaml matches this build"
  exit 0
fi
if ((update)); then
  for old in $yaml_image; do sed -i "s/$old  *# image ID$/$image_id  # image ID/" function.yaml; done
  for old in $yaml_binary; do sed -i "s/$old  *# exec binary$/$binary_sha  # exec binary/" function.yaml; done
  echo "release: function.yaml updated (image ID $image_id, binary $binary_sha)"
  exit 0
fi
echo "release: function.yaml says image ID '$yaml_image' and binary '$yaml_binary'," >&2
echo "release: this build is image ID $image_id and binary $binary_sha: run scripts/release.sh --update" >&2
exit 1
