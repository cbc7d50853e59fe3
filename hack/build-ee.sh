#!/usr/bin/env bash
# `make ee`: build the execution environment image from the repository's own
# definition (examples/ee), on the local Debian base image (hack/base-image.sh)
# given as the EE_BASE_IMAGE build argument: the definition users copy keeps its
# conventional base, this machine (no registry) only overrides it.
#
#   hack/build-ee.sh [IMAGE]        # default phasekit-kube-ee:latest
#
# The build context is written outside the repository ($PHASEKIT_CACHE/ee-build);
# podman's layer cache makes a rebuild after a change of the collection only redo
# the layers that install it. The builder stage compiles kubectl, helm and sops
# with hack/build-tools.sh's Go version: this machine's Go build and module caches
# (where `make tools` built the same versions with the same Go) are bound into it,
# so it only links them; without a go command here it uses its own cache mount.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
image="${1:-phasekit-kube-ee:latest}"
cache="${PHASEKIT_CACHE:-$HOME/.cache/phasekit}"
work="$cache/ee-build"

base="$(bash hack/base-image.sh)"

# The definition refers to ../../requirements.txt, ../../bindep.txt and ../../hack/build-tools.sh:
# lay those out as in the repository, around a copy of examples/ee.
rm -rf "$work" && mkdir -p "$work/tree/examples" "$work/tree/hack"
cp -r examples/ee "$work/tree/examples/ee"
rm -rf "$work/tree/examples/ee/context" "$work/tree/examples/ee/collections"
cp requirements.txt bindep.txt "$work/tree/"
cp hack/build-tools.sh "$work/tree/hack/"
PHASEKIT_COLLECTION_DIR="$repo" bash "$work/tree/examples/ee/build-context.sh" "$work/context" >&2

go_caches=()
if command -v go >/dev/null; then
  gocache="$(GOTOOLCHAIN=local go env GOCACHE)" gomodcache="$(GOTOOLCHAIN=local go env GOMODCACHE)"
  if [[ "$gocache" == /* && "$gomodcache" == /* ]]; then  # GOCACHE=off: none to share
    mkdir -p "$gocache" "$gomodcache"
    go_caches=(--volume "$gocache:/phasekit-host-go/build" --volume "$gomodcache:/phasekit-host-go/mod"
               --build-arg GOCACHE=/phasekit-host-go/build --build-arg GOMODCACHE=/phasekit-host-go/mod)
  fi
fi

shared="${go_caches[*]:+, with the Go caches of this machine}"
echo "building $image on $base$shared" >&2
podman build --build-arg "EE_BASE_IMAGE=$base" "${go_caches[@]}" \
  -t "$image" -f "$work/context/Containerfile" "$work/context" >&2
podman image inspect --format '{{.Id}}' "$image" >/dev/null
echo "$image"
