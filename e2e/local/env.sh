#!/usr/bin/env bash
# Print the stack's coordinates as KEY=VALUE lines, for tools that are not shell scripts (the
# e2e backends read them, so lib.sh stays the one place that defines them).
source "$(dirname "$0")/lib.sh"
cat <<ENV
ODRADEK_K8S_CACHE=$CACHE
KUBECONFIG=$KUBECONFIG_ADMIN
NETNS=$NETNS
NETNS_PATH=$NETNS_PATH
CONTAINERD_SOCK=$CONTAINERD_SOCK
DOCKER_HOST=$DOCKER_HOST
STORAGE_CLASS=odradek-local
NODE_NAME=$NODE_NAME
BIN=$BIN
APISERVER_PIDFILE=$PIDS/kube-apiserver.pid
ENV
reason=$(why_not_runnable)
echo "UNRUNNABLE_REASON=$reason"
