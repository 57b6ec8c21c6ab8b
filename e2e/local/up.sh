#!/usr/bin/env bash
# Start the local Kubernetes stack in its own network namespace:
#   netns $NETNS: lo + a veth pair holding the node IP ($NODE_IP, not loopback: kubelet and
#   kube-proxy refuse a loopback node IP) and a dead-end default route, so nothing leaves it.
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd, kubelet,
#   kube-proxy (iptables) and CoreDNS (bound to the node IP) run as processes inside it, each
#   started with `nsenter --net` (not `ip netns exec`, which remounts /sys and hides the cgroup
#   tree from the kubelet). PIDs in $STACK/pids, logs in $STACK/logs.
# Idempotent: a stack that is already up and healthy is left as it is.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)

reason=$(why_not_runnable)
[ -z "$reason" ] || die "cannot start: $reason"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl coredns; do
  [ -x "$BIN/$b" ] || die "$BIN/$b is missing: run e2e/local/build.sh first"
done
for b in containerd containerd-shim-runc-v2 runc iptables conntrack; do
  command -v "$b" >/dev/null || die "$b is missing: run e2e/local/deps.sh first"
done
take_stack_lock

COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy coredns)
if pid_alive kube-apiserver; then
  dead=()
  for c in "${COMPONENTS[@]}"; do pid_alive "$c" || dead+=("$c"); done
  [ ${#dead[@]} -eq 0 ] && { log "stack already up (netns $NETNS)"; exit 0; }
  die "stack half up (not running: ${dead[*]}); run e2e/local/down.sh first"
fi
[ -e "$NETNS_PATH" ] && die "netns $NETNS exists without a running stack; run e2e/local/down.sh first"

# A failed start tears down what it started (the logs stay in $CACHE/last-logs), so a failure
# never leaves a half stack behind. The lock is released first: down.sh takes it itself.
# shellcheck disable=SC2329  # run by the EXIT trap
undo_on_failure() {
  local rc=$?
  [ "$rc" -eq 0 ] && return
  log "up failed (exit $rc): tearing down what it started; logs in $CACHE/last-logs"
  exec 9>&-
  "$HERE/down.sh" --keep-dockerd || true
  exit "$rc"
}
trap undo_on_failure EXIT

"$HERE/pki.sh"
mkdir -p "$PIDS" "$LOGS" "$STACK/host" "$STACK/etcd" "$STACK/kubelet/root" "$STACK/kubelet/pod-logs" \
  "$STACK/containerd" "$STACK/cni/net.d" "$STACK/cni/ipam" "$STACK/pv"

# --- what the host looks like before we touch it (down.sh compares against it) ---------------
for p in "${HOST_SIDE_EFFECT_PATHS[@]}"; do if [ -e "$p" ]; then echo "$p"; fi; done >"$STACK/host/paths-before"
cgroup_dirs >"$STACK/host/cgroups-before"
host_links >"$STACK/host/links-before"
iptables_snapshot >"$STACK/host/iptables-before"
sysctl -n net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables >"$STACK/host/sysctl-before" 2>/dev/null || true

# --- network namespace -----------------------------------------------------------------------
ip netns add "$NETNS"
in_netns ip link set lo up
in_netns ip link add node0 type veth peer name node0p
in_netns ip addr add "$NODE_IP/24" dev node0
in_netns ip link set node0 up
in_netns ip link set node0p up
in_netns ip route add default dev node0
in_netns sysctl -qw net.ipv4.ip_forward=1
in_netns sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true

# --- configuration ---------------------------------------------------------------------------
cat >"$STACK/containerd/config.toml" <<TOML
version = 2
root = "$STACK/containerd/root"
state = "$STACK/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$STACK/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # The VM lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj, so let containerd not ask.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STACK/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
TOML

cat >"$STACK/cni/net.d/10-odradek.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "odradek-pods",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$STACK/cni/ipam",
              "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
JSON

echo "nameserver $NODE_IP" >"$STACK/kubelet/resolv.conf"
cat >"$STACK/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
clusterDNS: [$NODE_IP]
clusterDomain: $CLUSTER_DOMAIN
resolvConf: $STACK/kubelet/resolv.conf
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
podLogsDir: $STACK/kubelet/pod-logs
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
# Imported images exist nowhere else: never garbage-collect them, never evict for disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "200Mi", nodefs.available: "1%", imagefs.available: "1%"}
serializeImagePulls: false
YAML

cat >"$STACK/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $PKI/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE_NAME
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# 0 = leave the conntrack sysctls alone (nf_conntrack_max is not per-namespace).
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML

cat >"$STACK/Corefile" <<COREFILE
.:53 {
    bind $NODE_IP
    errors
    kubernetes $CLUSTER_DOMAIN in-addr.arpa ip6.arpa {
        kubeconfig $PKI/coredns.kubeconfig odradek-local
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
COREFILE

# --- processes -------------------------------------------------------------------------------
spawn() {  # name command...: runs inside the netns, own session, PID recorded
  local name=$1; shift
  # 8>&- 9>&-: the long-lived processes must not inherit (and so hold) the e2e/stack locks.
  setsid nsenter --net="$NETNS_PATH" -- "$@" >"$LOGS/$name.log" 2>&1 </dev/null 8>&- 9>&- &
  echo $! >"$PIDS/$name.pid"
}
wait_for() {  # what seconds command...: fails at once when the process "what" has exited
  local what=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  while [ "$SECONDS" -lt "$deadline" ]; do
    "$@" >/dev/null 2>&1 && return 0
    if [ -f "$PIDS/$what.pid" ] && ! pid_alive "$what"; then
      tail -5 "$LOGS/$what.log" >&2
      die "$what exited (log: $LOGS/$what.log)"
    fi
    sleep 0.5
  done
  die "$what not ready after ${secs}s (logs: $LOGS)"
}

spawn etcd "$BIN/etcd" --name odradek --data-dir "$STACK/etcd" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster odradek=http://127.0.0.1:2380 --log-level warn
wait_for etcd 30 in_netns bash -c 'exec 3<>/dev/tcp/127.0.0.1/2379'

spawn kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
  --bind-address=0.0.0.0 --secure-port=$API_PORT --advertise-address="$NODE_IP" \
  --service-cluster-ip-range="$SERVICE_CIDR" --client-ca-file="$PKI/ca.crt" \
  --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
  --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$PKI/ca.crt" \
  --kubelet-preferred-address-types=InternalIP,Hostname \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --service-account-issuer="https://kubernetes.default.svc.$CLUSTER_DOMAIN" \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
  --allow-privileged=true --profiling=false
wait_for kube-apiserver 90 kubectl_local get --raw /readyz

spawn kube-controller-manager "$BIN/kube-controller-manager" \
  --kubeconfig="$PKI/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$PKI/controller-manager.kubeconfig" \
  --authorization-kubeconfig="$PKI/controller-manager.kubeconfig" \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --use-service-account-credentials=true --leader-elect=false --bind-address=127.0.0.1 \
  --profiling=false
spawn kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$PKI/scheduler.kubeconfig" \
  --authentication-kubeconfig="$PKI/scheduler.kubeconfig" \
  --authorization-kubeconfig="$PKI/scheduler.kubeconfig" \
  --leader-elect=false --bind-address=127.0.0.1 --profiling=false

spawn containerd containerd --config "$STACK/containerd/config.toml"
wait_for containerd 30 ctr_local version
# The sandbox image comes from the cache, not a registry (base-image.sh builds it).
[ -f "$CACHE/images/pause.tar" ] || { "$HERE/dockerd.sh" start; "$HERE/base-image.sh"; }
ctr_local images import "$CACHE/images/pause.tar" >/dev/null

spawn kubelet "$BIN/kubelet" --config="$STACK/kubelet/config.yaml" \
  --kubeconfig="$PKI/kubelet.kubeconfig" --root-dir="$STACK/kubelet/root" \
  --node-ip="$NODE_IP" --hostname-override="$NODE_NAME"
spawn kube-proxy "$BIN/kube-proxy" --config="$STACK/kube-proxy.yaml"

# RBAC for CoreDNS, the local StorageClass and its PersistentVolumes.
"$HERE/manifests.sh" | kubectl_local apply -f - >/dev/null
spawn coredns "$BIN/coredns" -conf "$STACK/Corefile"

wait_for "node $NODE_NAME Ready" 90 kubectl_local wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
wait_for "default ServiceAccount" 60 kubectl_local get serviceaccount default
wait_for coredns 30 in_netns bash -c "exec 3<>/dev/tcp/$NODE_IP/53"
log "stack up in netns $NETNS: KUBECONFIG=$KUBECONFIG_ADMIN (use it inside the netns: nsenter --net=$NETNS_PATH)"
