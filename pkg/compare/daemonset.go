package compare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/pkg/apimetrics"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

const (
	// originalTemplateAnnotation holds, on the DaemonSet, its pod template
	// as it was before a comparison changed it. A run that dies before it
	// can restore leaves it there, and the next run restores from it.
	originalTemplateAnnotation = "nodeagent.io/compare-original-template"
	// modeAnnotation on the pod template names the phase's mode. It also
	// makes every phase a rollout, so each starts with fresh agents.
	modeAnnotation = "nodeagent.io/compare-mode"
)

// daemonSetFleet is the agents of a DaemonSet deployed on the cluster.
// Each phase sets the agent container's --configmap-strategy and
// --cache-invalidation (and --sync-frequency when the run chooses one) and
// waits for the rollout; restore puts the original template back.
type daemonSetFleet struct {
	client         kubernetes.Interface
	namespace      string
	name           string
	container      string
	syncFrequency  time.Duration // 0 keeps the DaemonSet's
	rolloutTimeout time.Duration
	progress       *progress
	// agentNodes run an agent; served are the pods there, outside the
	// run's namespace, whose ConfigMap volumes the agents also keep.
	agentNodes []string
	served     map[string][]model.Pod

	// pods are the phase's agent pods once rolled out; unreachable says
	// a scrape through the apiserver's pod proxy failed in this phase.
	pods        []corev1.Pod
	unreachable error
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

// saveOriginal records the DaemonSet's template in an annotation, unless
// an earlier run that did not restore left one: that one is the original.
func (f *daemonSetFleet) saveOriginal(ctx context.Context) (restoredEarlierRun bool, err error) {
	err = f.update(ctx, func(ds *appsv1.DaemonSet) error {
		if _, ok := ds.Annotations[originalTemplateAnnotation]; ok {
			restoredEarlierRun = true
			return nil
		}
		data, err := json.Marshal(ds.Spec.Template)
		if err != nil {
			return err
		}
		if ds.Annotations == nil {
			ds.Annotations = map[string]string{}
		}
		ds.Annotations[originalTemplateAnnotation] = string(data)
		return nil
	})
	return restoredEarlierRun, err
}

// localRoots: the agents write on the cluster's nodes, not here.
func (f *daemonSetFleet) localRoots() map[string]string { return nil }

func (f *daemonSetFleet) start(ctx context.Context, mode Mode, _ time.Duration) error {
	// The flags a phase sets; the others stay the DaemonSet's.
	spec := mode.spec()
	strategy, invalidation := spec.cacheOptions()
	settings := agent.Config{Strategy: strategy, Invalidation: invalidation, RemountOnChange: spec.remountOnChange, SyncFrequency: f.syncFrequency}
	set := map[string]bool{
		agent.FlagConfigMapStrategy: true,
		agent.FlagCacheInvalidation: true,
		agent.FlagRemountOnChange:   mode.usesWatch(),
		agent.FlagSyncFrequency:     f.syncFrequency > 0,
	}
	f.pods, f.unreachable = nil, nil
	err := f.update(ctx, func(ds *appsv1.DaemonSet) error {
		tmpl := &ds.Spec.Template
		for i := range tmpl.Spec.Containers {
			c := &tmpl.Spec.Containers[i]
			if c.Name != f.container {
				continue
			}
			for _, flag := range settings.Flags() {
				if set[flag.Name] {
					c.Args = withFlag(c.Args, flag.Name, flag.Value)
				}
			}
		}
		if tmpl.Annotations == nil {
			tmpl.Annotations = map[string]string{}
		}
		tmpl.Annotations[modeAnnotation] = fmt.Sprintf("%s-%d", mode, time.Now().Unix())
		return nil
	})
	if err != nil {
		return fmt.Errorf("switching DaemonSet %s/%s to %s: %w", f.namespace, f.name, mode, err)
	}
	f.progress.done("%-19s rolling out DaemonSet %s/%s", mode, f.namespace, f.name)
	if err := f.waitForRollout(ctx, string(mode)); err != nil {
		return err
	}
	ds, err := f.client.AppsV1().DaemonSets(f.namespace).Get(ctx, f.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	f.pods, err = readyPods(ctx, f.client, ds)
	return err
}

// waitForRollout returns once every scheduled pod runs the current
// template and is available, as `kubectl rollout status` decides.
func (f *daemonSetFleet) waitForRollout(ctx context.Context, what string) error {
	start, state := time.Now(), ""
	err := wait.PollUntilContextTimeout(ctx, time.Second, f.rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		ds, err := f.client.AppsV1().DaemonSets(f.namespace).Get(ctx, f.name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading DaemonSet %s/%s: %w", f.namespace, f.name, err)
		}
		var done bool
		if done, state = rolloutState(ds); done {
			f.progress.done("%-19s rollout done in %.1fs: %s", what, time.Since(start).Seconds(), state)
			return true, nil
		}
		f.progress.status("%-19s rollout  %5.0fs  %s", what, time.Since(start).Seconds(), state)
		return false, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("DaemonSet %s/%s did not roll out within --rollout-timeout %s (%s): check `kubectl -n %s get pods` and the agents' logs",
			f.namespace, f.name, f.rolloutTimeout, state, f.namespace)
	}
	return err
}

// rolloutState says whether a DaemonSet's rollout is complete, and where
// it stands in words.
func rolloutState(ds *appsv1.DaemonSet) (bool, string) {
	st := ds.Status
	if ds.Generation > st.ObservedGeneration {
		return false, "waiting for the DaemonSet controller to see the change"
	}
	state := fmt.Sprintf("%d of %d pods updated, %d available", st.UpdatedNumberScheduled, st.DesiredNumberScheduled, st.NumberAvailable)
	return st.UpdatedNumberScheduled >= st.DesiredNumberScheduled && st.NumberAvailable >= st.DesiredNumberScheduled, state
}

// restore puts the original template back and removes the annotation;
// with wait it also waits for that rollout.
func (f *daemonSetFleet) restore(ctx context.Context, wait bool) error {
	err := f.update(ctx, func(ds *appsv1.DaemonSet) error {
		data, ok := ds.Annotations[originalTemplateAnnotation]
		if !ok {
			return errors.New("the annotation " + originalTemplateAnnotation + " with the original pod template is gone")
		}
		var tmpl corev1.PodTemplateSpec
		if err := json.Unmarshal([]byte(data), &tmpl); err != nil {
			return fmt.Errorf("reading annotation %s: %w", originalTemplateAnnotation, err)
		}
		ds.Spec.Template = tmpl
		delete(ds.Annotations, originalTemplateAnnotation)
		return nil
	})
	if err != nil || !wait {
		return err
	}
	return f.waitForRollout(ctx, "restore")
}

// update applies change to the current DaemonSet, retrying on conflicts
// with other writers (the DaemonSet controller writes status, not spec,
// but a person may edit it).
func (f *daemonSetFleet) update(ctx context.Context, change func(*appsv1.DaemonSet) error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ds, err := f.client.AppsV1().DaemonSets(f.namespace).Get(ctx, f.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := change(ds); err != nil {
			return err
		}
		_, err = f.client.AppsV1().DaemonSets(f.namespace).Update(ctx, ds, metav1.UpdateOptions{})
		return err
	})
}

// scrape reads every agent's /metrics through the apiserver's pod proxy.
// After the first failure in a phase it stops trying: the proxy may not
// reach pod IPs (a firewall, a loopback pod IP), and counters from some
// agents only would mislead.
func (f *daemonSetFleet) scrape(ctx context.Context, each func(*apimetrics.Snapshot)) error {
	if f.unreachable != nil {
		return f.unreachable
	}
	for _, pod := range f.pods {
		port := metricsPort(&pod, f.container)
		path := fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:%s/proxy/metrics", pod.Namespace, pod.Name, port)
		scrapeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		data, err := f.client.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(scrapeCtx)
		cancel()
		var s *apimetrics.Snapshot
		if err == nil {
			s, err = apimetrics.Parse(strings.NewReader(string(data)), time.Now())
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The proxy refuses loopback and link-local pod IPs, and needs
			// a network path from the apiserver to the pods.
			f.unreachable = fmt.Errorf("%w: pod %s (IP %s) through the apiserver's pod proxy: %v", errNoAgentMetrics, pod.Name, pod.Status.PodIP, err)
			f.progress.done("Reading the agents' /metrics: %v; measuring from the apiserver's counters only", f.unreachable)
			return f.unreachable
		}
		each(s)
	}
	return nil
}

// metricsPort is the container port named http, else the port of the
// agent's --http-address, else the agent's default.
func metricsPort(pod *corev1.Pod, container string) string {
	for _, c := range pod.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, p := range c.Ports {
			if p.Name == "http" {
				return strconv.Itoa(int(p.ContainerPort))
			}
		}
		if addr, ok := flagValue(c.Args, agent.FlagHTTPAddress); ok {
			if _, port, err := net.SplitHostPort(addr); err == nil {
				return port
			}
		}
	}
	_, port, _ := net.SplitHostPort(agent.DefaultConfig().HTTPAddress)
	return port
}

