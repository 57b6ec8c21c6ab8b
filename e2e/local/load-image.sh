#!/usr/bin/env bash
# Copy images from our dockerd into the stack's containerd (namespace k8s.io), where the
# kubelet finds them: `docker save | ctr images import`. Pods then use the same names with
# imagePullPolicy IfNotPresent or Never (a name like odradek/broker:0.1.0 is docker.io/odradek/...
# to both). An image already loaded (same image id) is skipped. Usage: load-image.sh IMAGE...
source "$(dirname "$0")/lib.sh"
[ $# -gt 0 ] || die "usage: load-image.sh IMAGE..."
pid_alive containerd || die "the stack's containerd is not running (run e2e/local/up.sh)"
mkdir -p "$STACK/loaded"
for image in "$@"; do
  id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null) || die "image $image is not in the local dockerd ($DOCKER_HOST)"
  # The same build is already in this stack's containerd: nothing to copy.
  stamp=$STACK/loaded/${image//[\/:]/_}
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$id" ]; then log "$image: already loaded"; continue; fi
  # shellcheck disable=SC2016  # $1 and $2 expand in the inner shell
  timed "load-image $image" bash -c 'set -o pipefail; docker save "$1" | ctr -a "$2" -n k8s.io images import - >/dev/null' \
    _ "$image" "$CONTAINERD_SOCK"
  echo "$id" >"$stamp"
done
