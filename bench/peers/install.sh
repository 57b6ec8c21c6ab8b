#!/bin/sh
# The paper's peers for `make bench`: Debian's rabbitmq-server and activemq, installed only
# when missing. The bench starts them itself (loopback, its own ports and data directories,
# stopped by PID), so the packages' own services must not start: when no policy-rc.d is in
# place, one that refuses every service start is put there for the install and removed after.
set -eu

need=""
command -v rabbitmq-server >/dev/null 2>&1 || need="$need rabbitmq-server"
[ -f /usr/share/activemq/bin/activemq.jar ] || need="$need activemq"
if [ -z "$need" ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "bench/peers/install.sh: need root to apt-get install$need" >&2
    exit 1
fi

policy=/usr/sbin/policy-rc.d
placed=""
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    placed=yes
fi
cleanup() { [ -z "$placed" ] || rm -f "$policy"; }
trap cleanup EXIT

echo "bench/peers/install.sh: installing$need from Debian" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086  # $need is a list of package names
apt-get install -y -qq --no-install-recommends $need >/dev/null
