// Package objects creates a comparison's namespace, ConfigMaps, pods and
// simulated Nodes on the cluster, marked so that a run finds and removes
// its own objects and nothing else.
package objects

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Names and marks of what a comparison creates, so that it can find and
// remove its own objects and nothing else.
const (
	ownerLabel = "app.kubernetes.io/managed-by"
	ownerValue = "nodeagent-compare"
	// RunLabel marks a run's objects with its namespace, so that two runs
	// in two namespaces never touch each other's Nodes.
	RunLabel    = "nodeagent.io/compare-run"
	simTaintKey = "nodeagent.io/simulated-node"
	// RootCAConfigMap is what every pod's service-account volume reads.
	RootCAConfigMap = "kube-root-ca.crt"
	// ArrivingLabel marks the pods that come and go during a window
	// (--pod-churn), apart from the run's pods that stay.
	ArrivingLabel = "nodeagent.io/compare-arriving"
	// ArrivingConfigMapPrefix begins the names of the ConfigMaps that
	// only arriving pods read.
	ArrivingConfigMapPrefix = "arriving-cm-"
)

// Options say what a run creates beside its nodes' pods.
type Options struct {
	// SimulatedNodes creates the Nodes, tainted so that nothing else
	// lands there, with TTL in their TTL annotation; otherwise the nodes
	// are the cluster's own.
	SimulatedNodes bool
	TTL            time.Duration
	// PodImage is what a real kubelet starts for each pod.
	PodImage string
	// ServiceAccountVolume lets the admission plugin give each pod its
	// kube-api-access volume; otherwise the pods opt out.
	ServiceAccountVolume bool
}

// Create creates the namespace, ConfigMaps and pods of the run's layout
// nodes, and the Nodes when they are simulated, with workers in parallel;
// report is called as objects are made.
func Create(ctx context.Context, client kubernetes.Interface, namespace string, nodes []model.Node, opts Options, report func(done, total int)) error {
	labels := map[string]string{ownerLabel: ownerValue, RunLabel: namespace}
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: labels},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		ns, err = client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	if ns.DeletionTimestamp != nil {
		return fmt.Errorf("namespace %s is being deleted (a previous run's cleanup); wait for it to go, or choose another with --namespace", namespace)
	}
	if opts.ServiceAccountVolume {
		// The admission plugin refuses pods until the namespace's
		// ServiceAccount exists, and their volumes cannot mount until
		// kube-root-ca.crt does.
		if err := controlplane.WaitForServiceAccount(ctx, client, namespace, time.Minute); err != nil {
			return fmt.Errorf("%w; or run with --service-account-volume=false", err)
		}
	}

	var jobs []func() error
	configMaps := map[string]bool{}
	for _, node := range nodes {
		if opts.SimulatedNodes {
			jobs = append(jobs, func() error { return createNode(ctx, client, node.Name, opts.TTL, labels, len(node.Pods)) })
		}
		create := func(cm model.Object) {
			if !configMaps[cm.Name] && cm.Name != RootCAConfigMap {
				configMaps[cm.Name] = true
				jobs = append(jobs, func() error { return createConfigMap(ctx, client, namespace, cm.Name, labels) })
			}
		}
		for _, pod := range node.Pods {
			for _, cm := range pod.Reads {
				create(cm)
			}
		}
		for _, a := range node.Arrivals {
			create(a.Object)
		}
	}
	// ConfigMaps and Nodes first, so no agent ever sees a pod whose
	// ConfigMap does not exist yet (that would be a different experiment).
	if err := runParallel(ctx, jobs, 16, report, 0, countPods(nodes)+len(jobs)); err != nil {
		return err
	}
	done := len(jobs)
	jobs = jobs[:0]
	for _, node := range nodes {
		for _, pod := range node.Pods {
			jobs = append(jobs, func() error {
				return createPod(ctx, client, namespace, node.Name, pod, opts.PodImage, labels, opts.ServiceAccountVolume)
			})
		}
	}
	return runParallel(ctx, jobs, 16, report, done, countPods(nodes)+done)
}

func countPods(nodes []model.Node) int {
	n := 0
	for _, node := range nodes {
		n += len(node.Pods)
	}
	return n
}

// NodePodCapacity is how many pods a simulated node of pods pods takes:
// the kubelet's default of 110, or twice its pods. The reference kubelets
// run with it as --max-pods.
func NodePodCapacity(pods int) int { return max(110, 2*pods) }

