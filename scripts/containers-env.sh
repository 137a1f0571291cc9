# shellcheck shell=bash
# Sourced, not executed: `source scripts/containers-env.sh`.
#
# Points podman and buildah at a private, throw-away configuration under target/containers/ so
# that building and running the cutover image works on a root Debian machine without a Docker
# engine and without touching /etc/containers or /var/lib/containers:
#   - storage driver vfs: no overlay/fuse requirements (works inside containers and on any fs);
#   - runtime runc, cgroup_manager cgroupfs: no systemd needed;
#   - default_ulimits = []: podman's default nofile ulimit cannot always be applied here;
#   - graphroot/runroot/tmp_dir/network_config_dir under one directory, so clean-up is `rm -rf`.
#     (podman 4.3 as root still creates an empty /run/containers/networks: its netavark run
#     directory is hard-coded. It lives on tmpfs and holds nothing with --network none.)
# Override the location with CUTOVER_CONTAINERS_DIR (must be an absolute path).
# Exports CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, CONTAINERS_REGISTRIES_CONF and
# CUTOVER_CONTAINERS_DIR; every podman/buildah/kpt/kubectl run that inherits them uses this store.

_cutover_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CUTOVER_CONTAINERS_DIR="${CUTOVER_CONTAINERS_DIR:-$_cutover_repo/target/containers}"
unset _cutover_repo

mkdir -p "$CUTOVER_CONTAINERS_DIR"/{storage,run,tmp,networks}

cat >"$CUTOVER_CONTAINERS_DIR/containers.conf" <<CONF
# Written by scripts/containers-env.sh; regenerated on every run.
[containers]
default_ulimits = []

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
# journald may be absent; a file logger keeps podman quiet and self-contained.
events_logger = "file"
events_logfile_path = "$CUTOVER_CONTAINERS_DIR/run/events.log"
tmp_dir = "$CUTOVER_CONTAINERS_DIR/tmp"
image_copy_tmp_dir = "$CUTOVER_CONTAINERS_DIR/tmp"
volume_path = "$CUTOVER_CONTAINERS_DIR/storage/volumes"

[network]
network_config_dir = "$CUTOVER_CONTAINERS_DIR/networks"
CONF

cat >"$CUTOVER_CONTAINERS_DIR/storage.conf" <<CONF
# Written by scripts/containers-env.sh; regenerated on every run.
[storage]
driver = "vfs"
graphroot = "$CUTOVER_CONTAINERS_DIR/storage"
runroot = "$CUTOVER_CONTAINERS_DIR/run"
CONF

# No registries: nothing may be pulled here, and short names must never resolve to a remote.
cat >"$CUTOVER_CONTAINERS_DIR/registries.conf" <<CONF
# Written by scripts/containers-env.sh; regenerated on every run.
unqualified-search-registries = []
short-name-mode = "enforcing"
CONF

export CUTOVER_CONTAINERS_DIR
export CONTAINERS_CONF="$CUTOVER_CONTAINERS_DIR/containers.conf"
export CONTAINERS_STORAGE_CONF="$CUTOVER_CONTAINERS_DIR/storage.conf"
export CONTAINERS_REGISTRIES_CONF="$CUTOVER_CONTAINERS_DIR/registries.conf"

# podman 4.3 (root) creates /run/containers/networks whatever the config says; remember whether
# it was there so clean-up removes only what we created.
if [[ -e /run/containers/networks ]]; then
  _cutover_run_networks_preexisted=1
else
  _cutover_run_networks_preexisted=0
fi

# Removes everything the container build and tests created: the private store (images included)
# and the config files. For `trap cutover_containers_cleanup EXIT` in scripts/test.sh.
cutover_containers_cleanup() {
  rm -rf "$CUTOVER_CONTAINERS_DIR"
  if ((_cutover_run_networks_preexisted == 0)); then
    # rmdir: only if empty, i.e. nothing else has started using it meanwhile.
    rmdir /run/containers/networks /run/containers 2>/dev/null || true
  fi
}
