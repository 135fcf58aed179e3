// Package daemonset is compare's fleet of a deployed nodeagent
// DaemonSet's agents, on the cluster's own nodes: each phase switches the
// DaemonSet's agent container to the mode by a rollout, and the end of the
// run, Ctrl-C included, restores its pod template. The agents also serve
// the cluster's other pods on their nodes, which the model counts.
package daemonset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/nodeagent-io/nodeagent/internal/progress"
	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/pkg/apimetrics"
	"github.com/nodeagent-io/nodeagent/pkg/compare"
	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
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

// Options configure New.
type Options struct {
	// DaemonSet is namespace/name of nodeagent deployed as a DaemonSet.
	DaemonSet string
	// SyncFrequency, when positive, is set as the agents' --sync-frequency
	// (and becomes the scenario's); zero keeps the DaemonSet's own, which
	// the run reads and models.
	SyncFrequency time.Duration
	// NodeSelector, a label selector, limits the run's pods to the
	// matching nodes among the DaemonSet's. Empty: all of them.
	NodeSelector string
	// RolloutTimeout bounds each rollout of the DaemonSet. Default 5 m.
	RolloutTimeout time.Duration
	// PodImage is the image of the run's pods, which the nodes' kubelets
	// start. Default compare.DefaultPodImage.
	PodImage string
}

// Fleet is the agents of a DaemonSet deployed on the cluster.
type Fleet struct {
	opts            Options
	namespace, name string
	selector        labels.Selector
	// Set by Plan.
	client    kubernetes.Interface
	container string
	progress  *progress.Progress
	// agentNodes run an agent; served are the pods there, outside the
	// run's namespace, whose ConfigMap volumes the agents also keep.
	agentNodes []string
	served     map[string][]model.Pod
	// saved says the original template is recorded, so Close restores it.
	saved bool
}

// New returns the fleet of the DaemonSet opts names, or why the options
// cannot make one; it reads nothing yet.
func New(opts Options) (*Fleet, error) {
	namespace, name, ok := strings.Cut(opts.DaemonSet, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--daemonset %q: want namespace/name, e.g. nodeagent/nodeagent", opts.DaemonSet)
	}
	selector, err := labels.Parse(opts.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("--node-selector: %w", err)
	}
	if opts.RolloutTimeout <= 0 {
		opts.RolloutTimeout = 5 * time.Minute
	}
	return &Fleet{opts: opts, namespace: namespace, name: name, selector: selector}, nil
}