// createNode creates a simulated node with its pod capacity in its status.
// A reference kubelet that starts on it admits the pods bound to it as soon
// as it sees the Node, before it has registered its own status: against a
// Node without capacity it would reject every one of them (OutOfpods), for
// good, as a kubelet does on a real cluster whose pods were bound to its
// node before it registered. At half the CPU, two of thirty kubelets did.
func createNode(ctx context.Context, client kubernetes.Interface, name string, ttl time.Duration, labels map[string]string, pods int) error {
	capacity := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(NodePodCapacity(pods)), resource.DecimalSI)}
	// kubernetes.io/os, as a kubelet registers it: nodeagent's DaemonSets
	// select Linux nodes.
	labels = maps.Clone(labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[corev1.LabelOSStable] = "linux"
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{corev1.ObjectTTLAnnotationKey: strconv.Itoa(int(ttl.Seconds()))},
		},
		Spec: corev1.NodeSpec{
			// No kubelet runs here: keep every workload that does not
			// tolerate it (DaemonSets included) off this Node.
			Taints: []corev1.Taint{{Key: simTaintKey, Value: "true", Effect: corev1.TaintEffectNoExecute}},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if existing.Labels[RunLabel] != labels[RunLabel] {
			return fmt.Errorf("node %s exists and was not made by a nodeagent compare run in namespace %s; refusing to touch it", name, labels[RunLabel])
		}
		existing.Annotations = node.Annotations
		_, err = client.CoreV1().Nodes().Update(ctx, existing, metav1.UpdateOptions{})
	}
	return err
}

func createConfigMap(ctx context.Context, client kubernetes.Interface, namespace, name string, labels map[string]string) error {
	_, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Data:       map[string]string{"config.yaml": "name: " + name + "\n"},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createPod creates one of the run's pods with its ConfigMap volumes. With
// serviceAccountVolume the cluster's admission plugin adds the
// kube-api-access volume, as to any pod; without, the pod opts out.
func createPod(ctx context.Context, client kubernetes.Interface, namespace, node string, p model.Pod, image string, labels map[string]string, serviceAccountVolume bool) error {
	// pause exits at once on SIGTERM; a short grace period lets a real
	// kubelet finish the deletion quickly.
	grace := int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			Containers:                    []corev1.Container{{Name: "pause", Image: image}},
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &serviceAccountVolume,
		},
	}
	for i, cm := range p.Reads {
		if cm.Name == RootCAConfigMap {
			continue // the admission plugin's volume, not the run's
		}
		name := fmt.Sprintf("config-%d", i)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}},
		}})
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: name, MountPath: "/etc/" + name})
	}
	_, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// CreateArrivingPod creates a pod that comes and goes during a window,
// as the run's pods are made and marked, and also with ArrivingLabel.
func CreateArrivingPod(ctx context.Context, client kubernetes.Interface, namespace, node string, p model.Pod, opts Options) error {
	labels := map[string]string{ownerLabel: ownerValue, RunLabel: namespace, ArrivingLabel: "true"}
	return createPod(ctx, client, namespace, node, p, opts.PodImage, labels, opts.ServiceAccountVolume)
}

// ArrivingSelector selects a run's arriving pods.
func ArrivingSelector(namespace string) string {
	return RunLabel + "=" + namespace + "," + ArrivingLabel + "=true"
}

// StayingSelector selects a run's pods that stay.
func StayingSelector(namespace string) string {
	return RunLabel + "=" + namespace + ",!" + ArrivingLabel
}

// runParallel runs jobs on workers goroutines, stopping at the first
// error, and reports every fiftieth job done as offset+done of total.
func runParallel(ctx context.Context, jobs []func() error, workers int, report func(done, total int), offset, total int) error {
	g, groupCtx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	var done atomic.Int64
	for _, job := range jobs {
		if groupCtx.Err() != nil {
			break // a job failed, or ctx ended
		}
		g.Go(func() error {
			if err := job(); err != nil {
				return err
			}
			if n := done.Add(1); report != nil && (n%50 == 0 || int(n) == len(jobs)) {
				report(offset+int(n), total)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// Delete removes everything a comparison created: pods at once
// (there is no kubelet to finish a graceful deletion), then ConfigMaps,
// the Nodes where it created them (simulatedNodes; a run on real nodes
// touches none, and needs no right to), and the namespace.
func Delete(ctx context.Context, client kubernetes.Interface, namespace string, simulatedNodes bool) error {
	zero := int64(0)
	selector := metav1.ListOptions{LabelSelector: ownerLabel + "=" + ownerValue + "," + RunLabel + "=" + namespace}
	var errs []error
	if err := client.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, selector); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting pods: %w", err))
	}
	if err := client.CoreV1().ConfigMaps(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting configmaps: %w", err))
	}
	if simulatedNodes {
		if err := client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting nodes: %w", err))
		}
	}
	// The namespace stays only if a previous step failed, so that a
	// re-run can still find what is left in it.
	if len(errs) == 0 {
		if err := client.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting namespace: %w", err))
		}
	}
	return errors.Join(errs...)
}
