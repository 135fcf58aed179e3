package analyze

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// FindingType is a kind of configuration that does not reach a container,
// or will not (docs/analyze.md, "Findings").
type FindingType string

const (
	// SubPathNeverUpdated: a container mounts part of a ConfigMap, Secret
	// or projected volume through subPath or subPathExpr, which keeps the
	// content it had when the container started.
	SubPathNeverUpdated FindingType = "subPathNeverUpdated"
	// EnvNeverUpdated: a container reads a mutable object into its
	// environment, which keeps the value it had when the container started.
	EnvNeverUpdated FindingType = "envNeverUpdated"
	// StaleSinceStart: one of the two above, where the object changed
	// after the container last started: it holds old content now.
	StaleSinceStart FindingType = "staleSinceStart"
	// ImmutableRecreated: under the Watch strategy, an immutable object
	// created after a running container of a pod on the node that uses it
	// started: the node keeps the older copy it had, for every pod on it.
	ImmutableRecreated FindingType = "immutableRecreated"
	// Missing: a required object does not exist: the pod cannot start.
	Missing FindingType = "missing"
	// MissingKey: a volume's items (or an env var) name a key the object
	// lacks, and the read is not optional.
	MissingKey FindingType = "missingKey"
	// NotConverted: a pod of a namespace that opted in to the admission
	// webhook has a configMap volume the driver could serve, and the
	// kubelet serves it: the pod predates the opt-in, or was created
	// while the webhook was down.
	NotConverted FindingType = "notConverted"
	// DriverVolumeFailing: a volume of nodeagent's CSI driver keeps its
	// pod from starting: the driver refuses its attributes, or the pod
	// waits for its volumes to be set up (no driver on the node, a publish
	// that fails: docs/troubleshooting.md).
	DriverVolumeFailing FindingType = "driverVolumeFailing"
	// OwnerIgnored: a volume asks for its files' owner (KEP-5936's
	// defaultUser or items' user), and its node's kubelet does not set
	// owners (older than v1.37, or its gate AtomicWriteVolumeUserFields
	// off): the files stay root's.
	OwnerIgnored FindingType = "ownerIgnored"
)

// FindingTypes lists every type, in the order reports give them.
var FindingTypes = []FindingType{StaleSinceStart, ImmutableRecreated, Missing, MissingKey, DriverVolumeFailing, OwnerIgnored, SubPathNeverUpdated, EnvNeverUpdated, NotConverted}

