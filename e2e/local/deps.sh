#!/usr/bin/env bash
# Install the Debian packages the local stack and the local image builds need. Idempotent:
# apt runs only when something is missing.
source "$(dirname "$0")/lib.sh"

PACKAGES=(docker.io containerd runc debootstrap containernetworking-plugins iptables conntrack
          socat ethtool kmod openssl gcc libc6-dev iproute2 util-linux jq ca-certificates)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  log "Debian packages: all present"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || die "installing ${missing[*]} needs root"
log "installing from Debian: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
install() {
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
timed "apt install (${#missing[@]} packages)" install
