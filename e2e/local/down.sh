#!/usr/bin/env bash
# Stop the local stack and leave the host as up.sh found it:
#   processes by their recorded PIDs (second SIGTERM, then SIGKILL, for the ones that hang),
#   the containers' processes (found through the kubelet's kubepods cgroups) and containerd's
#   shims (found by our containerd socket path), every mount under $STACK, the netns (and with
#   it the veth pair, cni0 and every iptables rule kube-proxy wrote), the cgroup folders that
#   appeared since up, and host paths the kubelet/containerd created. Then it compares links,
#   iptables, sysctls, mounts and cgroups with the snapshot up.sh took and says what differs.
#   --keep-dockerd leaves our dockerd (e2e/local/dockerd.sh) running; by default it stops too.
# Safe to run when nothing is up.
source "$(dirname "$0")/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
keep_dockerd=false
[ "${1:-}" = --keep-dockerd ] && keep_dockerd=true
[ "$(id -u)" -eq 0 ] || die "down needs root"
take_stack_lock

stop_pid() {  # name pid
  local name=$1 pid=$2
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  # kube-apiserver sometimes ignores the first SIGTERM; a second one makes it exit now.
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  log "$name (pid $pid) ignored SIGTERM; SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

cgroup_procs() {  # every PID inside the kubelet's pod cgroups
  cat /sys/fs/cgroup/pids/kubepods/cgroup.procs /sys/fs/cgroup/pids/kubepods/*/cgroup.procs \
      /sys/fs/cgroup/pids/kubepods/*/*/cgroup.procs /sys/fs/cgroup/pids/kubepods/*/*/*/cgroup.procs \
      2>/dev/null | sort -u
}

shim_pids() {  # containerd-shim processes serving OUR containerd, matched by its socket path
  local d
  for d in /proc/[0-9]*; do
    { tr '\0' ' ' <"$d/cmdline"; } 2>/dev/null | grep -q "containerd-shim.*$CONTAINERD_SOCK" && echo "${d#/proc/}"
  done
}

# 1. Kubernetes first (so nothing restarts pods), containerd and its shims last.
for c in coredns kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
  [ -f "$PIDS/$c.pid" ] && stop_pid "$c" "$(cat "$PIDS/$c.pid")"
done
for pid in $(cgroup_procs); do kill -KILL "$pid" 2>/dev/null || true; done
[ -f "$PIDS/containerd.pid" ] && stop_pid containerd "$(cat "$PIDS/containerd.pid")"
for pid in $(shim_pids); do kill -KILL "$pid" 2>/dev/null || true; done
sleep 0.5

# 2. Mounts under the stack (overlay rootfs, volumes, shm, netns binds), deepest first.
if [ -d "$STACK" ]; then
  awk -v root="$STACK/" 'index($5, root) == 1 { print $5 }' /proc/self/mountinfo | sort -r | uniq \
    | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
fi

# 3. The netns: deleting it destroys node0/node0p, cni0, the pods' veths and every rule
#    kube-proxy wrote (they all live inside it).
if [ -e "$NETNS_PATH" ]; then
  ip netns delete "$NETNS" 2>/dev/null || { umount "$NETNS_PATH" 2>/dev/null; rm -f "$NETNS_PATH"; }
fi

# 4. cgroup folders that appeared since up (kubepods, pod and container groups), leaf first.
if [ -f "$STACK/host/cgroups-before" ]; then
  cgroup_dirs | comm -13 "$STACK/host/cgroups-before" - | while read -r top; do
        find "$top" -depth -type d -exec rmdir {} \; 2>/dev/null || true
      done
fi

# 5. Host paths created by the kubelet/containerd/ip netns that were not there before.
if [ -f "$STACK/host/paths-before" ]; then
  for p in "${HOST_SIDE_EFFECT_PATHS[@]}"; do
    [ "$p" = /etc/docker ] && continue   # dockerd.sh owns that one
    if [ -e "$p" ] && ! grep -qx "$p" "$STACK/host/paths-before"; then
      if [ "$p" = /run/netns ]; then
        # `ip netns add` made /run/netns a shared self-bind; undo it once it is empty again.
        if [ -z "$(ls -A /run/netns)" ]; then
          while mountpoint -q /run/netns; do umount /run/netns || break; done
          rmdir /run/netns || true
        fi
      else
        rm -rf "$p"
      fi
    fi
  done
fi

# 6. The host check: what differs from the snapshot up.sh took.
problems=()
for c in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy coredns; do
  pid_alive "$c" && problems+=("$c still running (pid $(cat "$PIDS/$c.pid"))")
done
[ -n "$(shim_pids)" ] && problems+=("containerd shims still running: $(shim_pids | tr '\n' ' ')")
[ -e "$NETNS_PATH" ] && problems+=("netns $NETNS still exists")
if [ -f "$STACK/host/paths-before" ]; then
  for p in "${HOST_SIDE_EFFECT_PATHS[@]}"; do
    [ "$p" = /etc/docker ] && continue
    if [ -e "$p" ] && ! grep -qx "$p" "$STACK/host/paths-before"; then problems+=("$p was created and is still there"); fi
  done
fi
left_mounts=$(awk -v root="$STACK/" 'index($5, root) == 1' /proc/self/mountinfo | wc -l)
[ "$left_mounts" -eq 0 ] || problems+=("$left_mounts mounts left under $STACK")
if [ -d "$STACK/host" ]; then
  host_links | diff -q "$STACK/host/links-before" - >/dev/null \
    || problems+=("host links differ: $(host_links | comm -3 "$STACK/host/links-before" - | tr '\n\t' '  ')")
  iptables_snapshot | diff -q "$STACK/host/iptables-before" - >/dev/null \
    || problems+=("host iptables differ from before up: $(iptables_snapshot | diff "$STACK/host/iptables-before" - | grep -c '^[<>]') line(s)")
  [ -f "$STACK/host/sysctl-before" ] && { sysctl -n net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables 2>/dev/null \
    | diff -q "$STACK/host/sysctl-before" - >/dev/null || problems+=("host sysctls differ (ip_forward / bridge-nf-call-iptables)"); }
  left_cgroups=$(cgroup_dirs | comm -13 "$STACK/host/cgroups-before" - | tr '\n' ' ')
  [ -z "$left_cgroups" ] || problems+=("cgroups left: $left_cgroups")
fi

# 7. Keep the last run's logs for a post-mortem, drop the rest of the state.
if [ -d "$LOGS" ]; then rm -rf "$CACHE/last-logs"; mv "$LOGS" "$CACHE/last-logs"; fi
if [ ${#problems[@]} -eq 0 ]; then
  rm -rf "$STACK"
else
  printf '[k8s-local] host check: %s\n' "${problems[@]}" >&2
fi

$keep_dockerd || "$HERE/dockerd.sh" stop
if [ ${#problems[@]} -eq 0 ]; then
  log "stack down; host check clean (processes, netns, mounts, links, iptables, sysctls, cgroups)"
else
  exit 1
fi
