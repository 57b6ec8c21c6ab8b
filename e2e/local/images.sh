#!/usr/bin/env bash
# Build the project's images with the local dockerd and the registry-free debootstrap base
# (`make image-local`): no container registry is needed, only Debian's mirror, PyPI and Maven
# Central, reached from inside the builds through the host network.
# Usage: images.sh [broker|zookeeper|operator]...   (default: all three)
# Image names come from BROKER_IMAGE, ZOOKEEPER_IMAGE, OPERATOR_IMAGE (the Makefile's defaults),
# else odradek/<image>:$IMAGE_TAG (lib.sh: the chart's appVersion).
source "$(dirname "$0")/lib.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$REPO/e2e/local
TAG=$IMAGE_TAG
BROKER_IMAGE=${BROKER_IMAGE:-odradek/broker:$TAG}
ZOOKEEPER_IMAGE=${ZOOKEEPER_IMAGE:-odradek/zookeeper:$TAG}
OPERATOR_IMAGE=${OPERATOR_IMAGE:-odradek/operator:$TAG}

"$HERE/deps.sh"
"$HERE/dockerd.sh" start
"$HERE/base-image.sh"

build() {  # image dockerfile context build-args...
  local image=$1 dockerfile=$2 context=$3; shift 3
  local buildlog=$CACHE/logs/build-${image//[\/:]/_}.log
  mkdir -p "$CACHE/logs"
  if ! timed "docker build $image" docker build --network host -f "$dockerfile" -t "$image" "$@" "$context" >"$buildlog" 2>&1; then
    tail -25 "$buildlog" >&2
    die "docker build $image failed (log: $buildlog)"
  fi
  log "$image: $(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1 / 1e6}')"
}

[ $# -gt 0 ] || set -- broker zookeeper operator
for what in "$@"; do
  case $what in
    broker) build "$BROKER_IMAGE" "$REPO/broker-image/Dockerfile" "$REPO" --build-arg "BASE_IMAGE=$BASE_IMAGE" ;;
    zookeeper) build "$ZOOKEEPER_IMAGE" "$REPO/zookeeper-image/Dockerfile" "$REPO/zookeeper-image" \
                 --build-arg "BUILD_IMAGE=$BASE_IMAGE" --build-arg "BASE_IMAGE=$BASE_IMAGE" ;;
    operator)
      [ -f "$REPO/operator/pyproject.toml" ] || { log "operator: skipped (operator/pyproject.toml not in this tree yet)"; continue; }
      build "$OPERATOR_IMAGE" "$REPO/operator/Dockerfile" "$REPO" --build-arg "BASE_IMAGE=$BASE_IMAGE" ;;
    *) die "unknown image: $what (broker|zookeeper|operator)" ;;
  esac
done
