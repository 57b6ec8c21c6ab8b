#!/usr/bin/env bash
# Print the stack's bootstrap objects: RBAC for CoreDNS, the `odradek-local` StorageClass
# (static local PVs, no provisioner, WaitForFirstConsumer, default class) and $PV_COUNT local
# PersistentVolumes under $STACK/pv, pinned to the one node. Reclaim policy Retain: nothing
# deletes a local PV's data behind a test's back; the e2e fixtures wipe and re-offer
# Released volumes (e2e/backends/local.py).
source "$(dirname "$0")/lib.sh"

cat <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:coredns"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:coredns"}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: odradek-local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Retain
YAML
for i in $(seq 0 $((PV_COUNT - 1))); do
  mkdir -p "$STACK/pv/pv$i"
  cat <<YAML
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: odradek-local-pv$i
  labels: {odradek.dev/local-pv: "true"}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: odradek-local
  local: {path: $STACK/pv/pv$i}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [$NODE_NAME]}
YAML
done
