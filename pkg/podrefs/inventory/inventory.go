// Package inventory reads a cluster as its nodes serve it: each node and
// the settings it carries (kubelet version, TTL), each served pod with its
// references (podrefs.Of) and its containers' start times, and which
// ConfigMaps and Secrets exist, whether they are immutable, when they
// changed and the names of their keys, never their data. analyze reads a
// cluster through it, and so does compare's DaemonSet fleet for the pods
// its agents serve besides the run's: one filter of served pods
// (podrefs.Served), one reading of each.
//
// List pages through nodes, pods, ConfigMaps and Secrets with client-go's
// pager; a user who may not list Secrets gets an inventory that says so
// (SecretsListed false), not an error.
package inventory

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"

	"github.com/nodeagent-io/nodeagent/pkg/convert"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/ttl"
)

// Inventory is what analyze keeps of a cluster: each node's version and
// TTL, each scheduled pod's references and its containers' start times,
// and which objects exist, whether they are immutable, when they changed
// and the names of their keys. No object's data is kept.
type Inventory struct {
	Nodes []NodeInfo
	Pods  []PodInfo
	// Finished are the pods that ran on the nodes and finished, while the
	// API still lists them (a Job's, until it is cleaned up): with Pods'
	// creation times, what the estimate of pods that come and go reads.
	Finished []FinishedPod
	// objects are the listed ConfigMaps and Secrets.
	objects map[objectKey]*ObjectInfo
	// SecretsListed is false where the caller may not list Secrets:
	// every Secret is then taken to exist and to be mutable.
	SecretsListed bool
	// SecretsUnlisted says why Secrets were not listed.
	SecretsUnlisted string
	// OptedIn are the namespaces labelled for the admission webhook
	// (podrefs.ServeLabel); NamespacesListed is false where the caller
	// may not list namespaces, and nothing is known of them.
	OptedIn          map[string]bool
	NamespacesListed bool
	// DriverNodes are the nodes whose CSINode lists nodeagent's CSI driver
	// (drivernodes.go); DriverNodesListed is false where the caller may not
	// list CSINodes, and every node is taken to have it.
	DriverNodes       map[string]bool
	DriverNodesListed bool
}

// NodeInfo is the part of a Node that decides its kubelet's settings.
type NodeInfo struct {
	Name           string
	KubeletVersion string
	// TTL is the TTL the node's kubelet uses, read as pkg/ttl reads it for
	// the agent: the node's annotation, or the default where TTLMissing
	// says why there is none.
	TTL        time.Duration
	TTLMissing string
}

// NodeInfoOf is what the inventory keeps of n.
func NodeInfoOf(n *corev1.Node) NodeInfo {
	info := NodeInfo{Name: n.Name, KubeletVersion: n.Status.NodeInfo.KubeletVersion}
	d, err := ttl.FromAnnotations(n.Annotations)
	info.TTL = ttl.OrDefault(d, err)
	if err != nil {
		info.TTLMissing = err.Error()
	}
	return info
}

// PodInfo is one pod that runs on a node, and what it references.
type PodInfo struct {
	Namespace, Name, Node string
	Refs                  podrefs.Refs
	// Started is when each running container of Refs.Containers last
	// started (StartedAt reads it); FirstStarted, the earliest start of any
	// running container (zero where none runs).
	Started      []ContainerStart
	FirstStarted time.Time
	// Unconverted are the volumes the admission webhook would have made
	// the driver's (convert.PlanWith, in the Secrets mode: each says
	// whether only that mode moves it), none for a pod that opts out;
	// Converted says the webhook converted some of its volumes.
	Unconverted []UnconvertedVolume
	Converted   bool
	// Workload is what created the pod, as kind/name (WorkloadOf).
	Workload string
	// Created is the pod's creation time: when it arrived, for the
	// estimate of pods that come and go.
	Created time.Time
	// WaitingForVolumes: the pod has not started because the kubelet has
	// not set up its volumes (WaitingForVolumes).
	WaitingForVolumes bool
}

// ContainerStart is when a running container last started. A pod has a
// few: a slice of them costs a large cluster's inventory much less than a
// map each.
type ContainerStart struct {
	Container string
	At        time.Time
}

// StartedAt is when container last started, and whether it runs.
func (p PodInfo) StartedAt(container string) (time.Time, bool) {
	for _, s := range p.Started {
		if s.Container == container {
			return s.At, true
		}
	}
	return time.Time{}, false
}

