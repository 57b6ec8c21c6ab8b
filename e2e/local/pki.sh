#!/usr/bin/env bash
# PKI and kubeconfigs for the local stack (openssl; made once, kept in $CACHE/pki).
# Every kubeconfig points at https://127.0.0.1:6443: inside the stack's netns that is the
# apiserver; from the host namespace the same address refuses locally instead of sending a
# packet towards a cluster address that only exists in the netns.
source "$(dirname "$0")/lib.sh"

PKI=$CACHE/pki
[ -f "$PKI/.complete" ] && { log "PKI: present"; exit 0; }
mkdir -p "$PKI"
cd "$PKI"
DAYS=3650

openssl genrsa -out ca.key 2048 2>/dev/null
openssl req -x509 -new -key ca.key -subj "/CN=odradek-local-ca" -days $DAYS -out ca.crt

cert() {  # name subject [subjectAltName] [extendedKeyUsage]
  local name=$1 subject=$2 san=${3:-} eku=${4:-clientAuth}
  openssl genrsa -out "$name.key" 2048 2>/dev/null
  openssl req -new -key "$name.key" -subj "$subject" -out "$name.csr"
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days $DAYS \
    -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

cert apiserver "/CN=kube-apiserver" \
  "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN,DNS:localhost,DNS:$NODE_NAME,IP:127.0.0.1,IP:$KUBERNETES_SERVICE_IP,IP:$NODE_IP" \
  serverAuth
cert kubelet-serving "/CN=$NODE_NAME" "DNS:$NODE_NAME,IP:$NODE_IP,IP:127.0.0.1" serverAuth
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert admin "/O=system:masters/CN=kubernetes-admin"
cert controller-manager "/CN=system:kube-controller-manager"
cert scheduler "/CN=system:kube-scheduler"
cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
cert kube-proxy "/O=system:node-proxier/CN=system:kube-proxy"
cert coredns "/CN=system:coredns"
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null

kubeconfig() {  # name user
  cat >"$1.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: odradek-local
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $(base64 -w0 ca.crt)
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$1.crt")
    client-key-data: $(base64 -w0 "$1.key")
contexts:
- name: odradek-local
  context: {cluster: odradek-local, user: $2}
current-context: odradek-local
KC
}
kubeconfig admin kubernetes-admin
kubeconfig controller-manager system:kube-controller-manager
kubeconfig scheduler system:kube-scheduler
kubeconfig kubelet "system:node:$NODE_NAME"
kubeconfig kube-proxy system:kube-proxy
kubeconfig coredns system:coredns
chmod 600 ./*.key ./*.kubeconfig
touch .complete
log "PKI: generated in $PKI"
