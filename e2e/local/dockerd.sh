#!/usr/bin/env bash
# Our own Docker engine, entirely under $CACHE/docker: start | stop | status.
#
# It runs with no bridge, no iptables and no ip_forward changes (--bridge=none
# --iptables=false --ip-forward=false), so it leaves the host network as it found it; builds use
# `--network host` to reach the package registries. Any other running engine (DOCKER_HOST set by
# the caller) is left alone: this script only manages the one it started.
source "$(dirname "$0")/lib.sh"

PIDFILE=$DOCKER_DIR/dockerd.pid
SOCK=$DOCKER_DIR/docker.sock

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

start() {
  if running; then log "dockerd already running (pid $(cat "$PIDFILE"))"; return; fi
  command -v dockerd >/dev/null || die "dockerd is not installed (run e2e/local/deps.sh)"
  mkdir -p "$DOCKER_DIR/data" "$DOCKER_DIR/exec" "$DOCKER_DIR/etc"
  # dockerd 20.10 writes its trust key to /etc/docker/key.json whatever the flags; note whether
  # that folder is ours to remove again on stop.
  [ -e /etc/docker ] || touch "$DOCKER_DIR/etc/created-etc-docker"
  # Its containerd puts shim sockets under /run/containerd whatever the exec root.
  [ -e /run/containerd ] || touch "$DOCKER_DIR/etc/created-run-containerd"
  [ -f "$DOCKER_DIR/etc/daemon.json" ] || echo '{}' >"$DOCKER_DIR/etc/daemon.json"
  dockerd -H "unix://$SOCK" --data-root "$DOCKER_DIR/data" --exec-root "$DOCKER_DIR/exec" \
    --pidfile "$PIDFILE" --config-file "$DOCKER_DIR/etc/daemon.json" --storage-driver overlay2 \
    --bridge=none --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
    >"$DOCKER_DIR/dockerd.log" 2>&1 </dev/null 8>&- 9>&- &
  for _ in $(seq 1 60); do
    DOCKER_HOST=unix://$SOCK docker version >/dev/null 2>&1 && { log "dockerd up (pid $(cat "$PIDFILE"))"; return; }
    sleep 0.5
  done
  tail -20 "$DOCKER_DIR/dockerd.log" >&2
  die "dockerd did not answer within 30 s (log: $DOCKER_DIR/dockerd.log)"
}

stop() {
  running || { log "dockerd not running"; return 0; }
  local pid; pid=$(cat "$PIDFILE")
  kill -TERM "$pid"
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -0 "$pid" 2>/dev/null && { log "dockerd ignored SIGTERM for 30 s; SIGKILL"; kill -KILL "$pid"; }
  # dockerd's containers and builds leave cgroup folders behind; remove the empty ones.
  local d
  for d in /sys/fs/cgroup/*/docker /sys/fs/cgroup/docker; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
  done
  # Mounts dockerd leaves under its own folders (the default netns bind, overlay layers).
  awk -v root="$DOCKER_DIR/" 'index($5, root) == 1 { print $5 }' /proc/self/mountinfo | sort -r \
    | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" || true; done
  if [ -f "$DOCKER_DIR/etc/created-run-containerd" ] && [ ! -e "$STACK/pids/containerd.pid" ]; then
    rm -rf /run/containerd; rm -f "$DOCKER_DIR/etc/created-run-containerd"
  fi
  if [ -f "$DOCKER_DIR/etc/created-etc-docker" ]; then
    rm -f /etc/docker/key.json; rmdir /etc/docker 2>/dev/null || true
    rm -f "$DOCKER_DIR/etc/created-etc-docker"
  fi
  rm -f "$PIDFILE"
  log "dockerd stopped"
}

case ${1:-status} in
  start) start ;;
  stop) stop ;;
  status) if running; then echo "running pid $(cat "$PIDFILE") $DOCKER_HOST"; else echo "stopped"; exit 1; fi ;;
  *) die "usage: dockerd.sh start|stop|status" ;;
esac
