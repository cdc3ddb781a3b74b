#!/usr/bin/env bash
# Build the simulated GPU host image, cached by a hash of its inputs.
#
#   tests/sim/image/build.sh            # prints the image reference, e.g. localhost/specdec-sim:3f2a...
#
# Two layers, each cached on its own:
#   base  debootstrap'd Debian bookworm with systemd (slow: ~1 min), keyed by this script's BASE_* inputs;
#   sim   the base plus the fake nvidia-smi and pynvml, GPU layouts, the SGLang emulator and the simulated trainer
#         (seconds), keyed by those files.
# Rebuilding with unchanged inputs costs one `podman image exists`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
sim=$(cd "$here/.." && pwd)
repo=$(cd "$sim/../.." && pwd)
cache=${SIM_CACHE_DIR:-$repo/.cache/sim}
name=${SIM_IMAGE_NAME:-localhost/specdec-sim}

BASE_SUITE=bookworm
BASE_MIRROR=${SIM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE_PACKAGES=systemd,systemd-sysv,dbus,openssh-server,python3,procps,iproute2

log() { echo "build.sh: $*" >&2; }

base_hash=$(printf '%s\n' "$BASE_SUITE" "$BASE_PACKAGES" "$(sed -n '/^base_rootfs()/,/^}/p' "$0")" | sha256sum | cut -c1-16)
base_ref="$name-base:$base_hash"

# The sim layer's inputs: every file copied into the image (content and mode: sim-init must stay executable),
# plus this script.
sim_inputs=("$0" "$here/Containerfile")
while IFS= read -r -d '' f; do sim_inputs+=("$f"); done < <(
  find "$sim/nvidia_smi" "$sim/pynvml" "$sim/layouts" "$sim/sglang_emulator" "$sim/image/rootfs" -type f \
    ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 | sort -z)
sim_inputs+=("$sim/trainer/sim_trainer.py")
# the SGLang build profiles and option lists the emulator's parser is made from
builds=$repo/plugins/plugin_utils/sglang_builds
sim_inputs+=("$repo/plugins/plugin_utils/sglang_build.py" "$repo/plugins/module_utils/_common.py" "$builds/builds.yml")
while IFS= read -r -d '' f; do sim_inputs+=("$f"); done < <(find "$builds" \( -name '*.options.json' -o -name '*.metrics.json' \) -print0 | sort -z)
sim_hash=$( { echo "$base_hash"; for f in "${sim_inputs[@]}"; do
  printf '%s %s %s\n' "${f#"$repo"/}" "$(stat -c %a "$f")" "$(sha256sum < "$f" | cut -c1-64)"; done; } | sha256sum | cut -c1-16)
sim_ref="$name:$sim_hash"

base_rootfs() {
  # debootstrap needs a real root; minbase keeps it small. machine-id empty: systemd makes one per container.
  local root=$1
  debootstrap --variant=minbase --include="$BASE_PACKAGES" "$BASE_SUITE" "$root" "$BASE_MIRROR" >&2
  chroot "$root" apt-get clean
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
  : > "$root/etc/machine-id"
  # Units that cannot work in a container or that would slow boot.
  for unit in systemd-networkd-wait-online.service getty@tty1.service console-getty.service \
              systemd-logind.service; do
    ln -sf /dev/null "$root/etc/systemd/system/$unit"
  done
  # Root logs in with the key the harness puts in authorized_keys; no passwords.
  sed -i 's/^#\?PermitRootLogin.*/PermitRootLogin prohibit-password/' "$root/etc/ssh/sshd_config"
  rm -f "$root"/etc/ssh/ssh_host_*
}

if ! podman image exists "$base_ref"; then
  log "building base image $base_ref (debootstrap $BASE_SUITE)"
  work=$(mktemp -d /var/tmp/specdec-sim-base.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  base_rootfs "$work/root"
  tar -C "$work/root" -c . | podman import \
    --change 'CMD ["/sbin/init"]' --change 'STOPSIGNAL SIGRTMIN+3' --change 'ENV container=podman' \
    - "$base_ref" >/dev/null
  rm -rf "$work"
  trap - EXIT
fi

if ! podman image exists "$sim_ref"; then
  log "building sim image $sim_ref"
  # The context: tests/sim plus the merged option list of every build (release options + the build's own flags)
  # and the builds' /metrics lists.
  context=$(mktemp -d /var/tmp/specdec-sim-context.XXXXXX)
  trap 'rm -rf "$context"' EXIT
  cp -a "$sim/nvidia_smi" "$sim/pynvml" "$sim/layouts" "$sim/sglang_emulator" "$sim/image" "$sim/trainer" "$context/"
  # sglang_build imports the collection (module_utils/_common): the checkout as ansible_collections/specdec/bench
  mkdir -p "$context/collections/ansible_collections/specdec"
  ln -s "$repo" "$context/collections/ansible_collections/specdec/bench"
  PYTHONPATH="$context/collections" "${PYTHON:-$repo/.venv/bin/python}" -c 'import sys
from ansible_collections.specdec.bench.plugins.plugin_utils.sglang_build import write_option_lists
write_option_lists(sys.argv[1])' "$context/sglang_builds"
  # the /metrics lists (<build>.metrics.json) the emulator serves with --enable-metrics, beside the option lists
  cp "$builds"/*.metrics.json "$context/sglang_builds/"
  rm -rf "$context/collections"
  podman build --quiet --pull=never --build-arg "BASE=$base_ref" -f "$here/Containerfile" -t "$sim_ref" "$context" >/dev/null
  rm -rf "$context"
  trap - EXIT
fi
podman tag "$sim_ref" "$name:latest"
mkdir -p "$cache"
echo "$sim_ref" > "$cache/image"
echo "$sim_ref"
