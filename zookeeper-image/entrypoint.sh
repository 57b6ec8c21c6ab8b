#!/bin/sh
# Start one member of a ZooKeeper ensemble run as a StatefulSet.
#
# With arguments, they are ZooKeeper's own (e.g. a mounted zoo.cfg) and nothing is generated.
# Without, zoo.cfg is written from the environment (the official zookeeper image's names):
#   ZOO_SERVERS          the ensemble, space separated: "server.1=host:2888:3888;2181 ..."
#                        (default: derived from ZK_REPLICAS, ZK_HEADLESS_SERVICE, POD_NAMESPACE)
#   ZK_REPLICAS          ensemble size when ZOO_SERVERS is not given (default 1: standalone)
#   ZK_HEADLESS_SERVICE  the governing headless Service (default "<statefulset>-headless")
#   ZOO_DATA_DIR         snapshots, transaction logs and myid (default /var/lib/zookeeper/data)
#   ZOO_CLIENT_PORT (2181), ZOO_TICK_TIME (2000), ZOO_CFG_EXTRA (more "key=value", space separated)
#   JAVA_OPTS            JVM flags (default: a 256 MB heap, serial GC)
# myid is the StatefulSet ordinal + 1 (pod "zk-0" is server.1): ZooKeeper ids start at 1.
# The JVM is exec'd, so it is PID 1 and SIGTERM reaches it.
# shellcheck disable=SC3028  # the container runtime sets HOSTNAME (the pod name)
set -euf
HOSTNAME=${HOSTNAME:-$(cat /proc/sys/kernel/hostname)}
data_dir=${ZOO_DATA_DIR:-/var/lib/zookeeper/data}
conf=${ZOO_CONF_FILE:-/tmp/zoo.cfg}
java_opts=${JAVA_OPTS:--Xms32m -Xmx256m -XX:+UseSerialGC}
classpath="/opt/zookeeper/lib/*"
main=org.apache.zookeeper.server.quorum.QuorumPeerMain

if [ $# -eq 0 ]; then
  ordinal=${HOSTNAME##*-}
  case "$ordinal" in ''|*[!0-9]*) echo "cannot derive myid from HOSTNAME=$HOSTNAME (expected <name>-<ordinal>)" >&2; exit 1;; esac
  myid=$((ordinal + 1))
  statefulset=${HOSTNAME%-*}
  replicas=${ZK_REPLICAS:-1}
  service=${ZK_HEADLESS_SERVICE:-$statefulset-headless}
  namespace=${POD_NAMESPACE:-default}
  client_port=${ZOO_CLIENT_PORT:-2181}
  mkdir -p "$data_dir"
  echo "$myid" >"$data_dir/myid"
  {
    echo "dataDir=$data_dir"
    echo "clientPort=$client_port"
    echo "tickTime=${ZOO_TICK_TIME:-2000}"
    echo "initLimit=10"
    echo "syncLimit=5"
    echo "maxClientCnxns=0"
    echo "autopurge.snapRetainCount=3"
    echo "autopurge.purgeInterval=1"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=srvr,ruok,mntr"
    # A pod's own name resolves only once it is in the Service; listen on every address.
    echo "quorumListenOnAllIPs=true"
    if [ -n "${ZOO_SERVERS:-}" ]; then
      for server in $ZOO_SERVERS; do echo "$server"; done
    elif [ "$replicas" -gt 1 ]; then
      i=0
      while [ "$i" -lt "$replicas" ]; do
        echo "server.$((i + 1))=$statefulset-$i.$service.$namespace.svc.cluster.local:2888:3888;$client_port"
        i=$((i + 1))
      done
    fi
    for kv in ${ZOO_CFG_EXTRA:-}; do echo "$kv"; done
  } >"$conf"
  set -- "$conf"
fi

# shellcheck disable=SC2086  # JAVA_OPTS is a list of JVM flags
exec java $java_opts -Dlogback.configurationFile=/opt/zookeeper/conf/logback.xml \
  -Dzookeeper.4lw.commands.whitelist=srvr,ruok,mntr -cp "$classpath" "$main" "$@"
