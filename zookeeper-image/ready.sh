#!/bin/bash
# Readiness: the server answers `srvr` and serves requests (it is the leader, a follower or
# standalone). A member outside a quorum answers "not currently serving requests", which fails.
# bash's /dev/tcp keeps the image free of nc/curl.
set -euo pipefail
port=${ZOO_CLIENT_PORT:-2181}
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'srvr' >&3
reply=$(timeout "${1:-3}" cat <&3)
exec 3<&-
case "$reply" in
  *"Mode: leader"*|*"Mode: follower"*|*"Mode: standalone"*) exit 0 ;;
  *) echo "zookeeper not serving: ${reply:-no answer}" >&2; exit 1 ;;
esac
