#!/usr/bin/env bash
# `make e2e-local`: everything from a bare machine to a green (or red) end-to-end run on the
# local stack, each step cached and timed ($CACHE/timings.log):
#   deps (apt) → build (Go proxy; stamped, warm = no-op) → images (local dockerd, debootstrap
#   base) → up → pytest e2e inside the netns (the fixtures load the images) → down (always,
#   unless the stack was up before this run: then it is left as it was).
# One run at a time per cache: a second one stops at once with a clear line. Where the stack
# cannot run (no root, no netns) it prints one line saying why and exits 0: a skip.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PYTHON=${PYTHON_BIN:-$REPO/.venv/bin/python}

reason=$(why_not_runnable)
[ -z "$reason" ] || { echo "e2e-local skipped: $reason"; exit 0; }
mkdir -p "$CACHE"
exec 8>"$CACHE/e2e.lock"
flock -n 8 || die "another e2e-local run holds $CACHE/e2e.lock; wait for it to finish"

timed "e2e-local: deps" "$HERE/deps.sh"
# kind is only for `make e2e`; helm is for the chart scenarios.
timed "e2e-local: build" "$HERE/build.sh" etcd kube coredns helm
timed "e2e-local: images" "$HERE/images.sh" broker zookeeper operator
# A stack someone brought up before (make k8s-up) is used and left up; one we start, we stop.
started_here=true
if pid_alive kube-apiserver; then started_here=false; fi
timed "e2e-local: up" "$HERE/up.sh"
# shellcheck disable=SC2329  # run by the EXIT trap
teardown() { if $started_here; then timed "e2e-local: down" "$HERE/down.sh"; fi; }
trap teardown EXIT
status=0
timed "e2e-local: suite" env ODRADEK_E2E_BACKEND=local DOCKER_HOST="$DOCKER_HOST" \
  nsenter --net="$NETNS_PATH" -- "$PYTHON" -m pytest "$REPO/e2e" -p no:cacheprovider "$@" || status=$?
# The CRD contract against the real API server (CEL rules, status subresource, printer
# columns, finalizers): skipped in `make test`, where no cluster is given.
timed "e2e-local: api-server" env KUBECONFIG="$KUBECONFIG_ADMIN" PATH="$BIN:$PATH" \
  nsenter --net="$NETNS_PATH" -- "$PYTHON" -m pytest "$REPO/tests/operator/test_api_server.py" \
  -p no:cacheprovider || status=$?
exit $status
