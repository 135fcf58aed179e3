package compare

import (
	"context"
	"fmt"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// DefaultNamespace holds a run's pods and ConfigMaps; its simulated Nodes
// are named <namespace>-node-NNN.
const DefaultNamespace = "nodeagent-compare"

// Layout assigns pods to nodes and ConfigMaps to pods, deterministically:
// the run's plan, before admission adds what it adds (observedLayout). A
// fleet on the cluster's own nodes renames the nodes.
func Layout(s Scenario, namespace string) []model.Node {
	nodes := make([]model.Node, s.Nodes)
	for n := range nodes {
		nodes[n].Name = fmt.Sprintf("%s-node-%03d", namespace, n)
		for p := range s.PodsPerNode {
			global := n*s.PodsPerNode + p
			pod := model.Pod{Name: fmt.Sprintf("pod-%05d", global), Volumes: s.ConfigMapsPerPod}
			for c := range s.ConfigMapsPerPod {
				name := fmt.Sprintf("cm-%05d-%d", global, c)
				if s.SharedConfigMaps > 0 {
					name = fmt.Sprintf("shared-%04d", (global*s.ConfigMapsPerPod+c)%s.SharedConfigMaps)
				}
				pod.Reads = append(pod.Reads, configMap(namespace, name))
			}
			if s.ServiceAccountVolume {
				// The admission plugin's kube-api-access volume.
				pod.Volumes++
				pod.Reads = append(pod.Reads, configMap(namespace, objects.RootCAConfigMap))
			}
			nodes[n].Pods = append(nodes[n].Pods, pod)
		}
	}
	return nodes
}

func configMap(namespace, name string) model.Object {
	return model.Object{Kind: model.ConfigMap, Namespace: namespace, Name: name}
}

// ModelPod is pod as the model sees it, read as analyze reads a cluster's
// pods (podrefs): the objects its volumes read, Secrets included, and
// failing mounts where exists says a required object is missing. Volumes
// counts what nodeagent's agents keep on disk (podrefs.AgentVolumes: no
// Secret volume, no volume whose required ConfigMap is missing), which a
// phase waits for; the model's rates do not depend on it.
func ModelPod(namespace, name string, refs podrefs.Refs, exists podrefs.Existence) model.Pod {
	p := podrefs.ModelPod(namespace, name, refs, exists)
	p.Volumes = podrefs.AgentVolumes(namespace, refs, exists)
	return p
}

// runObjectsExist is the existence of a run's own objects: the run
// creates every ConfigMap its pods read before the pods, and waits for
// the namespace's kube-root-ca.crt.
func runObjectsExist(model.Kind, string, string) (exists, immutable, known bool) {
	return true, false, true
}

// observedLayout rebuilds the layout of the run's nodes from the pods as the
// apiserver stored them, so that the model counts the volumes the agents
// will see: the kube-api-access volume only where the cluster's admission
// plugin added it, and whatever else admission changed.
func observedLayout(ctx context.Context, client kubernetes.Interface, namespace string, planned []model.Node) ([]model.Node, error) {
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: objects.StayingSelector(namespace)})
	if err != nil {
		return nil, fmt.Errorf("reading back the run's pods: %w", err)
	}
	byNode := map[string][]model.Pod{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		byNode[pod.Spec.NodeName] = append(byNode[pod.Spec.NodeName], ModelPod(pod.Namespace, pod.Name, podrefs.Of(pod), runObjectsExist))
	}
	out := make([]model.Node, len(planned))
	for i, n := range planned {
		out[i] = model.Node{Name: n.Name, Pods: byNode[n.Name], Arrivals: n.Arrivals}
		if len(out[i].Pods) != len(n.Pods) {
			return nil, fmt.Errorf("node %s has %d of the run's pods, want %d", n.Name, len(out[i].Pods), len(n.Pods))
		}
	}
	return out, nil
}

// withServedPods is what a fleet's agents serve, which the model counts:
// the run's own nodes and pods, plus alsoServed's pods, on every node the
// fleet's agents run on (alsoServed's keys).
func withServedPods(own []model.Node, alsoServed map[string][]model.Pod) []model.Node {
	if alsoServed == nil {
		return own
	}
	out := make([]model.Node, 0, len(alsoServed))
	seen := map[string]bool{}
	for _, n := range own {
		out = append(out, model.Node{Name: n.Name, Pods: slices.Concat(n.Pods, alsoServed[n.Name]), Arrivals: n.Arrivals})
		seen[n.Name] = true
	}
	for name, pods := range alsoServed {
		if !seen[name] {
			out = append(out, model.Node{Name: name, Pods: slices.Clone(pods)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
