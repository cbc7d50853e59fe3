#!/usr/bin/env bash
# `make ee`: build the execution environment image from the repository's own
# definition (examples/ee), on the local Debian base image (hack/base-image.sh)
# given as the EE_BASE_IMAGE build argument: the definition users copy keeps its
# conventional base, this machine (no registry) only overrides it.
#
#   hack/build-ee.sh [IMAGE]        # default phasekit-kube-ee:latest
#
# The build context is written outside the repository ($PHASEKIT_CACHE/ee-build);
# podman's layer cache (and a Go build cache mount) make a rebuild after a change
# of the collection only redo the layers that install it.
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

echo "building $image on $base" >&2
podman build --build-arg "EE_BASE_IMAGE=$base" -t "$image" -f "$work/context/Containerfile" "$work/context" >&2
podman image inspect --format '{{.Id}}' "$image" >/dev/null
echo "$image"
