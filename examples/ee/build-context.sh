#!/usr/bin/env bash
# Write the execution environment's build context: pack the collection from this
# repository, then let ansible-builder write Containerfile and context.
#
#   examples/ee/build-context.sh [CONTEXT_DIR]      # default examples/ee/context
#   podman build -t phasekit-kube-ee:latest examples/ee/context
#
# Needs ansible-core (ansible-galaxy) and ansible-builder, no container engine.
# PHASEKIT_COLLECTION_DIR packs another checkout of the collection.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="${PHASEKIT_COLLECTION_DIR:-$(cd "$here/../.." && pwd)}"
context="${1:-$here/context}"

packed="$(mktemp -d)"
trap 'rm -rf "$packed"' EXIT
ansible-galaxy collection build --force --output-path "$packed" "$repo" >/dev/null
mkdir -p "$here/collections"
# A fixed name, so requirements.yml need not change with the version.
mv "$packed"/phasekit-kube-*.tar.gz "$here/collections/phasekit-kube.tar.gz"

ansible-builder create --file "$here/execution-environment.yml" --context "$context" --output-filename Containerfile
echo "build context: $context"