// saveOriginal records the DaemonSet's template in an annotation, unless
// an earlier run that did not restore left one: that one is the original.
func (f *Fleet) saveOriginal(ctx context.Context) (restoredEarlierRun bool, err error) {
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

// Start switches the DaemonSet's agent container to mode (its cache
// flags, and the sync frequency when the run sets one) and waits for the
// rollout. The first Start records the original template for Close.
func (f *Fleet) Start(ctx context.Context, mode modes.Mode, _ time.Duration) (compare.Phase, error) {
	if !f.saved {
		restoredEarlier, err := f.saveOriginal(ctx)
		if err != nil {
			return nil, fmt.Errorf("recording DaemonSet %s/%s's pod template before changing it: %w", f.namespace, f.name, err)
		}
		f.saved = true
		if restoredEarlier {
			f.progress.Done("DaemonSet %s/%s still carries the template an earlier run did not restore; it will be restored at the end.", f.namespace, f.name)
		}
	}
	if err := f.update(ctx, func(ds *appsv1.DaemonSet) error { return f.switchTo(ds, mode) }); err != nil {
		return nil, fmt.Errorf("switching DaemonSet %s/%s to %s: %w", f.namespace, f.name, mode, err)
	}
	f.progress.Done("%-19s rolling out DaemonSet %s/%s", mode, f.namespace, f.name)
	if err := f.waitForRollout(ctx, string(mode)); err != nil {
		return nil, err
	}
	ds, err := f.client.AppsV1().DaemonSets(f.namespace).Get(ctx, f.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pods, err := readyPods(ctx, f.client, ds)
	return &phase{fleet: f, pods: pods}, err
}

// switchTo sets the flags a phase in mode sets on the agent container; the
// others stay the DaemonSet's.
func (f *Fleet) switchTo(ds *appsv1.DaemonSet, mode modes.Mode) error {
	cfg := compare.Scenario{}.AgentConfig(mode, "", "")
	settings := agent.Config{Strategy: cfg.Strategy, Invalidation: cfg.Invalidation, RemountOnChange: cfg.RemountOnChange, SyncFrequency: f.opts.SyncFrequency}
	set := map[string]bool{
		agent.FlagConfigMapStrategy: true,
		agent.FlagCacheInvalidation: true,
		agent.FlagRemountOnChange:   mode.UsesWatch(),
		agent.FlagSyncFrequency:     f.opts.SyncFrequency > 0,
	}
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
}

// waitForRollout returns once every scheduled pod runs the current
// template and is available, as `kubectl rollout status` decides.
func (f *Fleet) waitForRollout(ctx context.Context, what string) error {
	start, state := time.Now(), ""
	err := wait.PollUntilContextTimeout(ctx, time.Second, f.opts.RolloutTimeout, true, func(ctx context.Context) (bool, error) {
		ds, err := f.client.AppsV1().DaemonSets(f.namespace).Get(ctx, f.name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("reading DaemonSet %s/%s: %w", f.namespace, f.name, err)
		}
		var done bool
		if done, state = rolloutState(ds); done {
			f.progress.Done("%-19s rollout done in %.1fs: %s", what, time.Since(start).Seconds(), state)
			return true, nil
		}
		f.progress.Status("%-19s rollout  %5.0fs  %s", what, time.Since(start).Seconds(), state)
		return false, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("DaemonSet %s/%s did not roll out within --rollout-timeout %s (%s): check `kubectl -n %s get pods` and the agents' logs",
			f.namespace, f.name, f.opts.RolloutTimeout, state, f.namespace)
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
func (f *Fleet) restore(ctx context.Context, wait bool) error {
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
func (f *Fleet) update(ctx context.Context, change func(*appsv1.DaemonSet) error) error {
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

// phase is the agents of one mode, as rolled out: pods are the ready agent
// pods; unreachable says a scrape through the apiserver's pod proxy failed.
type phase struct {
	fleet       *Fleet
	pods        []corev1.Pod
	unreachable error
}

// scrape reads every agent's /metrics through the apiserver's pod proxy.
// After the first failure in a phase it stops trying: the proxy may not
// reach pod IPs (a firewall, a loopback pod IP), and counters from some
// agents only would mislead.
func (p *phase) scrape(ctx context.Context, each func(*apimetrics.Snapshot)) error {
	if p.unreachable != nil {
		return p.unreachable
	}
	for _, pod := range p.pods {
		port := metricsPort(&pod, p.fleet.container)
		path := fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:%s/proxy/metrics", pod.Namespace, pod.Name, port)
		scrapeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		data, err := p.fleet.client.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(scrapeCtx)
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
			p.unreachable = fmt.Errorf("%w: pod %s (IP %s) through the apiserver's pod proxy: %v", compare.ErrNoAgentMetrics, pod.Name, pod.Status.PodIP, err)
			p.fleet.progress.Done("Reading the agents' /metrics: %v; measuring from the apiserver's counters only", p.unreachable)
			return p.unreachable
		}
		each(s)
	}
	return nil
}

func (p *phase) VolumesMounted(ctx context.Context) (int, error) {
	total := 0.0
	err := p.scrape(ctx, func(s *apimetrics.Snapshot) { total += s.Sum(agent.MetricVolumesMounted, nil) })
	return int(total), err
}

func (p *phase) Counters(ctx context.Context) (compare.Counters, error) {
	var c compare.Counters
	err := p.scrape(ctx, c.AddFrom)
	return c, err
}

// Close restores the original template, also after Ctrl-C, and waits for
// the rollout only when not interrupted, so that Ctrl-C returns promptly.
func (f *Fleet) Close(interrupted bool) {
	if !f.saved {
		return // nothing changed
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.opts.RolloutTimeout+time.Minute)
	defer cancel()
	f.progress.Done("Restoring DaemonSet %s/%s's original pod template...", f.namespace, f.name)
	if err := f.restore(ctx, !interrupted); err != nil {
		f.progress.Done("restoring DaemonSet %s/%s: %v; restore it by hand from its annotation %s", f.namespace, f.name, err, originalTemplateAnnotation)
	} else if interrupted {
		f.progress.Done("Restored; the rollout continues: `kubectl -n %s rollout status daemonset/%s`", f.namespace, f.name)
	}
}
