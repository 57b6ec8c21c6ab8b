#!/usr/bin/env bash
# Build the stack's binaries from the Go module proxy into $CACHE/bin. Each binary has a stamp
# holding its recipe (version + ldflags); a binary whose stamp matches is not rebuilt, so a warm
# run costs nothing. Usage: build.sh [--check] [kube|etcd|coredns|helm|kind|all]...
#   --check builds nothing: exits 0 when every named binary is cached with its recipe (a warm
#   cache), else prints what is missing and exits 1. No Go needed. CI uses it to decide.
source "$(dirname "$0")/lib.sh"

CHECK_ONLY=false
[ "${1:-}" = --check ] && { CHECK_ONLY=true; shift; }
MISSING=()
# In --check mode: note a binary that would be built, and build nothing.
would_build() { $CHECK_ONLY && { MISSING+=("$1"); return 0; }; return 1; }
if ! $CHECK_ONLY; then
  GO_BIN=$(find_go) || die "building the stack needs Go >= 1.21 on PATH (or GO=/path/to/go)"
fi
go_env
$CHECK_ONLY || mkdir -p "$BIN" "$CACHE/go/src"
NICE=(nice -n "${ODRADEK_BUILD_NICE:-19}")
in_dir() { (cd "$1" && shift && "$@"); }

kube_ldflags() {
  local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  local flags="-s -w" pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}

# k8s.io/kubernetes replaces its staging modules with ./staging paths, which a module download
# does not have; a scratch module maps each to its published v0.x twin instead.
kube_module() {
  local dir=$CACHE/go/src/kube-$KUBE_VERSION
  [ -f "$dir/.ready" ] && { echo "$dir"; return; }
  mkdir -p "$dir"
  local gomod
  gomod=$(cd "$dir" && "$GO_BIN" mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | jq -r .GoMod)
  {
    echo "module odradek.local/kubebuild"
    echo "go 1.24.0"
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo "replace ("
    grep -E '^\s*k8s.io/[a-z0-9-]+ => \./staging' "$gomod" | awk -v v="v0.${KUBE_VERSION#v1.}" '{print "\t"$1" => "$1" "v}'
    echo ")"
  } >"$dir/go.mod"
  (cd "$dir" && "${NICE[@]}" "$GO_BIN" get \
     "k8s.io/kubernetes/cmd/kube-apiserver@$KUBE_VERSION" >&2)
  touch "$dir/.ready"
  echo "$dir"
}

build_kube() {
  local dir flags c
  flags=$(kube_ldflags)
  for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
    stamp_ok "$c" "$KUBE_VERSION $flags" && { log "$c: cached"; continue; }
    would_build "$c" && continue
    dir=$(kube_module)
    timed "go build $c $KUBE_VERSION" in_dir "$dir" "${NICE[@]}" "$GO_BIN" build -p "$GOMAXPROCS" \
      -trimpath -ldflags "$flags" -o "$BIN/$c" "k8s.io/kubernetes/cmd/$c"
    stamp_write "$c" "$KUBE_VERSION $flags"
  done
}

# etcd's server module carries replace directives, so `go install mod@v` refuses it; a scratch
# module that requires it builds the same main package.
build_etcd() {
  local recipe="$ETCD_VERSION -s -w" dir=$CACHE/go/src/etcd-$ETCD_VERSION
  stamp_ok etcd "$recipe" && { log "etcd: cached"; return; }
  would_build etcd && return
  mkdir -p "$dir"
  [ -f "$dir/go.mod" ] || printf 'module odradek.local/etcdbuild\ngo 1.24.0\n' >"$dir/go.mod"
  in_dir "$dir" "${NICE[@]}" "$GO_BIN" get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  timed "go build etcd $ETCD_VERSION" in_dir "$dir" "${NICE[@]}" "$GO_BIN" build -p "$GOMAXPROCS" \
    -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
  stamp_write etcd "$recipe"
}

go_install() {  # name recipe-extra-ldflags module@version
  local name=$1 ldflags=$2 target=$3
  local recipe="$target $ldflags"
  stamp_ok "$name" "$recipe" && { log "$name: cached"; return; }
  would_build "$name" && return
  timed "go install $target" env GOBIN="$BIN" GOFLAGS= "${NICE[@]}" "$GO_BIN" install -p "$GOMAXPROCS" -trimpath \
    -ldflags "$ldflags" "$target"
  stamp_write "$name" "$recipe"
}

build_coredns() { go_install coredns "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"; }
build_helm() {
  local flags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean" pkg
  for pkg in pkg/chartutil pkg/lint/rules; do  # as Helm's release builds: see HELM_KUBE_MINOR
    flags+=" -X helm.sh/helm/v3/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/$pkg.k8sVersionMinor=$HELM_KUBE_MINOR"
  done
  go_install helm "$flags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}
build_kind() { go_install kind "-s -w" "sigs.k8s.io/kind@$KIND_VERSION"; }

[ $# -gt 0 ] || set -- all
for what in "$@"; do
  case $what in
    all) build_etcd; build_kube; build_coredns; build_helm; build_kind ;;
    kube|etcd|coredns|helm|kind) "build_$what" ;;
    *) die "unknown build target: $what (kube|etcd|coredns|helm|kind|all)" ;;
  esac
done
if $CHECK_ONLY && [ ${#MISSING[@]} -gt 0 ]; then
  echo "not cached in $BIN: ${MISSING[*]}"
  exit 1
fi
