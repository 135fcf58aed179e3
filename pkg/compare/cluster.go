package compare

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// What a DaemonSet run must know of the cluster beyond its own objects.

// servedPods lists the pods, outside the run's namespace, that the
// deployed agents serve, on each of nodes, read as nodeagent analyze reads
// a cluster (analyze.List): the same filter of served pods
// (podrefs.Served), the same references and the same objects, so that a
// missing object is a failing mount here as there. A pod whose volumes
// read nothing is left out.
func servedPods(ctx context.Context, client kubernetes.Interface, nodes []string, runNamespace string) (map[string][]model.Pod, error) {
	onNode := map[string]bool{}
	for _, n := range nodes {
		onNode[n] = true
	}
	inv, err := analyze.List(ctx, client, "", 500, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's pods and objects: %w", err)
	}
	served := map[string][]model.Pod{}
	for _, pod := range inv.Pods {
		if !onNode[pod.Node] || pod.Namespace == runNamespace {
			continue
		}
		p := modelPod(pod.Namespace, pod.Name, pod.Refs, inv.Exists)
		if len(p.Reads)+len(p.Retries) > 0 {
			served[pod.Node] = append(served[pod.Node], p)
		}
	}
	return served, nil
}

// withServedPods returns the model's layout of a DaemonSet run: the run's
// own nodes and pods, plus the served pods on every node the agents run on.
func withServedPods(own []model.Node, agentNodes []string, served map[string][]model.Pod) []model.Node {
	byName := map[string]*model.Node{}
	out := make([]model.Node, 0, len(agentNodes))
	for _, n := range own {
		out = append(out, model.Node{Name: n.Name, Pods: slices.Clone(n.Pods)})
	}
	for i := range out {
		byName[out[i].Name] = &out[i]
	}
	for _, name := range agentNodes {
		if _, ok := byName[name]; !ok {
			out = append(out, model.Node{Name: name})
			byName[name] = &out[len(out)-1]
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := range out {
		out[i].Pods = append(out[i].Pods, served[out[i].Name]...)
	}
	return out
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

// prepareDaemonSetRun reads the DaemonSet and the cluster and returns the
// DaemonSet's fleet, the run's scenario as the cluster sets it, and the
// run's own layout on real nodes. It changes nothing; it fails, saying
// what to do, when the run cannot work.
func prepareDaemonSetRun(ctx context.Context, client kubernetes.Interface, opts *Options, prog *progress) (*daemonSetFleet, Scenario, []model.Node, error) {
	fail := func(err error) (*daemonSetFleet, Scenario, []model.Node, error) { return nil, Scenario{}, nil, err }
	t, err := findDaemonSet(ctx, client, opts.DaemonSet)
	if err != nil {
		return fail(err)
	}
	candidates := t.nodes
	if opts.NodeSelector != "" {
		if candidates, err = nodesMatching(ctx, client, opts.NodeSelector, t.nodes); err != nil {
			return fail(err)
		}
		if len(candidates) == 0 {
			return fail(fmt.Errorf("--node-selector %q matches none of the %d nodes with a ready agent of DaemonSet %s", opts.NodeSelector, len(t.nodes), opts.DaemonSet))
		}
	}
	s := opts.Scenario
	s.Remote = true
	if s.Nodes > len(candidates) {
		return fail(fmt.Errorf("--nodes %d: DaemonSet %s has ready agents on %d matching nodes only", s.Nodes, opts.DaemonSet, len(candidates)))
	}
	if s.Nodes == 0 {
		s.Nodes = len(candidates)
	}
	f := &daemonSetFleet{
		client: client, namespace: t.ds.Namespace, name: t.ds.Name, container: t.container,
		rolloutTimeout: opts.RolloutTimeout, progress: prog, agentNodes: t.nodes,
	}
	defaults := agent.DefaultConfig()
	s.SyncFrequency, s.AgentQPS = defaults.SyncFrequency, defaults.KubeAPIQPS
	if opts.SetSyncFrequency {
		s.SyncFrequency, f.syncFrequency = opts.Scenario.SyncFrequency, opts.Scenario.SyncFrequency
	} else if v, ok := flagValue(t.args, agent.FlagSyncFrequency); ok {
		if s.SyncFrequency, err = time.ParseDuration(v); err != nil {
			return fail(fmt.Errorf("DaemonSet %s: --sync-frequency %q: %w", opts.DaemonSet, v, err))
		}
	}
	if v, ok := flagValue(t.args, agent.FlagKubeAPIQPS); ok {
		qps, err := strconv.ParseFloat(v, 32)
		if err != nil {
			return fail(fmt.Errorf("DaemonSet %s: --kube-api-qps %q: %w", opts.DaemonSet, v, err))
		}
		s.AgentQPS = float32(qps)
	}
	if s.TTL, err = nodeTTL(ctx, client, candidates[0]); err != nil {
		return fail(err)
	}
	if s.PhaseDuration == 0 {
		s.PhaseDuration = max(time.Minute, (4 * model.MeanSyncInterval(s.SyncFrequency)).Round(time.Second))
	}
	if err := s.Validate(); err != nil {
		return fail(err)
	}
	if watch := slices.IndexFunc(s.Modes, Mode.usesWatch); watch >= 0 {
		sa := t.ds.Spec.Template.Spec.ServiceAccountName
		allowed, known, err := canWatchConfigMaps(ctx, client, t.ds.Namespace, sa)
		if err != nil {
			return fail(fmt.Errorf("checking the agents' RBAC for the watch mode: %w", err))
		}
		if known && !allowed {
			return fail(fmt.Errorf("mode %s needs list and watch on configmaps for ServiceAccount %s/%s, which it lacks: apply deploy/overlays/watch, or leave %s out of --modes", s.Modes[watch], t.ds.Namespace, sa, s.Modes[watch]))
		}
	}
	if f.served, err = servedPods(ctx, client, t.nodes, opts.Namespace); err != nil {
		return fail(err)
	}
	nodes := layout(s, opts.Namespace)
	for i := range nodes {
		nodes[i].Name = candidates[i]
	}
	return f, s, nodes, nil
}

// nodesMatching keeps the candidates whose labels match selector, in order.
func nodesMatching(ctx context.Context, client kubernetes.Interface, selector string, candidates []string) ([]string, error) {
	if _, err := labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("--node-selector: %w", err)
	}
	matching, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
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
