package compare

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager"
)

// Names and marks of what a comparison creates, so that it can find and
// remove its own objects and nothing else.
const (
	// DefaultNamespace holds a run's pods and ConfigMaps; its simulated
	// Nodes are named <namespace>-node-NNN.
	DefaultNamespace = "nodeagent-compare"
	ownerLabel       = "app.kubernetes.io/managed-by"
	ownerValue       = "nodeagent-compare"
	// runLabel marks a run's objects with its namespace, so that two runs
	// in two namespaces never touch each other's Nodes.
	runLabel    = "nodeagent.io/compare-run"
	simTaintKey = "nodeagent.io/simulated-node"
	// rootCAConfigMap is what every pod's service-account volume reads.
	rootCAConfigMap = "kube-root-ca.crt"
)

// podLayout is one pod as the model sees it: how many volumes the agent
// writes for it, and the ConfigMap each of those volumes reads on a
// remount (a name may repeat; a volume may read several).
type podLayout struct {
	name       string
	volumes    int
	configMaps []string
}

type nodeLayout struct {
	name string
	pods []podLayout
}

// layout assigns pods to nodes and ConfigMaps to pods, deterministically.
func layout(s Scenario, namespace string) []nodeLayout {
	nodes := make([]nodeLayout, s.Nodes)
	for n := range nodes {
		nodes[n].name = fmt.Sprintf("%s-node-%03d", namespace, n)
		for p := range s.PodsPerNode {
			global := n*s.PodsPerNode + p
			pod := podLayout{name: fmt.Sprintf("pod-%05d", global), volumes: s.ConfigMapsPerPod}
			for c := range s.ConfigMapsPerPod {
				if s.SharedConfigMaps > 0 {
					pod.configMaps = append(pod.configMaps, fmt.Sprintf("shared-%04d", (global*s.ConfigMapsPerPod+c)%s.SharedConfigMaps))
				} else {
					pod.configMaps = append(pod.configMaps, fmt.Sprintf("cm-%05d-%d", global, c))
				}
			}
			if s.ServiceAccountVolume {
				// The admission plugin's kube-api-access volume.
				pod.volumes++
				pod.configMaps = append(pod.configMaps, rootCAConfigMap)
			}
			nodes[n].pods = append(nodes[n].pods, pod)
		}
	}
	return nodes
}

// referencesPerConfigMap counts, for each ConfigMap used on the node, how
// many of its pods mount it.
func (n nodeLayout) referencesPerConfigMap() map[string]int {
	refs := map[string]int{}
	for _, p := range n.pods {
		for _, cm := range p.configMaps {
			refs[cm]++
		}
	}
	return refs
}

// volumes counts the volumes the agent writes on the node.
func (n nodeLayout) volumes() int {
	total := 0
	for _, p := range n.pods {
		total += p.volumes
	}
	return total
}

// configMapReads counts the ConfigMap reads of one remount of every volume
// on the node.
func (n nodeLayout) configMapReads() int {
	total := 0
	for _, p := range n.pods {
		total += len(p.configMaps)
	}
	return total
}

// objectOptions say what kind of nodes a run's pods go to.
type objectOptions struct {
	// simulatedNodes creates the Nodes, tainted so that nothing else
	// lands there; otherwise the nodes are the cluster's own.
	simulatedNodes bool
	// podImage is what a real kubelet starts for each pod.
	podImage string
}

