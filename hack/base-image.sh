#!/usr/bin/env bash
# A Debian base image for containers built here, made from Debian's packages
# (no image registry is needed): `debootstrap --variant=minbase` with python3,
# pip, venv and the CA certificates, plus this machine's extra trusted CA
# certificates (as a corporate CI runner has them), then `podman import`.
#
#   hack/base-image.sh            # prints the image name, e.g. localhost/phasekit-debian:bookworm-0123456789ab
#   hack/base-image.sh --setup    # only the host setup below, prints nothing
#
# Idempotent and cached by its inputs (the steps that make the root filesystem,
# the suite, the mirror, the packages, the extra CA certificates): an image that exists is only named; a
# root filesystem tarball kept in $PHASEKIT_CACHE/images is imported again if
# the image was removed. Only the image name goes to stdout; progress to stderr.
#
# Host setup (root, Debian): installs podman, buildah, runc and debootstrap if
# missing, and writes /etc/containers/containers.conf.d/50-phasekit.conf if it
# is missing (runtime runc, cgroupfs, ulimits no higher than this host's), and
# mounts /dev/mqueue if it is missing (ansible-navigator's podman containers
# share the host's IPC namespace and it refuses to start without it).
#
# Settings: DEBIAN_SUITE (default: this host's codename), DEBIAN_MIRROR (default:
# the first mirror this host's apt uses for that suite), BASE_IMAGE_PACKAGES
# (extra packages, comma-separated), EXTRA_CA_DIR (default /usr/local/share/ca-certificates).
set -euo pipefail

CACHE="${PHASEKIT_CACHE:-$HOME/.cache/phasekit}"
IMAGES="$CACHE/images"
EXTRA_CA_DIR="${EXTRA_CA_DIR:-/usr/local/share/ca-certificates}"
PACKAGES="python3,python3-pip,python3-venv,ca-certificates${BASE_IMAGE_PACKAGES:+,$BASE_IMAGE_PACKAGES}"
CONTAINERS_CONF=/etc/containers/containers.conf.d/50-phasekit.conf

log() { echo "base-image: $*" >&2; }
die() { log "$*"; exit 1; }

host_codename() { . /etc/os-release && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}"; }

host_mirror() {  # $1 suite: the first URI this host's apt sources list for SUITE main (one-line or deb822)
  local file
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] || continue
    # a blank line ends a deb822 stanza; a final empty line ends the last one
    { cat "$file"; echo; } | awk -v s="$1" '
      function found() { return uris != "" && index(suites, " " s " ") && index(comps, " main ") }
      /^deb / { sub(/\[[^]]*\] /, ""); if ($3 == s && index(" " $0 " ", " main ")) { print $2; exit } }
      /^URIs:/ { uris = $2 } /^Suites:/ { suites = " " $0 " " } /^Components:/ { comps = " " $0 " " }
      /^[[:space:]]*$/ { if (found()) { print uris; exit } uris = ""; suites = ""; comps = "" }'
  done | head -n1
}

ensure_tools() {
  local missing=()
  command -v podman >/dev/null || missing+=(podman)
  command -v buildah >/dev/null || missing+=(buildah)
  command -v runc >/dev/null || missing+=(runc)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing: apt-get install ${missing[*]} (as root)"
  log "installing ${missing[*]} (Debian)"
  # make test installs other Debian packages at the same time: wait for dpkg's lock
  apt-get update -qq -o DPkg::Lock::Timeout=600 \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
}