// UnconvertedVolume is a volume the driver could serve. SecretsMode: only
// the driver's Secrets mode serves it (a secret or projected volume),
// where a configMap volume moves in every mode. What it reads is its
// volume's in the pod's Refs.
type UnconvertedVolume struct {
	Volume      string
	SecretsMode bool
}

// unconverted are p's volumes that the webhook would convert:
// none for a pod that opts out, or of kube-system, whose pods the webhook
// never touches (the cluster's own components, some of which the driver
// itself needs).
func unconverted(p *corev1.Pod) []UnconvertedVolume {
	if p.Annotations[podrefs.ServeLabel] == podrefs.ServeDisabled || p.Namespace == metav1.NamespaceSystem {
		return nil
	}
	var out []UnconvertedVolume
	for _, d := range convert.PlanWith(&p.Spec, convert.Options{Secrets: true}) {
		if d.Converted {
			out = append(out, UnconvertedVolume{Volume: d.Volume, SecretsMode: d.From != podrefs.AttrConfigMap})
		}
	}
	return out
}

// PodInfoOf is what the inventory keeps of a served pod.
func PodInfoOf(p *corev1.Pod) PodInfo {
	info := PodInfo{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Refs: podrefs.Of(p)}
	names := make([]string, 0, len(info.Refs.Containers))
	for _, c := range info.Refs.Containers {
		names = append(names, c.Name)
	}
	info.Started, info.FirstStarted = startTimes(p, names)
	info.Unconverted = unconverted(p)
	_, info.Converted = p.Annotations[podrefs.ConvertedAnnotation]
	info.Workload = WorkloadOf(p)
	info.Created = p.CreationTimestamp.Time
	info.WaitingForVolumes = WaitingForVolumes(p)
	return info
}

// WaitingForVolumes says whether the kubelet has not started p because its
// volumes are not set up: p is Pending, not being deleted, and its
// condition PodReadyToStartContainers is False. The kubelet sets up a pod's
// volumes before it creates the pod's sandbox, and sets that condition True
// once the sandbox is ready (Kubernetes v1.29 on), so a volume that cannot
// be set up keeps it False (as a sandbox that cannot be made does: the
// pod's events tell which); a kubelet that does not report it leaves the
// pod out.
func WaitingForVolumes(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReadyToStartContainers {
			return c.Status == corev1.ConditionFalse
		}
	}
	return false
}

// WorkloadOf names what an operator would change to change p, as
// kind/name: its controller, but a Deployment for the pods of a
// ReplicaSet the Deployment made (the ReplicaSet's name is the
// Deployment's and the pod's pod-template-hash label), and Pod/name for a
// pod no controller owns. A Job's pods stay the Job's, whether or not a
// CronJob made it: a pod does not say.
func WorkloadOf(p *corev1.Pod) string {
	owner := metav1.GetControllerOf(p)
	if owner == nil {
		return BarePodWorkload(p.Name)
	}
	if hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; owner.Kind == "ReplicaSet" && hash != "" {
		if name, ok := strings.CutSuffix(owner.Name, "-"+hash); ok && name != "" {
			return "Deployment/" + name
		}
	}
	return owner.Kind + "/" + owner.Name
}

// BarePodWorkload is the workload of pod name that nothing owns: the pod
// alone.
func BarePodWorkload(name string) string { return "Pod/" + name }

type objectKey struct {
	kind            model.Kind
	namespace, name string
}

// Exists is the podrefs.Existence of the inventory's objects.
func (inv *Inventory) Exists(kind model.Kind, namespace, name string) (exists, immutable, known bool) {
	if kind == model.Secret && !inv.SecretsListed {
		return true, false, false
	}
	info := inv.objects[objectKey{kind, namespace, name}]
	if info == nil {
		return false, false, true
	}
	return true, info.Immutable, true
}

// Progress is told how many objects of a kind have been listed so far,
// after each page, and once more with done set.
type Progress func(resource string, listed int, done bool)

