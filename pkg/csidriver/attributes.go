package csidriver

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

// The attributes the kubelet adds with podInfoOnMount: true.
const (
	attrPodName        = podrefs.KubeletAttrPrefix + "pod.name"
	attrPodNamespace   = podrefs.KubeletAttrPrefix + "pod.namespace"
	attrPodUID         = podrefs.KubeletAttrPrefix + "pod.uid"
	attrServiceAccount = podrefs.KubeletAttrPrefix + "serviceAccount.name"
	attrEphemeral      = podrefs.KubeletAttrPrefix + "ephemeral"
)

// podInfo is the pod a volume is for, as the kubelet describes it.
type podInfo struct {
	Namespace, Name, ServiceAccount string
	UID                             types.UID
}

// volumeSpec is what one publish call asks for, checked.
type volumeSpec struct {
	Pod    podInfo
	Source podrefs.DriverSource
	Layout cache.Layout
}

// objects are the objects the volume reads, each once.
func (s volumeSpec) objects() []objectRef {
	var refs []objectRef
	for _, r := range s.Source.Reads() {
		ref := objectRef{kind: r.Kind, namespace: s.Pod.Namespace, name: r.Name}
		if !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	return refs
}

// keptVolume is the volume core's spec of the volume named name.
func (s volumeSpec) keptVolume(name string) podrefs.KeptVolume {
	return podrefs.KeptVolume{Name: name, Plugin: PluginCSI, ConfigMap: s.Source.ConfigMap, Secret: s.Source.Secret, Projected: s.Source.Projected}
}

// parseAttributes checks a publish call's volume context: the user's
// attributes (podrefs.ParseDriverAttributes, the contract that analyze
// reads too) and the kubelet's, and returns every problem found.
func parseAttributes(attrs map[string]string) (volumeSpec, error) {
	src, problems := podrefs.ParseDriverAttributes(attrs)
	spec := volumeSpec{Source: src, Layout: cache.LayoutAtomic}
	if src.InPlace {
		spec.Layout = cache.LayoutInPlace
	}
	spec.Pod = podInfo{Namespace: attrs[attrPodNamespace], Name: attrs[attrPodName], UID: types.UID(attrs[attrPodUID]), ServiceAccount: attrs[attrServiceAccount]}
	if spec.Pod.Namespace == "" || spec.Pod.Name == "" || spec.Pod.UID == "" {
		problems = append(problems, "the call names no pod: the CSIDriver object must set podInfoOnMount: true")
	}
	if attrs[attrEphemeral] == "false" {
		problems = append(problems, "only inline ephemeral volumes are served (volumes[].csi in a pod), not persistent volumes")
	}
	if len(problems) > 0 {
		return volumeSpec{}, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return spec, nil
}
