package daemonset

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// What a DaemonSet run must know of the cluster beyond its own objects.

// servedPods lists the pods, outside the run's namespace, that the
// deployed agents serve, on each of nodes (a key for every node, pods or
// not), from the cluster's inventory as nodeagent analyze reads it
// (inventory.List): the same filter of served pods (podrefs.Served), the
// same references and the same objects, so that a missing object is a
// failing mount here as there. A pod whose volumes read nothing is left
// out.
func servedPods(inv *inventory.Inventory, nodes []string, runNamespace string) map[string][]model.Pod {
	served := make(map[string][]model.Pod, len(nodes))
	for _, n := range nodes {
		served[n] = nil
	}
	for _, pod := range inv.Pods {
		if _, onNode := served[pod.Node]; !onNode || pod.Namespace == runNamespace {
			continue
		}
		p := compare.ModelPod(pod.Namespace, pod.Name, pod.Refs, inv.Exists)
		if len(p.Reads)+len(p.Retries) > 0 {
			served[pod.Node] = append(served[pod.Node], p)
		}
	}
	return served
}

// nodesTTL is the TTL most of nodes carry, as the inventory read it (the
// annotation, or the default): what the scenario reports. Each phase
// reads every node's own again, for its model.
func nodesTTL(inv *inventory.Inventory, nodes []string) time.Duration {
	want := sets.New(nodes...)
	ttls := make(map[string]time.Duration, len(nodes))
	for _, n := range inv.Nodes {
		if want.Has(n.Name) {
			ttls[n.Name] = n.TTL
		}
	}
	common, _, _ := compare.CommonTTL(ttls)
	return common
}

// canWatchConfigMaps asks the apiserver whether the ServiceAccount may
// list and watch ConfigMaps in every namespace, which the watch strategy
// needs. A cluster that does not let the caller ask gives no answer (ok
// false) rather than an error.
func canWatchConfigMaps(ctx context.Context, client kubernetes.Interface, namespace, serviceAccount string) (allowed, ok bool, err error) {
	if serviceAccount == "" {
		serviceAccount = "default"
	}
	for _, verb := range []string{"list", "watch"} {
		review, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   "system:serviceaccount:" + namespace + ":" + serviceAccount,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: verb, Resource: "configmaps",
				},
			},
		}, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return false, false, nil
		}
		if err != nil {
			return false, false, err
		}
		if !review.Status.Allowed {
			return false, true, nil
		}
	}
	return true, true, nil
}

// Plan reads the DaemonSet and the cluster: the nodes with a ready agent
// (those --node-selector matches get the run's pods), the agents' sync
// frequency and rate limit from their arguments, the TTL from the nodes,
// and the pods the agents serve besides the run's. It changes nothing; it
// fails, saying what to do, when the run cannot work.
func (f *Fleet) Plan(ctx context.Context, run compare.RunInfo) (compare.Plan, error) {
	f.client, f.progress = run.Client, run.Progress
	t, err := findDaemonSet(ctx, f.client, f.opts.DaemonSet)
	if err != nil {
		return compare.Plan{}, err
	}
	f.container, f.agentNodes = t.container, t.nodes
	candidates, err := f.candidates(ctx, t.nodes)
	if err != nil {
		return compare.Plan{}, err
	}
	inv, err := inventory.List(ctx, f.client, "", 500, nil)
	if err != nil {
		return compare.Plan{}, fmt.Errorf("reading the cluster's pods and objects: %w", err)
	}
	s, err := f.scenario(run.Scenario, t.args, candidates, inv)
	if err != nil {
		return compare.Plan{}, err
	}
	if err := f.checkWatchRBAC(ctx, t, s.Modes); err != nil {
		return compare.Plan{}, err
	}
	f.served = servedPods(inv, t.nodes, run.Namespace)
	nodes := compare.Layout(s, run.Namespace)
	for i := range nodes {
		nodes[i].Name = candidates[i]
	}
	return compare.Plan{
		Scenario: s, Nodes: nodes, NodesDescription: "of DaemonSet " + f.opts.DaemonSet + "'s", AlsoServed: f.served,
		// A rollout may take its whole timeout; each ask scrapes every agent
		// through the apiserver.
		WarmupExtra: f.opts.RolloutTimeout, WarmupPoll: 2 * time.Second,
		Describe: f.describe, PodImage: f.opts.PodImage,
	}, nil
}

