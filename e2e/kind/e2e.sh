#!/usr/bin/env bash
# `make e2e`: the end-to-end suite on a kind cluster, for any machine whose Docker engine can
# pull kindest/node and run privileged containers. Creates the cluster (pinned to a v1.34 node
# image), builds nothing itself (the Makefile's `image` target ran), runs the suite with the kind
# backend (which `kind load`s the images), deletes the cluster. Where kind cannot work it prints
# one line saying why and exits 0: that is a skip, not a pass.
#   KIND_NODE_IMAGE       default kindest/node:v1.34.0 (pin a digest from kind's release notes)
#   ODRADEK_KIND_CLUSTER  default odradek-e2e;  ODRADEK_KIND_KEEP=1 keeps the cluster afterwards
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
NODE_IMAGE=${KIND_NODE_IMAGE:-kindest/node:v1.34.0}
CLUSTER=${ODRADEK_KIND_CLUSTER:-odradek-e2e}
PYTHON=${PYTHON_BIN:-$REPO/.venv/bin/python}
skip() { echo "e2e (kind) skipped: $*"; exit 0; }

docker info >/dev/null 2>&1 || skip "no Docker engine answers at ${DOCKER_HOST:-the default socket} (docker info failed)"
if ! docker image inspect "$NODE_IMAGE" >/dev/null 2>&1 && ! docker pull -q "$NODE_IMAGE" >/dev/null 2>&1; then
  skip "cannot pull $NODE_IMAGE (no container registry reachable)"
fi
if ! docker run --rm --privileged --entrypoint /bin/true "$NODE_IMAGE" >/dev/null 2>&1; then
  skip "this Docker engine cannot run --privileged containers, which kind nodes need"
fi

# kind, and helm for the chart scenarios: from PATH, else built into the shared cache
# (e2e/local/build.sh, from the Go module proxy).
for tool in kind helm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    bash "$REPO/e2e/local/build.sh" "$tool" >&2 || skip "$tool is not installed and could not be built"
    export PATH=${ODRADEK_K8S_CACHE:-/var/cache/odradek-k8s}/bin:$PATH
  fi
done
make -C "$REPO" image >&2

created=false
if ! kind get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
  kind create cluster --name "$CLUSTER" --image "$NODE_IMAGE" --config "$REPO/e2e/kind/cluster.yaml" --wait 180s
  created=true
fi
cleanup() { $created && [ "${ODRADEK_KIND_KEEP:-0}" != 1 ] && kind delete cluster --name "$CLUSTER"; }
trap cleanup EXIT
ODRADEK_E2E_BACKEND=kind ODRADEK_KIND_CLUSTER=$CLUSTER "$PYTHON" -m pytest "$REPO/e2e" -p no:cacheprovider "$@"