// ParseFindingType accepts a finding type's name.
func ParseFindingType(s string) (FindingType, error) {
	for _, t := range FindingTypes {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown finding type %q: choose from %v", s, FindingTypes)
}

// ObjectRef names one ConfigMap or Secret.
type ObjectRef struct {
	Kind      model.Kind `json:"kind"`
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
}

func (o ObjectRef) String() string { return string(o.Kind) + " " + o.Namespace + "/" + o.Name }

// Finding is one pod's (and, where one applies, one container's) reason
// to hold, or soon hold, other content than the API's.
type Finding struct {
	Type FindingType `json:"type"`
	// Pod is namespace/name.
	Pod       string    `json:"pod"`
	Container string    `json:"container,omitempty"`
	Node      string    `json:"node"`
	Object    ObjectRef `json:"object"`
	// Detail says what was seen; Action, what to do about it.
	Detail string `json:"detail"`
	Action string `json:"action"`
}

// findings are every node's findings: its pods', by type, then by pod,
// each pod's in the order found, and immutableRecreated's, node by node,
// in their type's place. Every rule compares times the cluster recorded
// (containers' starts, objects' changes), never this machine's clock.
func (a *Analysis) findings() []Finding {
	var recreated []Finding
	for _, p := range a.inOrder() {
		recreated = append(recreated, p.recreated...)
	}
	return a.findingOrder.all(recreated)
}

func typeRank(t FindingType) int {
	for i, known := range FindingTypes {
		if known == t {
			return i
		}
	}
	return len(FindingTypes)
}

// podFindings are one pod's findings but immutableRecreated.
func (c Cluster) podFindings(p inventory.PodInfo) []Finding {
	f := &podFindings{c: c, p: p, reported: map[string]bool{}}
	for _, v := range p.Refs.Volumes {
		for _, r := range v.Reads {
			f.checkExists("", r, "volume "+v.Name)
		}
	}
	for _, v := range p.Refs.DriverVolumes {
		for _, r := range v.Reads {
			f.checkExists("", r, "CSI volume "+v.Name)
		}
	}
	f.driverVolumesFailing()
	f.ownersIgnored()
	for _, ctr := range p.Refs.Containers {
		f.container(ctr)
	}
	if c.Inventory.OptedIn[p.Namespace] {
		for _, v := range p.Unconverted {
			f.add(NotConverted, "", firstRead(p.Refs, v.Volume),
				fmt.Sprintf("volume %s is served by the kubelet in a namespace labelled %s=%s: the pod was created before the label, or while the admission webhook was down",
					v.Volume, podrefs.ServeLabel, podrefs.ServeEnabled),
				"recreate the pod (a rollout restart of its workload) so that the webhook converts it; if new pods stay unconverted, check the webhook's pods")
		}
	}
	return f.out
}

// firstRead is the first object volume reads: the one a finding about the
// volume names.
func firstRead(refs podrefs.Refs, volume string) podrefs.Ref {
	for _, v := range refs.Volumes {
		if v.Name == volume && len(v.Reads) > 0 {
			return podrefs.Ref{Kind: v.Reads[0].Kind, Name: v.Reads[0].Name}
		}
	}
	return podrefs.Ref{}
}

// podFindings gathers one pod's findings.
type podFindings struct {
	c   Cluster
	p   inventory.PodInfo
	out []Finding
	// reported holds the missing objects and keys found, so that each
	// is reported once per pod.
	reported map[string]bool
}

func (f *podFindings) add(t FindingType, container string, r podrefs.Ref, detail, action string) {
	f.out = append(f.out, Finding{Type: t, Pod: f.p.Namespace + "/" + f.p.Name, Container: container, Node: f.p.Node,
		Object: ObjectRef{Kind: r.Kind, Namespace: f.p.Namespace, Name: r.Name}, Detail: detail, Action: action})
}

// driverVolumesFailing reports each volume of the driver that keeps the pod
// from starting: one the driver refuses, and, of a pod waiting for its
// volumes, each of the driver's (one of them, or the driver's absence, is
// why it waits, unless another volume's object is missing).
func (f *podFindings) driverVolumesFailing() {
	const action = "see the pod's FailedMount events and docs/troubleshooting.md"
	for _, v := range f.p.Refs.RefusedDriverVolumes {
		f.add(DriverVolumeFailing, "", podrefs.Ref{Kind: model.ConfigMap, Name: v.ConfigMap},
			fmt.Sprintf("CSI volume %s: the driver refuses its attributes (InvalidArgument), so the pod never starts: %s", v.Name, v.Problem),
			"fix the volume's attributes (docs/csi.md, \"Attributes\"); nodeagent convert writes them")
	}
	registered := f.c.Inventory.ServesDriver(f.p.Node)
	if registered && !f.p.WaitingForVolumes {
		return
	}
	for _, v := range f.p.Refs.DriverVolumes {
		detail := fmt.Sprintf("CSI volume %s: the pod waits for its volumes to be set up (PodReadyToStartContainers is False): no driver on node %s, or its publish fails", v.Name, f.p.Node)
		if !registered {
			detail = fmt.Sprintf("CSI volume %s: no driver is registered on node %s (its CSINode does not list it): the volume gets no update, and the kubelet can neither set it up nor tear the pod down", v.Name, f.p.Node)
		}
		f.add(DriverVolumeFailing, "", v.Reads[0], detail, action)
	}
}

// ownersIgnored reports each volume that asks for its files' owner on a
// node whose kubelet does not set owners.
func (f *podFindings) ownersIgnored() {
	s, ok := f.c.Settings[f.p.Node]
	if !ok || len(f.p.Refs.OwnedVolumes) == 0 || s.SetsVolumeOwners() {
		return
	}
	for _, v := range f.p.Refs.OwnedVolumes {
		var read podrefs.Ref
		for _, vol := range f.p.Refs.Volumes {
			if vol.Name == v.Name && len(vol.Reads) > 0 {
				read = vol.Reads[0]
			}
		}
		f.add(OwnerIgnored, "", read, fmt.Sprintf("volume %s asks for its files' owner (%s), which the kubelet %s of node %s does not set (it needs v1.38, or v1.37 with the gate %s on): the files stay root's",
			v.Name, strings.Join(v.Fields, ", "), s.KubeletVersion, f.p.Node, atomicWriteVolumeUserFields),
			"turn the kubelet's gate "+atomicWriteVolumeUserFields+" on (v1.37), or upgrade it to v1.38; or give the container the files through fsGroup")
	}
}

// checkExists reports r's object, or a key it names, missing, once per
// pod and object (or key), unless the read is optional or the object's
// kind could not be listed.
func (f *podFindings) checkExists(container string, r podrefs.Ref, where string) {
	info, known := f.c.Inventory.Object(r.Kind, f.p.Namespace, r.Name)
	if !known || r.Optional {
		return
	}
	if info == nil {
		if id := "missing " + string(r.Kind) + r.Name; !f.reported[id] {
			f.reported[id] = true
			f.add(Missing, container, r, fmt.Sprintf("%s reads it and it does not exist: the pod cannot start (FailedMount or CreateContainerConfigError)", where),
				"create it, or mark the reference optional")
		}
		return
	}
	for _, key := range r.Keys {
		if id := "key " + string(r.Kind) + r.Name + "/" + key; !info.HasKey(key) && !f.reported[id] {
			f.reported[id] = true
			f.add(MissingKey, container, r, fmt.Sprintf("%s names key %q, which it does not hold: the volume fails to mount, or the container to start", where, key),
				"add the key, or mark the reference optional")
		}
	}
}

// container reports what one container holds as it was when it started:
// its subPath mounts and its environment, and where they are stale.
func (f *podFindings) container(ctr podrefs.Container) {
	started, running := f.p.StartedAt(ctr.Name)
	for _, m := range ctr.SubPaths {
		action := "mount the volume without subPath (a directory), or restart the container after each update"
		if m.Driver {
			action = "set updates: inPlace on the CSI volume (docs/csi.md), or mount it without subPath"
		}
		for _, r := range m.Reads {
			f.add(SubPathNeverUpdated, ctr.Name, r, fmt.Sprintf("mounted at %s through subPath %q of volume %s: the container keeps the content it started with", m.MountPath, m.SubPath, m.Volume),
				action)
			if running {
				f.out = append(f.out, f.c.staleSince(f.p, ctr.Name, r, started, "subPath mount "+m.MountPath)...)
			}
		}
	}
	for _, r := range ctr.Env {
		f.checkExists(ctr.Name, r, "the environment of container "+ctr.Name)
		info, known := f.c.Inventory.Object(r.Kind, f.p.Namespace, r.Name)
		if known && info == nil {
			continue // missing: a finding of its own
		}
		if info == nil || !info.Immutable {
			f.add(EnvNeverUpdated, ctr.Name, r, "read into the environment when the container starts: a later update never reaches it",
				"restart the container after each update (a rollout), or mount the object as a volume")
		}
		if running {
			f.out = append(f.out, f.c.staleSince(f.p, ctr.Name, r, started, "environment")...)
		}
	}
}

// staleSince is a staleSinceStart finding where r's object changed after
// the container started.
func (c Cluster) staleSince(p inventory.PodInfo, container string, r podrefs.Ref, started time.Time, how string) []Finding {
	info, known := c.Inventory.Object(r.Kind, p.Namespace, r.Name)
	if !known || info == nil || !info.Changed.After(started) {
		return nil
	}
	what := "changed"
	if !info.ChangedKnown {
		what = "created (its only recorded time: the server returned no managedFields)"
	}
	return []Finding{{Type: StaleSinceStart, Pod: p.Namespace + "/" + p.Name, Container: container, Node: p.Node,
		Object: ObjectRef{Kind: r.Kind, Namespace: p.Namespace, Name: r.Name},
		Detail: fmt.Sprintf("%s at %s, after the container last started (%s): its %s holds the old content",
			what, info.Changed.UTC().Format(time.RFC3339), started.UTC().Format(time.RFC3339), how),
		Action: "restart the container"}}
}

// immutableRecreated finds, on each node whose kubelet uses the Watch
// strategy, the immutable objects created after a running container of a
// pod on the node that requires them started: that container could only
// start with an older copy, which the node's kubelet stopped watching and
// keeps serving to every pod on the node that references the object, new
// ones included, until the last of them is gone.
func (c Cluster) immutableRecreated() []Finding {
	byNode := c.immutableObjectsRequiredOnWatchNodes()
	var out []Finding
	nodes := make([]string, 0, len(byNode))
	for n := range byNode {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		refs := make([]ObjectRef, 0, len(byNode[node]))
		for ref := range byNode[node] {
			refs = append(refs, ref)
		}
		sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
		for _, ref := range refs {
			info, known := c.Inventory.Object(ref.Kind, ref.Namespace, ref.Name)
			if !known || info == nil || !info.Immutable {
				continue
			}
			var witness *objectUse
			for i, u := range byNode[node][ref] {
				if !u.earliest.IsZero() && u.earliest.Before(info.Created) && (witness == nil || u.earliest.Before(witness.earliest)) {
					witness = &byNode[node][ref][i]
				}
			}
			if witness == nil {
				continue
			}
			for _, u := range byNode[node][ref] {
				out = append(out, Finding{Type: ImmutableRecreated, Pod: u.pod.Namespace + "/" + u.pod.Name, Node: node, Object: ref,
					Detail: fmt.Sprintf("created at %s, after pod %s/%s on this node was running with it (since %s): the node's kubelet (Watch) keeps the older copy for every pod here",
						info.Created.UTC().Format(time.RFC3339), witness.pod.Namespace, witness.pod.Name, witness.earliest.UTC().Format(time.RFC3339)),
					Action: "give new content of an immutable object a new name and point the pods at it; the node drops the old copy only when no pod on it references the name"})
			}
		}
	}
	return out
}

// objectUse is a pod's need of an object: the earliest running container
// start that required it (zero if none has started).
type objectUse struct {
	pod      inventory.PodInfo
	earliest time.Time
}

// immutableObjectsRequiredOnWatchNodes lists, for each node whose kubelet
// uses the Watch strategy, the immutable objects its pods require (not
// optional), with each pod's earliest container start that required the
// object. Mutable objects are left out as they are met: they are most of
// a cluster's references, and none of them can be served stale this way.
func (c Cluster) immutableObjectsRequiredOnWatchNodes() map[string]map[ObjectRef][]objectUse {
	byNode := map[string]map[ObjectRef][]objectUse{}
	for _, p := range c.Inventory.Pods {
		if c.Settings[p.Node].Behaviour() != model.Watch {
			continue
		}
		var uses map[ObjectRef]time.Time
		note := func(r podrefs.Ref, started time.Time) {
			if info, known := c.Inventory.Object(r.Kind, p.Namespace, r.Name); !known || info == nil || !info.Immutable {
				return
			}
			if uses == nil {
				uses = map[ObjectRef]time.Time{}
			}
			ref := ObjectRef{Kind: r.Kind, Namespace: p.Namespace, Name: r.Name}
			if at, seen := uses[ref]; !seen || (!started.IsZero() && (at.IsZero() || started.Before(at))) {
				uses[ref] = started
			}
		}
		for _, v := range p.Refs.Volumes {
			for _, r := range v.Reads {
				if !r.Optional {
					note(r, p.FirstStarted)
				}
			}
		}
		for _, ctr := range p.Refs.Containers {
			for _, r := range ctr.Env {
				if !r.Optional {
					started, _ := p.StartedAt(ctr.Name)
					note(r, started)
				}
			}
		}
		if len(uses) == 0 {
			continue
		}
		if byNode[p.Node] == nil {
			byNode[p.Node] = map[ObjectRef][]objectUse{}
		}
		for ref, at := range uses {
			byNode[p.Node][ref] = append(byNode[p.Node][ref], objectUse{pod: p, earliest: at})
		}
	}
	return byNode
}

// countFindings counts findings by type, every type included.
func countFindings(findings []Finding) map[FindingType]int {
	counts := make(map[FindingType]int, len(FindingTypes))
	for _, t := range FindingTypes {
		counts[t] = 0
	}
	for _, f := range findings {
		counts[f.Type]++
	}
	return counts
}
