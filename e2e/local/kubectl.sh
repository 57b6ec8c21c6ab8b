#!/usr/bin/env bash
# kubectl against the local stack, from inside its netns (the only place its addresses exist):
#   e2e/local/kubectl.sh get pods -A
source "$(dirname "$0")/lib.sh"
[ -e "$NETNS_PATH" ] || die "the local stack is not up (netns $NETNS missing): make k8s-up"
exec nsenter --net="$NETNS_PATH" -- env KUBECONFIG="$KUBECONFIG_ADMIN" "$BIN/kubectl" "$@"
