# shellcheck shell=bash disable=SC2034  # the settings are used by the scripts that source this
# Shared settings for the local Kubernetes stack (sourced, never run).
#
# Everything this stack builds or runs lives under one cache folder OUTSIDE the repository, so
# fresh clones (CI on this machine) reuse the Go builds, the Docker data and the base image:
#   $CACHE/bin          kube-*, kubelet, kubectl, etcd, coredns, helm, kind (stamped per binary)
#   $CACHE/stamps       one file per built artefact: the recipe it was built from
#   $CACHE/go           GOPATH, GOCACHE and the scratch modules the builds use
#   $CACHE/docker       our own dockerd (data root, exec root, socket, pid, log)
#   $CACHE/rootfs       debootstrap tree of the registry-free base image
#   $CACHE/stack        runtime state of a running stack (PKI, etcd, kubelet, logs, PIDs)
# The versions below are the ones verified on these machines (shared/reference/K8S-LOCAL.md).
set -euo pipefail

CACHE=${ODRADEK_K8S_CACHE:-/var/cache/odradek-k8s}
BIN=$CACHE/bin
STAMPS=$CACHE/stamps
STACK=$CACHE/stack
DOCKER_DIR=$CACHE/docker
export DOCKER_HOST=${ODRADEK_DOCKER_HOST:-unix://$DOCKER_DIR/docker.sock}

KUBE_VERSION=v1.34.4
ETCD_VERSION=v3.6.16
COREDNS_VERSION=v1.12.4
HELM_VERSION=v3.22.0
# The Kubernetes version `helm template` and `helm lint` assume without --kube-version: Helm's
# Makefile sets it from the client-go in its go.mod (v0.37 in v3.22.0 → 1.37); a plain
# `go install` leaves Helm's fallback, v1.20, which every chart with a kubeVersion refuses.
HELM_KUBE_MINOR=37
KIND_VERSION=v0.33.0
DEBIAN_SUITE=bookworm
DEBIAN_MIRROR=${ODRADEK_DEBIAN_MIRROR:-}   # empty: debootstrap's default mirror
BASE_IMAGE=${ODRADEK_LOCAL_BASE_IMAGE:-local/debian:$DEBIAN_SUITE}
PAUSE_IMAGE=registry.k8s.io/pause:3.10.1
# The project's images are tagged with the chart's appVersion (the Makefile's IMAGE_TAG default):
# the tag `helm install ... charts/odradek` deploys when no image tag is set.
CHART_YAML=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/charts/odradek/Chart.yaml
IMAGE_TAG=${IMAGE_TAG:-$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$CHART_YAML")}

# The stack's private network: nothing here is routable from (or to) the host namespace.
NETNS=${ODRADEK_K8S_NETNS:-odradek-k8s}
NETNS_PATH=/run/netns/$NETNS
NODE_NAME=odradek-node
NODE_IP=10.200.0.2
NODE_CIDR=10.200.0.0/24
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
KUBERNETES_SERVICE_IP=10.96.0.1
CLUSTER_DOMAIN=cluster.local
API_PORT=6443
PV_COUNT=${ODRADEK_K8S_PVS:-12}

log() { printf '[k8s-local] %s\n' "$*" >&2; }
die() { printf '[k8s-local] %s\n' "$*" >&2; exit 1; }

# One line saying why the stack cannot run here, or nothing when it can.
why_not_runnable() {
  [ "$(uname -s)" = Linux ] || { echo "the local Kubernetes stack needs Linux"; return; }
  [ "$(id -u)" -eq 0 ] || { echo "the local Kubernetes stack needs root (network namespaces, mounts, cgroups)"; return; }
  if ! command -v ip >/dev/null 2>&1 || ! command -v nsenter >/dev/null 2>&1; then
    echo "the local Kubernetes stack needs iproute2 and util-linux (ip, nsenter)"; return
  fi
  if ! unshare --net true 2>/dev/null; then
    echo "network namespaces are not available here (unshare --net failed)"; return
  fi
}

in_netns() { nsenter --net="$NETNS_PATH" -- "$@"; }

# `nice -n 19` keeps builds from starving the tests other people run on the same 2 cores.
go_env() {
  export GOPATH=$CACHE/go/path GOCACHE=$CACHE/go/cache GOMODCACHE=$CACHE/go/path/pkg/mod
  export GOFLAGS=-mod=mod GOMAXPROCS=${ODRADEK_GO_PROCS:-2} CGO_ENABLED=0 GOTOOLCHAIN=auto
}

stamp_ok() { [ -x "$BIN/$1" ] && [ -f "$STAMPS/$1" ] && [ "$(cat "$STAMPS/$1")" = "$2" ]; }
stamp_write() { mkdir -p "$STAMPS"; printf '%s' "$2" >"$STAMPS/$1"; }

# Record how long a step took, so cold and warm timings are measured, not guessed.
timed() {
  local what=$1; shift
  local start rc=0; start=$(date +%s)
  "$@" || rc=$?
  local took=$(( $(date +%s) - start ))
  mkdir -p "$CACHE"
  printf '%s\t%s\t%ss%s\n' "$(date -u +%FT%TZ)" "$what" "$took" "$([ $rc -eq 0 ] || echo " (exit $rc)")" >>"$CACHE/timings.log"
  log "$what: ${took}s$([ $rc -eq 0 ] || echo " (exit $rc)")"
  return $rc
}

# Go >= 1.21 switches to the toolchain a module asks for (fetched from the Go module proxy);
# Debian bookworm's golang-go (1.19) is too old for Kubernetes 1.34, so it is no fallback.
find_go() {
  local go
  for go in "${GO:-}" "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go; do
    [ -n "$go" ] && [ -x "$go" ] || continue
    if "$go" version | awk '{ split(substr($3, 3), v, "."); exit !(v[1] > 1 || v[2] >= 21) }'; then
      echo "$go"; return
    fi
  done
  return 1
}

PKI=$CACHE/pki
KUBECONFIG_ADMIN=$PKI/admin.kubeconfig
CONTAINERD_SOCK=$STACK/containerd/containerd.sock
PIDS=$STACK/pids
LOGS=$STACK/logs

# Host paths that the kubelet, containerd or CNI create whatever their flags say. `up` records
# which already existed; `down` removes the ones it created.
HOST_SIDE_EFFECT_PATHS=(/run/containerd /var/lib/cni /var/lib/kubelet /var/log/pods
                        /var/log/containers /etc/kubernetes /run/netns /etc/docker)

ctr_local() { ctr -a "$CONTAINERD_SOCK" -n k8s.io "$@"; }
kubectl_local() { in_netns env KUBECONFIG="$KUBECONFIG_ADMIN" "$BIN/kubectl" "$@"; }

# Top-level cgroup folders of every v1 hierarchy (the kubelet and runc add kubepods etc.).
cgroup_dirs() {
  local d
  for d in /sys/fs/cgroup/*/; do find "$d" -mindepth 1 -maxdepth 1 -type d 2>/dev/null || true; done | sort
}

# The host's firewall rules and chains (v4 and v6), counters stripped, for before/after diffs.
iptables_snapshot() {
  { iptables-save 2>/dev/null || true; ip6tables-save 2>/dev/null || true; } \
    | { grep -E '^(\*|:|-A)' || true; } | sed 's/\[[0-9:]*\]//' | sort
}

# The host's link names.
host_links() { ip -o link show | awk -F': ' '{print $2}' | sort; }

pid_alive() { [ -f "$PIDS/$1.pid" ] && kill -0 "$(cat "$PIDS/$1.pid")" 2>/dev/null; }

# Take the stack lock (fd 9) for this script's lifetime: up and down never interleave.
take_stack_lock() {
  mkdir -p "$CACHE"
  exec 9>"$CACHE/stack.lock"
  flock -w "${ODRADEK_K8S_LOCK_WAIT:-120}" 9 \
    || die "another up/down of the local stack holds $CACHE/stack.lock; try again when it ends"
}