// createObjects creates the namespace, ConfigMaps and pods of the
// scenario, and the Nodes when they are simulated, with workers in
// parallel; report is called as objects are made.
func createObjects(ctx context.Context, client kubernetes.Interface, namespace string, s Scenario, nodes []nodeLayout, opts objectOptions, report func(done, total int)) error {
	labels := map[string]string{ownerLabel: ownerValue, runLabel: namespace}
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
	if s.ServiceAccountVolume {
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
		if opts.simulatedNodes {
			jobs = append(jobs, func() error { return createNode(ctx, client, node.name, s.TTL, labels) })
		}
		for _, pod := range node.pods {
			for _, cm := range pod.configMaps {
				if !configMaps[cm] {
					configMaps[cm] = true
					jobs = append(jobs, func() error { return createConfigMap(ctx, client, namespace, cm, labels) })
				}
			}
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
		for _, pod := range node.pods {
			jobs = append(jobs, func() error {
				return createPod(ctx, client, namespace, node.name, pod, opts.podImage, labels, s.ServiceAccountVolume)
			})
		}
	}
	return runParallel(ctx, jobs, 16, report, done, countPods(nodes)+done)
}

func countPods(nodes []nodeLayout) int {
	n := 0
	for _, node := range nodes {
		n += len(node.pods)
	}
	return n
}

func createNode(ctx context.Context, client kubernetes.Interface, name string, ttl time.Duration, labels map[string]string) error {
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
	}
	_, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if existing.Labels[runLabel] != labels[runLabel] {
			return fmt.Errorf("node %s exists and was not made by a nodeagent compare run in namespace %s; refusing to touch it", name, labels[runLabel])
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
func createPod(ctx context.Context, client kubernetes.Interface, namespace, node string, p podLayout, image string, labels map[string]string, serviceAccountVolume bool) error {
	// pause exits at once on SIGTERM; a short grace period lets a real
	// kubelet finish the deletion quickly.
	grace := int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			Containers:                    []corev1.Container{{Name: "pause", Image: image}},
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &serviceAccountVolume,
		},
	}
	for i, cm := range p.configMaps {
		if cm == rootCAConfigMap {
			continue // the admission plugin's volume, not the run's
		}
		name := fmt.Sprintf("config-%d", i)
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}},
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

// observedLayout rebuilds the layout of the run's nodes from the pods as the
// apiserver stored them, so that the model counts the volumes the agents
// will see: the kube-api-access volume only where the cluster's admission
// plugin added it, and whatever else admission changed.
func observedLayout(ctx context.Context, client kubernetes.Interface, namespace string, planned []nodeLayout) ([]nodeLayout, error) {
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: runLabel + "=" + namespace})
	if err != nil {
		return nil, fmt.Errorf("reading back the run's pods: %w", err)
	}
	byNode := map[string][]podLayout{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		p := podLayout{name: pod.Name}
		for _, v := range volumemanager.PodVolumes(pod) {
			p.volumes++
			p.configMaps = append(p.configMaps, v.ConfigMapNames()...)
		}
		byNode[pod.Spec.NodeName] = append(byNode[pod.Spec.NodeName], p)
	}
	out := make([]nodeLayout, len(planned))
	for i, n := range planned {
		out[i] = nodeLayout{name: n.name, pods: byNode[n.name]}
		if len(out[i].pods) != len(n.pods) {
			return nil, fmt.Errorf("node %s has %d of the run's pods, want %d", n.name, len(out[i].pods), len(n.pods))
		}
	}
	return out, nil
}

// runParallel runs jobs on workers goroutines, stopping at the first error.
func runParallel(ctx context.Context, jobs []func() error, workers int, report func(done, total int), offset, total int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan func() error)
	var done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for job := range next {
				if err := job(); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					continue
				}
				if n := done.Add(1); report != nil && (n%50 == 0 || int(n) == len(jobs)) {
					report(offset+int(n), total)
				}
			}
		})
	}
	for _, job := range jobs {
		select {
		case next <- job:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// deleteObjects removes everything a comparison created: pods at once
// (there is no kubelet to finish a graceful deletion), then ConfigMaps,
// Nodes and the namespace.
func deleteObjects(ctx context.Context, client kubernetes.Interface, namespace string) error {
	zero := int64(0)
	selector := metav1.ListOptions{LabelSelector: ownerLabel + "=" + ownerValue + "," + runLabel + "=" + namespace}
	var errs []error
	if err := client.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, selector); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting pods: %w", err))
	}
	if err := client.CoreV1().ConfigMaps(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting configmaps: %w", err))
	}
	if err := client.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("deleting nodes: %w", err))
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
