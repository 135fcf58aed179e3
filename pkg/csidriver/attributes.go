package csidriver

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

// The volume attributes a pod's csi volume may set: the driver's contract
// with its users (docs/csi.md, "Attributes"). Tests outside the project use
// these names; never rename one.
const (
	AttrConfigMap   = "configMap"
	AttrOptional    = "optional"
	AttrDefaultMode = "defaultMode"
	AttrItems       = "items"
	AttrUpdates     = "updates"
)

// The attributes the kubelet adds with podInfoOnMount: true.
const (
	kubeletPrefix      = "csi.storage.k8s.io/"
	attrPodName        = kubeletPrefix + "pod.name"
	attrPodNamespace   = kubeletPrefix + "pod.namespace"
	attrPodUID         = kubeletPrefix + "pod.uid"
	attrServiceAccount = kubeletPrefix + "serviceAccount.name"
	attrEphemeral      = kubeletPrefix + "ephemeral"
)

// The values of AttrUpdates.
const (
	UpdatesAtomic  = "atomic"
	UpdatesInPlace = "inPlace"
)

var userAttributes = []string{AttrConfigMap, AttrOptional, AttrDefaultMode, AttrItems, AttrUpdates}

// podInfo is the pod a volume is for, as the kubelet describes it.
type podInfo struct {
	Namespace, Name, ServiceAccount string
	UID                             types.UID
}

// volumeSpec is what one publish call asks for, checked.
type volumeSpec struct {
	Pod    podInfo
	Source corev1.ConfigMapVolumeSource
	Layout cache.Layout
}

// parseAttributes checks a publish call's volume context and returns what
// it asks for, or every problem found, in words a pod's author can act on.
func parseAttributes(attrs map[string]string) (volumeSpec, error) {
	var spec volumeSpec
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(attrs)) {
		switch {
		case key == "namespace":
			problems = append(problems, `attribute "namespace" is not supported: a volume reads a ConfigMap of its own pod's namespace only, as a configMap volume does`)
		case strings.HasPrefix(key, kubeletPrefix):
			// The kubelet's; those not read here are new ones, ignored.
		case !slices.Contains(userAttributes, key):
			problems = append(problems, fmt.Sprintf("unknown attribute %q (known: %s)", key, strings.Join(userAttributes, ", ")))
		}
	}
	spec.Pod = podInfo{Namespace: attrs[attrPodNamespace], Name: attrs[attrPodName], UID: types.UID(attrs[attrPodUID]), ServiceAccount: attrs[attrServiceAccount]}
	if spec.Pod.Namespace == "" || spec.Pod.Name == "" || spec.Pod.UID == "" {
		problems = append(problems, "the call names no pod: the CSIDriver object must set podInfoOnMount: true")
	}
	if attrs[attrEphemeral] == "false" {
		problems = append(problems, "only inline ephemeral volumes are served (volumes[].csi in a pod), not persistent volumes")
	}

	name := attrs[AttrConfigMap]
	switch {
	case name == "":
		problems = append(problems, fmt.Sprintf("attribute %q is required: the name of a ConfigMap in the pod's namespace", AttrConfigMap))
	case strings.Contains(name, "/"):
		problems = append(problems, fmt.Sprintf("attribute %s=%q: a ConfigMap name has no slash; a volume reads a ConfigMap of its pod's namespace only", AttrConfigMap, name))
	default:
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			problems = append(problems, fmt.Sprintf("attribute %s=%q: %s", AttrConfigMap, name, msg))
		}
	}
	spec.Source.Name = name

	if v, ok := attrs[AttrOptional]; ok {
		optional, err := strconv.ParseBool(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf(`attribute %s=%q: want "true" or "false"`, AttrOptional, v))
		}
		spec.Source.Optional = &optional
	}
	mode := int32(0o644)
	if v, ok := attrs[AttrDefaultMode]; ok {
		m, err := parseMode(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("attribute %s=%q: %v", AttrDefaultMode, v, err))
		}
		mode = m
	}
	spec.Source.DefaultMode = &mode
	if v, ok := attrs[AttrItems]; ok {
		items, errs := parseItems(v)
		problems = append(problems, errs...)
		spec.Source.Items = items
	}
	switch v := attrs[AttrUpdates]; v {
	case "", UpdatesAtomic:
		spec.Layout = cache.LayoutAtomic
	case UpdatesInPlace:
		spec.Layout = cache.LayoutInPlace
	default:
		problems = append(problems, fmt.Sprintf("attribute %s=%q: want %s (the default) or %s", AttrUpdates, v, UpdatesAtomic, UpdatesInPlace))
	}
	if len(problems) > 0 {
		return volumeSpec{}, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return spec, nil
}

// parseMode reads an octal file mode, as a pod's YAML writes defaultMode:
// "0440" or "440".
func parseMode(s string) (int32, error) {
	m, err := strconv.ParseInt(s, 8, 32)
	if err != nil || m < 0 || m > 0o777 {
		return 0, fmt.Errorf("want an octal mode from 0000 to 0777")
	}
	return int32(m), nil
}

// parseItems reads the JSON of a ConfigMapVolumeSource's items (modes in
// decimal, as JSON writes them: 256 is 0400) and checks each as the API
// server checks them.
func parseItems(s string) ([]corev1.KeyToPath, []string) {
	var items []corev1.KeyToPath
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&items); err != nil {
		return nil, []string{fmt.Sprintf(`attribute %s is not a JSON list of {"key", "path", "mode"}: %v`, AttrItems, err)}
	}
	var problems []string
	paths := make([]string, 0, len(items))
	for i, item := range items {
		where := fmt.Sprintf("attribute %s[%d]", AttrItems, i)
		if item.Key == "" {
			problems = append(problems, where+`: "key" is required`)
		}
		for _, msg := range validation.IsConfigMapKey(item.Key) {
			problems = append(problems, fmt.Sprintf("%s: key %q: %s", where, item.Key, msg))
		}
		if err := atomicwriter.ValidatePath(item.Path); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
		} else {
			paths = append(paths, item.Path)
		}
		if item.Mode != nil && (*item.Mode < 0 || *item.Mode > 0o777) {
			problems = append(problems, fmt.Sprintf("%s: mode %d is not a file mode from 0 to 511 (0777)", where, *item.Mode))
		}
	}
	if len(problems) == 0 {
		if _, err := atomicwriter.ValidatePayloadPaths(paths); err != nil {
			problems = append(problems, fmt.Sprintf("attribute %s: %v", AttrItems, err))
		}
	}
	return items, problems
}
