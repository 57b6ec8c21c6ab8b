#!/bin/sh
# Start one broker of a StatefulSet. broker.id is the pod's ordinal (pod "odradek-2" → 2) unless
# BROKER_ID is set; the advertised listener is the pod's stable DNS name behind the headless
# service. Everything else comes from the mounted server.properties (a ConfigMap) and
# ODRADEK_OVERRIDES ("key=value key=value").
# SIGTERM: the broker is exec'd, so it is PID 1 and runs its controlled shutdown itself.
# The readiness probe (`odradek broker-ready`) derives the broker id by the same rule.
# shellcheck disable=SC3028  # the container runtime sets HOSTNAME (the pod name)
set -euf
HOSTNAME=${HOSTNAME:-$(cat /proc/sys/kernel/hostname)}
ordinal="${HOSTNAME##*-}"
broker_id="${BROKER_ID:-$ordinal}"
case "$broker_id" in ''|*[!0-9]*) echo "cannot derive broker.id from HOSTNAME=$HOSTNAME; set BROKER_ID" >&2; exit 1;; esac
port="${ODRADEK_PORT:-9092}"
fqdn="${HOSTNAME}.${ODRADEK_HEADLESS_SERVICE:-odradek-headless}.${POD_NAMESPACE:-default}.svc.cluster.local"
config="${ODRADEK_CONFIG:-/etc/odradek/server.properties}"

set -- --override "broker.id=${broker_id}" \
       --override "listeners=PLAINTEXT://0.0.0.0:${port}" \
       --override "advertised.listeners=PLAINTEXT://${fqdn}:${port}" \
       --override "log.dirs=${ODRADEK_DATA_DIR:-/var/lib/odradek/data}"
for kv in ${ODRADEK_OVERRIDES:-}; do set -- "$@" --override "$kv"; done
if [ -f "$config" ]; then
  exec odradek broker "$config" "$@"
fi
exec odradek broker "$@"
