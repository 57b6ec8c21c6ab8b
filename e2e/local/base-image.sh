#!/usr/bin/env bash
# Registry-free base images for the local dockerd:
#   $BASE_IMAGE (local/debian:bookworm)  debootstrap minbase, imported with `docker import`
#   registry.k8s.io/pause:3.10.1         a 15-line static C pause, the pod sandbox image
# Both are only built when missing; the rootfs tarball is kept in the cache so a wiped Docker
# data root costs an import (seconds), not a debootstrap.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

docker_has() { docker image inspect "$1" >/dev/null 2>&1; }

base_tarball() {
  local tarball=$CACHE/base/debian-$DEBIAN_SUITE.tar rootfs=$CACHE/base/rootfs-$DEBIAN_SUITE
  [ -f "$tarball" ] && { echo "$tarball"; return; }
  mkdir -p "$CACHE/base"
  rm -rf "$rootfs"
  timed "debootstrap $DEBIAN_SUITE" debootstrap --variant=minbase \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg "$DEBIAN_SUITE" "$rootfs" ${DEBIAN_MIRROR:+"$DEBIAN_MIRROR"} >&2
  # What a container base needs and a chroot install leaves behind: no package archives or
  # lists (apt-get update refreshes them), the stable security and updates suites enabled.
  local mirror
  mirror=$(awk '$1 == "deb" { print $2; exit }' "$rootfs/etc/apt/sources.list")
  cat >"$rootfs/etc/apt/sources.list" <<SOURCES
deb $mirror $DEBIAN_SUITE main
deb $mirror $DEBIAN_SUITE-updates main
deb ${mirror%/debian}/debian-security $DEBIAN_SUITE-security main
SOURCES
  # Builds on this base reach PyPI and Maven Central over TLS. Where the host trusts extra CAs
  # (an egress proxy that inspects TLS, as on these machines), the base trusts them too: they
  # join the system bundle when a build installs ca-certificates, and pip is pointed at that
  # bundle (pip otherwise uses its own). The base is local-only; it is never pushed anywhere.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$rootfs/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
  fi
  printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/etc/pip.conf"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/var/log/*.log
  tar --numeric-owner -C "$rootfs" -cf "$tarball.tmp" .
  mv "$tarball.tmp" "$tarball"
  rm -rf "$rootfs"
  echo "$tarball"
}

if docker_has "$BASE_IMAGE"; then
  log "$BASE_IMAGE: present"
else
  tarball=$(base_tarball)
  timed "docker import $BASE_IMAGE" docker import "$tarball" "$BASE_IMAGE" >/dev/null
fi

if docker_has "$PAUSE_IMAGE"; then
  log "$PAUSE_IMAGE: present"
else
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  gcc -Os -static -o "$ctx/pause" "$HERE/pause.c"
  strip "$ctx/pause"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Dockerfile"
  docker build -q -t "$PAUSE_IMAGE" "$ctx" >/dev/null
  log "$PAUSE_IMAGE: built"
fi

# The kubelet's sandbox image, saved where up.sh imports it from (no dockerd needed then).
if [ ! -f "$CACHE/images/pause.tar" ]; then
  mkdir -p "$CACHE/images"
  docker save "$PAUSE_IMAGE" -o "$CACHE/images/pause.tar.tmp"
  mv "$CACHE/images/pause.tar.tmp" "$CACHE/images/pause.tar"
fi