# Containers here run as root under runc with cgroupfs; their ulimits may not be
# raised above the host's, so they are set to the host's own soft limits. podman
# caps its own process limit at kernel.pid_max, so nproc is no higher than that.
ensure_containers_conf() {
  [ -e "$CONTAINERS_CONF" ] && return 0
  [ "$(id -u)" = 0 ] || die "missing $CONTAINERS_CONF (needs root to write)"
  local nofile nproc pid_max
  nofile="$(ulimit -Sn)"; nproc="$(ulimit -Su)"; pid_max="$(cat /proc/sys/kernel/pid_max)"
  [ "$nofile" = unlimited ] && nofile=1048576
  { [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pid_max" ]; } && nproc="$pid_max"
  mkdir -p "$(dirname "$CONTAINERS_CONF")"
  cat >"$CONTAINERS_CONF.tmp" <<CONF
# Written by phasekit.kube hack/base-image.sh: containers on this host run as
# root with runc and cgroupfs, with ulimits no higher than the host's.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  mv "$CONTAINERS_CONF.tmp" "$CONTAINERS_CONF"
  log "wrote $CONTAINERS_CONF"
}

# ansible-runner starts navigator's containers with --ipc=host, which binds the host's /dev/mqueue: navigator checks
# that the directory exists before it runs anything.
ensure_mqueue() {
  [ -d /dev/mqueue ] && return 0
  [ "$(uname -s)" = Linux ] || return 0
  [ "$(id -u)" = 0 ] || die "missing /dev/mqueue (needs root: mkdir /dev/mqueue && mount -t mqueue mqueue /dev/mqueue)"
  mkdir -p /dev/mqueue
  mount -t mqueue mqueue /dev/mqueue 2>/dev/null || log "/dev/mqueue: created, could not mount the mqueue filesystem"
  log "made /dev/mqueue"
}

extra_cas() { find "$EXTRA_CA_DIR" -maxdepth 2 -type f -name '*.crt' 2>/dev/null | LC_ALL=C sort; }

cache_key() {  # $1 suite $2 mirror
  {
    declare -f make_rootfs_tarball extra_cas
    echo "suite=$1 mirror=$2 packages=$PACKAGES arch=$(dpkg --print-architecture)"
    extra_cas | while read -r ca; do echo "ca ${ca#"$EXTRA_CA_DIR"/}"; cat "$ca"; done
  } | sha256sum | cut -c1-12
}

make_rootfs_tarball() {  # $1 suite $2 mirror $3 tarball
  local rootfs ca
  rootfs="$(mktemp -d "${TMPDIR:-/tmp}/phasekit-rootfs.XXXXXX")"
  # shellcheck disable=SC2064 # expand now: the trap must remove this directory
  trap "rm -rf '$rootfs'" RETURN
  log "debootstrap $1 (minbase: $PACKAGES), first time only"
  debootstrap --variant=minbase --include="$PACKAGES" "$1" "$rootfs" ${2:+"$2"} >"$rootfs.log" 2>&1 \
    || { tail -20 "$rootfs.log" >&2; rm -f "$rootfs.log"; die "debootstrap $1 failed"; }
  rm -f "$rootfs.log"
  mkdir -p "$rootfs/usr/local/share/ca-certificates"
  while read -r ca; do
    [ -n "$ca" ] && cp "$ca" "$rootfs/usr/local/share/ca-certificates/"
  done < <(extra_cas)
  chroot "$rootfs" update-ca-certificates >/dev/null
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log
  tar --numeric-owner --xattrs -C "$rootfs" -cf "$3.tmp" .
  mv "$3.tmp" "$3"
}

main() {
  ensure_tools
  ensure_containers_conf
  ensure_mqueue
  [ "${1:-}" = --setup ] && return 0
  local suite mirror key name tarball
  suite="${DEBIAN_SUITE:-$(host_codename)}"
  mirror="${DEBIAN_MIRROR:-$(host_mirror "$suite")}"
  key="$(cache_key "$suite" "$mirror")"
  name="localhost/phasekit-debian:$suite-$key"
  if ! podman image exists "$name"; then
    mkdir -p "$IMAGES"
    tarball="$IMAGES/debian-$suite-$key.tar"
    exec 9>"$IMAGES/.lock"
    flock 9  # another build of the same image finishes first; then it exists
    if ! podman image exists "$name"; then
      [ -s "$tarball" ] || make_rootfs_tarball "$suite" "$mirror" "$tarball"
      podman import --change 'ENV LANG=C.UTF-8' --change 'CMD ["/bin/bash"]' "$tarball" "$name" >/dev/null
      log "imported $name"
    fi
    exec 9>&-
  fi
  echo "$name"
}

main "$@"