// candidates are the nodes that may get the run's pods: those with a
// ready agent that --node-selector matches.
func (f *Fleet) candidates(ctx context.Context, agentNodes []string) ([]string, error) {
	if f.opts.NodeSelector == "" {
		return agentNodes, nil
	}
	candidates, err := nodesMatching(ctx, f.client, f.selector, agentNodes)
	if err != nil {
		return nil, err
	}
	if len(candidates) == 0 {
		return nil, fmt.Errorf("--node-selector %q matches none of the %d nodes with a ready agent of DaemonSet %s", f.opts.NodeSelector, len(agentNodes), f.opts.DaemonSet)
	}
	return candidates, nil
}

// scenario is the run's scenario as the cluster sets it: the nodes (0:
// every candidate), the agents' S and QPS, the nodes' TTL, and a window
// of four mean sync intervals, at least a minute, unless one was given.
func (f *Fleet) scenario(s compare.Scenario, args, candidates []string, inv *inventory.Inventory) (compare.Scenario, error) {
	if s.Nodes > len(candidates) {
		return s, fmt.Errorf("--nodes %d: DaemonSet %s has ready agents on %d matching nodes only", s.Nodes, f.opts.DaemonSet, len(candidates))
	}
	if s.Nodes == 0 {
		s.Nodes = len(candidates)
	}
	defaults := agent.DefaultConfig()
	s.SyncFrequency, s.AgentQPS = defaults.SyncFrequency, defaults.KubeAPIQPS
	if f.opts.SyncFrequency > 0 {
		s.SyncFrequency = f.opts.SyncFrequency
	} else if v, ok := flagValue(args, agent.FlagSyncFrequency); ok {
		var err error
		if s.SyncFrequency, err = time.ParseDuration(v); err != nil {
			return s, fmt.Errorf("DaemonSet %s: --sync-frequency %q: %w", f.opts.DaemonSet, v, err)
		}
	}
	if v, ok := flagValue(args, agent.FlagKubeAPIQPS); ok {
		qps, err := strconv.ParseFloat(v, 32)
		if err != nil {
			return s, fmt.Errorf("DaemonSet %s: --kube-api-qps %q: %w", f.opts.DaemonSet, v, err)
		}
		s.AgentQPS = float32(qps)
	}
	s.TTL = nodesTTL(inv, candidates[:s.Nodes])
	if s.PhaseDuration == 0 {
		s.PhaseDuration = max(time.Minute, (4 * model.MeanSyncInterval(s.SyncFrequency)).Round(time.Second))
	}
	return s, s.Validate()
}

// checkWatchRBAC refuses a watch mode whose agents lack list and watch on
// ConfigMaps, when the cluster says so.
func (f *Fleet) checkWatchRBAC(ctx context.Context, t *daemonSetTarget, list []modes.Mode) error {
	watch := slices.IndexFunc(list, modes.Mode.UsesWatch)
	if watch < 0 {
		return nil
	}
	sa := t.ds.Spec.Template.Spec.ServiceAccountName
	allowed, known, err := canWatchConfigMaps(ctx, f.client, t.ds.Namespace, sa)
	if err != nil {
		return fmt.Errorf("checking the agents' RBAC for the watch mode: %w", err)
	}
	if known && !allowed {
		return fmt.Errorf("mode %s needs list and watch on configmaps for ServiceAccount %s/%s, which it lacks: apply deploy/overlays/watch, or leave %s out of --modes", list[watch], t.ds.Namespace, sa, list[watch])
	}
	return nil
}