// List reads the inventory from the cluster, in pages of pageSize: the
// nodes nodeSelector selects (every node where it is empty) and the pods
// on them. Secrets that the caller may not list are recorded as such, not
// failed.
func List(ctx context.Context, client kubernetes.Interface, nodeSelector string, pageSize int64, progress Progress) (*Inventory, error) {
	if progress == nil {
		progress = func(string, int, bool) {}
	}
	inv := &Inventory{objects: map[objectKey]*ObjectInfo{}, SecretsListed: true}
	core := client.CoreV1()
	err := each(ctx, "nodes", pageSize, progress, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return core.Nodes().List(ctx, o)
	}, func(obj runtime.Object) {
		inv.Nodes = append(inv.Nodes, NodeInfoOf(obj.(*corev1.Node)))
	}, metav1.ListOptions{LabelSelector: nodeSelector})
	if err != nil {
		return nil, err
	}
	selected := make(map[string]bool, len(inv.Nodes))
	for _, n := range inv.Nodes {
		selected[n.Name] = true
	}
	// The pods podrefs.Served keeps: the server drops finished and
	// unscheduled ones where it can, terminating ones are dropped here.
	running := metav1.ListOptions{FieldSelector: "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"}
	err = each(ctx, "pods", pageSize, progress, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return core.Pods("").List(ctx, o)
	}, func(obj runtime.Object) {
		p := obj.(*corev1.Pod)
		// The field selector's work is done again, where a server ignores it.
		if !podrefs.Served(p) || (nodeSelector != "" && !selected[p.Spec.NodeName]) {
			return
		}
		inv.Pods = append(inv.Pods, PodInfoOf(p))
	}, running)
	if err != nil {
		return nil, err
	}
	if err := inv.listFinished(ctx, client, selected, nodeSelector != "", pageSize, progress); err != nil {
		return nil, err
	}
	if err := inv.listOptedIn(ctx, client); err != nil {
		return nil, err
	}
	if err := inv.listDriverNodes(ctx, client); err != nil {
		return nil, err
	}
	if err := inv.listObjects(ctx, client, pageSize, progress); err != nil {
		return nil, err
	}
	return inv, nil
}

// listObjects reads the ConfigMaps and the Secrets; Secrets that the caller
// may not list are recorded as such, not failed.
func (inv *Inventory) listObjects(ctx context.Context, client kubernetes.Interface, pageSize int64, progress Progress) error {
	core := client.CoreV1()
	err := each(ctx, "configmaps", pageSize, progress, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return core.ConfigMaps("").List(ctx, o)
	}, func(obj runtime.Object) {
		c := obj.(*corev1.ConfigMap)
		inv.AddObjectInfo(model.ConfigMap, c.Namespace, c.Name, ConfigMapInfo(c))
	}, metav1.ListOptions{})
	if err != nil {
		return err
	}
	err = each(ctx, "secrets", pageSize, progress, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return core.Secrets("").List(ctx, o)
	}, func(obj runtime.Object) {
		s := obj.(*corev1.Secret)
		inv.AddObjectInfo(model.Secret, s.Namespace, s.Name, SecretInfo(s))
	}, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		inv.SecretsListed = false
		inv.SecretsUnlisted = "this user may not list Secrets: every Secret is taken to exist and to be mutable, and none is reported stale, missing or missing a key"
		return nil
	}
	return err
}

// listOptedIn reads the namespaces labelled for the admission webhook; a
// user who may not list namespaces gets NamespacesListed false.
func (inv *Inventory) listOptedIn(ctx context.Context, client kubernetes.Interface) error {
	list, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: OptInSelector})
	if apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing namespaces: %w", err)
	}
	inv.NamespacesListed, inv.OptedIn = true, map[string]bool{}
	for _, ns := range list.Items {
		inv.OptedIn[ns.Name] = true
	}
	return nil
}

// OptInSelector selects the namespaces labelled for the admission webhook.
const OptInSelector = podrefs.ServeLabel + "=" + podrefs.ServeEnabled

// each lists one resource in pages and hands each item to keep.
func each(ctx context.Context, resource string, pageSize int64, progress Progress,
	list func(context.Context, metav1.ListOptions) (runtime.Object, error),
	keep func(runtime.Object), opts metav1.ListOptions) error {
	p := pager.New(pager.SimplePageFunc(func(o metav1.ListOptions) (runtime.Object, error) {
		return list(ctx, o)
	}))
	p.PageSize = pageSize
	listed := 0
	err := p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		keep(obj)
		listed++
		if listed%int(pageSize) == 0 {
			progress(resource, listed, false)
		}
		return nil
	})
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("listing %s: %w (bind the nodeagent-analyze ClusterRole of deploy/analyze to this user: docs/analyze.md)", resource, err)
	}
	if err != nil {
		return fmt.Errorf("listing %s: %w", resource, err)
	}
	progress(resource, listed, true)
	return nil
}
