#!/usr/bin/env bash
# Copy images from our dockerd into the stack's containerd (namespace k8s.io), where the
# kubelet finds them: `docker save | ctr images import`. Pods then use the same names with
# imagePullPolicy IfNotPresent or Never (a name like odradek/broker:dev is docker.io/odradek/...
# to both). Usage: load-image.sh IMAGE...
source "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || die "usage: load-image.sh IMAGE..."
pid_alive containerd || die "the stack's containerd is not running (run e2e/local/up.sh)"
for image in "$@"; do
  docker image inspect "$image" >/dev/null 2>&1 || die "image $image is not in the local dockerd ($DOCKER_HOST)"
  # shellcheck disable=SC2016  # $1 and $2 expand in the inner shell
  timed "load-image $image" bash -c 'set -o pipefail; docker save "$1" | ctr -a "$2" -n k8s.io images import - >/dev/null' \
    _ "$image" "$CONTAINERD_SOCK"
done