func (f *daemonSetFleet) volumesMounted(ctx context.Context) (int, error) {
	total := 0.0
	err := f.scrape(ctx, func(s *apimetrics.Snapshot) { total += s.Sum(agent.MetricVolumesMounted, nil) })
	return int(total), err
}

func (f *daemonSetFleet) counters(ctx context.Context) (agentCounters, error) {
	var c agentCounters
	err := f.scrape(ctx, c.addFrom)
	return c, err
}

// stop does nothing: the deployed agents keep running, and the next phase
// or restore rolls them.
func (f *daemonSetFleet) stop() {}

// prepare records the DaemonSet's pod template before the first rollout
// changes it, and adds the pods of the cluster's own that the agents also
// serve to what the model counts.
func (f *daemonSetFleet) prepare(ctx context.Context, own []model.Node) ([]model.Node, error) {
	restoredEarlier, err := f.saveOriginal(ctx)
	if err != nil {
		return nil, fmt.Errorf("recording DaemonSet %s/%s's pod template before changing it: %w", f.namespace, f.name, err)
	}
	if restoredEarlier {
		f.progress.done("DaemonSet %s/%s still carries the template an earlier run did not restore; it will be restored at the end.", f.namespace, f.name)
	}
	return withServedPods(own, f.agentNodes, f.served), nil
}

// cleanup restores the original template at once, also after Ctrl-C, and
// waits for the rollout only when not interrupted, so that Ctrl-C returns
// promptly.
func (f *daemonSetFleet) cleanup(interrupted bool) {
	ctx, cancel := context.WithTimeout(context.Background(), f.rolloutTimeout+time.Minute)
	defer cancel()
	f.progress.done("Restoring DaemonSet %s/%s's original pod template...", f.namespace, f.name)
	if err := f.restore(ctx, !interrupted); err != nil {
		f.progress.done("restoring DaemonSet %s/%s: %v; restore it by hand from its annotation %s", f.namespace, f.name, err, originalTemplateAnnotation)
	} else if interrupted {
		f.progress.done("Restored; the rollout continues: `kubectl -n %s rollout status daemonset/%s`", f.namespace, f.name)
	}
}

// warmup allows for a rollout, and asks every 2 s: each ask scrapes every
// agent through the apiserver.
func (f *daemonSetFleet) warmup() (extra, poll time.Duration) {
	return f.rolloutTimeout, 2 * time.Second
}