// describe records what a DaemonSet run measures, and the caveats that
// come with measuring a shared apiserver.
func (f *Fleet) describe(s *results.ScenarioReport) {
	s.DaemonSet, s.AgentNodes = f.opts.DaemonSet, len(f.agentNodes)
	for _, pods := range f.served {
		s.ServedPods += len(pods)
		for _, p := range pods {
			s.ServedVolumes += p.Volumes
		}
	}
	s.FleetDescription = fmt.Sprintf("Agents: DaemonSet %s on %d nodes, switched between the modes by a rollout; the run's pods are on %d of them. "+
		"The agents also keep %d ConfigMap and projected volumes of %d other pods on those nodes, which the model includes.",
		s.DaemonSet, s.AgentNodes, s.Nodes, s.ServedVolumes, s.ServedPods)
	s.Notes = append(s.Notes,
		"The apiserver counts every client's ConfigMap GETs, not only the agents'. Kubelets with the default Watch "+
			"change-detection strategy send none; kubelets with the Cache strategy and controllers do, in every phase alike.",
		"On a control plane with several apiservers, /metrics comes from the one that answered; each counts only the "+
			"requests it served.")
}

// daemonSetTarget is what a run learns about the DaemonSet before it
// changes anything.
type daemonSetTarget struct {
	ds        *appsv1.DaemonSet
	container string
	args      []string
	// nodes run a ready agent pod, sorted by name.
	nodes []string
}

// findDaemonSet reads namespace/name and the nodes where its agents are
// ready. The agent container is the one named "nodeagent", or the only one.
func findDaemonSet(ctx context.Context, client kubernetes.Interface, ref string) (*daemonSetTarget, error) {
	namespace, name, ok := strings.Cut(ref, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--daemonset %q: want namespace/name, e.g. nodeagent/nodeagent", ref)
	}
	ds, err := client.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading DaemonSet %s: %w", ref, err)
	}
	t := &daemonSetTarget{ds: ds}
	containers := ds.Spec.Template.Spec.Containers
	for _, c := range containers {
		if c.Name == "nodeagent" || len(containers) == 1 {
			t.container, t.args = c.Name, c.Args
		}
	}
	if t.container == "" {
		return nil, fmt.Errorf("DaemonSet %s has %d containers and none is named nodeagent", ref, len(containers))
	}
	if len(t.args) == 0 || t.args[0] != "run" {
		return nil, fmt.Errorf("DaemonSet %s: container %s does not run `nodeagent run` (args %q)", ref, t.container, t.args)
	}
	pods, err := readyPods(ctx, client, ds)
	if err != nil {
		return nil, err
	}
	for _, pod := range pods {
		t.nodes = append(t.nodes, pod.Spec.NodeName)
	}
	if len(t.nodes) == 0 {
		return nil, fmt.Errorf("DaemonSet %s has no ready pods: check `kubectl -n %s get pods -l %s`", ref, namespace, metav1.FormatLabelSelector(ds.Spec.Selector))
	}
	sort.Strings(t.nodes)
	return t, nil
}

// readyPods lists the DaemonSet's pods that are bound, not being deleted,
// and ready.
func readyPods(ctx context.Context, client kubernetes.Interface, ds *appsv1.DaemonSet) ([]corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	pods, err := client.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	var ready []corev1.Pod
	for _, pod := range pods.Items {
		if pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil && podReady(&pod) {
			ready = append(ready, pod)
		}
	}
	return ready, nil
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodesMatching keeps the candidates whose labels match selector, in order.
func nodesMatching(ctx context.Context, client kubernetes.Interface, selector labels.Selector, candidates []string) ([]string, error) {
	matching, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the nodes that match --node-selector %q: %w", selector, err)
	}
	match := map[string]bool{}
	for _, n := range matching.Items {
		match[n.Name] = true
	}
	var out []string
	for _, name := range candidates {
		if match[name] {
			out = append(out, name)
		}
	}
	return out, nil
}
