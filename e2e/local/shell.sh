#!/usr/bin/env bash
# A shell, or one command, inside the local stack's network namespace as a client of the
# cluster: KUBECONFIG (admin), helm and kubectl from the stack's cache first on PATH, and the
# cluster's DNS (CoreDNS at $NODE_IP:53, search svc.cluster.local cluster.local, ndots 5 as in a
# pod), so <cluster>-bootstrap.<ns>.svc and the brokers' advertised
# <pod>.<cluster>-headless.<ns>.svc.cluster.local resolve as they do in a pod:
#   e2e/local/shell.sh                                   # interactive
#   e2e/local/shell.sh helm install odradek charts/odradek -n streaming --create-namespace --set cluster.enabled=true
#   e2e/local/shell.sh .venv/bin/odradek topics --bootstrap-server odradek-bootstrap.streaming.svc:9092 list
# Nothing changes on the host: that resolv.conf is bind-mounted in a private mount namespace
# of this command only (what `ip netns exec` does with /etc/netns/<netns>/resolv.conf, without
# its /sys remount).
source "$(dirname "$0")/lib.sh"
[ -e "$NETNS_PATH" ] || die "the local stack is not up (netns $NETNS missing): make k8s-up"
resolv=$STACK/client-resolv.conf
printf 'nameserver %s\nsearch svc.%s %s\noptions ndots:5\n' "$NODE_IP" "$CLUSTER_DOMAIN" "$CLUSTER_DOMAIN" >"$resolv"
[ $# -gt 0 ] || set -- "${SHELL:-bash}"
# shellcheck disable=SC2016  # $RESOLV and $@ expand in the inner shell
exec nsenter --net="$NETNS_PATH" -- unshare --mount --propagation private -- \
  env KUBECONFIG="$KUBECONFIG_ADMIN" PATH="$BIN:$PATH" RESOLV="$resolv" \
  sh -c 'mount --bind "$RESOLV" /etc/resolv.conf && exec "$@"' sh "$@"
