#!/usr/bin/env bash
# For machines with Docker, kind and kubectl: create the kind cluster from
# deploy/kind/cluster.yaml (once), load the image `make image` wrote, deploy
# an overlay (OVERLAY, default kind), check that the agents mount a
# ConfigMap volume on every node, then run a short `nodeagent compare` on
# the deployed DaemonSet and one with simulated nodes. `make e2e-kind` runs it after building what it needs.
#
# Environment: OVERLAY (kind), CLUSTER (nodeagent), KEEP=1 keeps the test
# pod and ConfigMap.
set -euo pipefail
cd "$(dirname "$0")/.."

overlay=${OVERLAY:-kind}
cluster=${CLUSTER:-nodeagent}
bin=_output/bin
for tool in docker kind kubectl; do
  command -v "$tool" >/dev/null || { echo "e2e-kind: $tool is not installed; this target needs Docker, kind and kubectl" >&2; exit 1; }
done
docker info >/dev/null 2>&1 || { echo "e2e-kind: no Docker daemon is reachable" >&2; exit 1; }

if ! kind get clusters | grep -qx "$cluster"; then
  kind create cluster --name "$cluster" --config deploy/kind/cluster.yaml --wait 120s
fi
kubeconfig=$(mktemp)
trap 'rm -f "$kubeconfig"' EXIT
kind get kubeconfig --name "$cluster" >"$kubeconfig"
export KUBECONFIG=$kubeconfig

kind load image-archive _output/nodeagent-image.tar --name "$cluster"
"$bin/kustomize" build "deploy/overlays/$overlay" | kubectl apply --server-side -f -
kubectl -n nodeagent rollout status daemonset/nodeagent --timeout=180s

# One pod per node with a ConfigMap volume; the agent on each node must
# write it under /var/lib/nodeagent on that node.
kubectl create namespace nodeagent-e2e --dry-run=client -o yaml | kubectl apply -f -
kubectl -n nodeagent-e2e create configmap probe --from-literal=greeting=hello --dry-run=client -o yaml | kubectl apply -f -
for node in $(kubectl get nodes -o jsonpath='{.items[*].metadata.name}'); do
  kubectl -n nodeagent-e2e apply -f - <<YAML
apiVersion: v1
kind: Pod
metadata: {name: probe-$node}
spec:
  nodeName: $node
  tolerations: [{operator: Exists}]
  containers: [{name: pause, image: registry.k8s.io/pause:3.10, volumeMounts: [{name: cfg, mountPath: /cfg}]}]
  volumes: [{name: cfg, configMap: {name: probe}}]
YAML
done
for node in $(kubectl get nodes -o jsonpath='{.items[*].metadata.name}'); do
  uid=$(kubectl -n nodeagent-e2e get pod "probe-$node" -o jsonpath='{.metadata.uid}')
  file=/var/lib/nodeagent/pods/$uid/volumes/kubernetes.io~configmap/cfg/greeting
  for _ in $(seq 60); do
    if [[ "$(docker exec "$node" cat "$file" 2>/dev/null)" == hello ]]; then echo "ok: $node has $file"; continue 2; fi
    sleep 1
  done
  echo "e2e-kind: $file never appeared on $node" >&2
  kubectl -n nodeagent logs -l app.kubernetes.io/name=nodeagent --tail=50 >&2
  exit 1
done
[[ "${KEEP:-}" == 1 ]] || kubectl delete namespace nodeagent-e2e --wait=false

# The comparison with the deployed agents on the cluster's real nodes:
# every-sync, then first-reference, each a rollout of the DaemonSet, which
# is restored at the end.
"$bin/nodeagent" compare --kubeconfig "$kubeconfig" --daemonset nodeagent/nodeagent --pods-per-node 5 \
  --sync-frequency 5s --phase-duration 60s --output-dir _output/compare-kind-daemonset

# And with in-process agents on simulated nodes of this cluster.
"$bin/nodeagent" compare --kubeconfig "$kubeconfig" --nodes 5 --pods-per-node 5 --sync-frequency 5s --ttl 25s \
  --phase-duration 60s --output-dir _output/compare-kind
