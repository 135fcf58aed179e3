#!/usr/bin/env bash
# Gives a kind cluster made from nodeagent's offline node image its pod
# network, which kind's own kindnetd would otherwise set up (its image cannot
# be fetched without a registry). Usage: hack/kind/pod-network.sh CLUSTER
#
# On every node it writes a CNI configuration for Debian's bridge and
# host-local plugins over the node's spec.podCIDR, which the controller
# manager allocated, and adds a route to each other node's podCIDR through
# that node's address on kind's Docker network. That is what kindnetd does,
# done once: the cluster's nodes do not change during a test run.
set -euo pipefail
cluster=${1:?usage: $0 CLUSTER}
kubectl() { docker exec -i "$cluster-control-plane" kubectl --kubeconfig=/etc/kubernetes/admin.conf "$@"; }

# Each node's name, podCIDR and InternalIP, once they are allocated.
for _ in $(seq 60); do
  nodes=$(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}')
  if [[ -n "$nodes" ]] && ! awk 'NF < 3 {bad = 1} END {exit !bad}' <<<"$nodes"; then
    break
  fi
  sleep 2
done
awk 'NF < 3 {bad = 1} END {exit bad}' <<<"$nodes" || { echo "pod-network: nodes without a podCIDR or an address:" >&2; echo "$nodes" >&2; exit 1; }

while read -r name cidr _; do
  docker exec -i "$name" sh -c 'mkdir -p /etc/cni/net.d && cat >/etc/cni/net.d/10-nodeagent-kind.conflist' <<JSON
{
  "cniVersion": "1.0.0",
  "name": "nodeagent-kind",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "$cidr"}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
  while read -r other other_cidr other_ip; do
    [[ "$other" == "$name" ]] && continue
    docker exec "$name" ip route replace "$other_cidr" via "$other_ip"
  done <<<"$nodes"
  echo "pod-network: $name has $cidr"
done <<<"$nodes"
