#!/bin/sh
# Start one broker of a StatefulSet. broker.id is the pod's ordinal (pod "odradek-2" → 2) unless
# BROKER_ID is set; every listener is advertised at the pod's stable DNS name behind the
# headless service. Listeners: ODRADEK_LISTENERS ("NAME:PORT NAME:PORT", their protocols in
# server.properties' listener.security.protocol.map), else one PLAINTEXT listener on
# ODRADEK_PORT. ODRADEK_TLS_DIR (a mounted kubernetes.io/tls Secret: tls.crt, tls.key, optional
# ca.crt) becomes this pod's PEM key store in ODRADEK_RUN_DIR (the broker reads key and chain
# from one file). ODRADEK_SASL_USERNAME/ODRADEK_SASL_PASSWORD (the inter-broker user) become
# sasl.jaas.config. For a secured inter-broker listener, ODRADEK_PROBE_CONFIG receives the
# client properties the readiness probe (`odradek broker-ready`) connects with.
# Everything else comes from the mounted server.properties (a ConfigMap) and
# ODRADEK_OVERRIDES ("key=value key=value").
# Outside listeners (nodeport, loadbalancer, ingress): the ConfigMap's
# broker-<id>.advertised, next to server.properties, holds "NAME://host:port" lines; such a
# listener is advertised there instead of at the pod's DNS name, with ${ODRADEK_NODE_ADDRESS}
# replaced by that variable (the node's IP, from the downward API).
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

outside="$(dirname "$config")/broker-${broker_id}.advertised"
listeners=""
advertised=""
for entry in ${ODRADEK_LISTENERS:-PLAINTEXT:$port}; do
  name="${entry%%:*}"
  lport="${entry#*:}"
  case "$name:$lport" in *[!A-Z0-9_:]*|:*|*:|*:*[!0-9]*) echo "bad ODRADEK_LISTENERS entry: $entry" >&2; exit 1;; esac
  listeners="${listeners:+$listeners,}${name}://0.0.0.0:${lport}"
  address="${name}://${fqdn}:${lport}"
  if [ -f "$outside" ] && line=$(grep -m1 "^${name}://" "$outside"); then
    case "$line" in *\$\{ODRADEK_NODE_ADDRESS\}*)
      node="${ODRADEK_NODE_ADDRESS:?the $name listener advertises the node address: set ODRADEK_NODE_ADDRESS}"
      line="${line%%\$\{ODRADEK_NODE_ADDRESS\}*}${node}${line#*\$\{ODRADEK_NODE_ADDRESS\}}";;
    esac
    address="$line"
  fi
  advertised="${advertised:+$advertised,}${address}"
done

set -- --override "broker.id=${broker_id}" \
       --override "listeners=${listeners}" \
       --override "advertised.listeners=${advertised}" \
       --override "log.dirs=${ODRADEK_DATA_DIR:-/var/lib/odradek/data}"

run_dir="${ODRADEK_RUN_DIR:-/var/run/odradek}"
probe="${ODRADEK_PROBE_CONFIG:-}"
inter="${ODRADEK_INTER_BROKER_PROTOCOL:-PLAINTEXT}"
# Key store and probe properties are the broker user's alone (umask in subshells: the broker's
# own files keep the image's umask).
if [ -n "$probe" ]; then
  # The probe connects to 127.0.0.1: the certificate names the pod, not the loopback.
  (umask 077; mkdir -p "$(dirname "$probe")"
   printf 'security.protocol=%s\nssl.endpoint.identification.algorithm=\n' "$inter" > "$probe")
fi
if [ -n "${ODRADEK_TLS_DIR:-}" ]; then
  tls="$ODRADEK_TLS_DIR"
  for f in tls.crt tls.key; do
    [ -s "$tls/$f" ] || { echo "the TLS Secret has no $f (mounted at $tls)" >&2; exit 1; }
  done
  (umask 077; mkdir -p "$run_dir"; cat "$tls/tls.key" "$tls/tls.crt" > "$run_dir/keystore.pem")
  set -- "$@" --override "ssl.keystore.location=$run_dir/keystore.pem"
  # The probe presents the broker's certificate, as brokers do to each other (clientAuth).
  [ -z "$probe" ] || printf 'ssl.keystore.location=%s\n' "$run_dir/keystore.pem" >> "$probe"
  if [ -s "$tls/ca.crt" ]; then
    set -- "$@" --override "ssl.truststore.location=$tls/ca.crt"
    [ -z "$probe" ] || printf 'ssl.truststore.location=%s\n' "$tls/ca.crt" >> "$probe"
  fi
fi
if [ -n "${ODRADEK_SASL_USERNAME:-}" ]; then
  # JAAS quotes: a backslash or a double quote in the password is escaped with a backslash.
  user=$(printf '%s' "$ODRADEK_SASL_USERNAME" | sed 's/[\\"]/\\&/g')
  pass=$(printf '%s' "${ODRADEK_SASL_PASSWORD:-}" | sed 's/[\\"]/\\&/g')
  jaas="org.apache.kafka.common.security.scram.ScramLoginModule required username=\"$user\" password=\"$pass\";"
  set -- "$@" --override "sasl.jaas.config=$jaas"
  if [ -n "$probe" ]; then
    printf 'sasl.mechanism=%s\nsasl.username=%s\nsasl.password=%s\n' "${ODRADEK_SASL_MECHANISM:-SCRAM-SHA-512}" \
      "$ODRADEK_SASL_USERNAME" "${ODRADEK_SASL_PASSWORD:-}" >> "$probe"
  fi
fi
for kv in ${ODRADEK_OVERRIDES:-}; do set -- "$@" --override "$kv"; done
if [ -f "$config" ]; then
  exec odradek broker "$config" "$@"
fi
exec odradek broker "$@"
