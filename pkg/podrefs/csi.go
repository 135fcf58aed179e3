package podrefs

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// DriverName is nodeagent's CSI driver (pkg/csidriver): a pod's csi
// volumes of this driver are the driver's to serve, not the kubelet's.
const DriverName = "configmaps.nodeagent.io"

// The admission webhook's contract (pkg/webhook; docs/csi.md, "The
// admission webhook, opt-in"): a namespace labelled ServeLabel=ServeEnabled
// has its new pods' configMap volumes converted to the driver's; a pod
// annotated ServeLabel: ServeDisabled opts out; a converted pod carries
// ConvertedAnnotation, the names of the volumes converted.
const (
	ServeLabel          = "configmaps.nodeagent.io/serve"
	ServeEnabled        = "enabled"
	ServeDisabled       = "disabled"
	ConvertedAnnotation = "configmaps.nodeagent.io/converted"
)

// The volume attributes of the driver's volumes: its contract with its
// users (docs/csi.md, "Attributes"). Tests outside the project use these
// names; never rename one.
const (
	AttrConfigMap   = "configMap"
	AttrOptional    = "optional"
	AttrDefaultMode = "defaultMode"
	AttrDefaultUser = "defaultUser"
	AttrItems       = "items"
	AttrUpdates     = "updates"
)

// The values of AttrUpdates.
const (
	UpdatesAtomic  = "atomic"
	UpdatesInPlace = "inPlace"
)

// KubeletAttrPrefix starts the attributes the kubelet adds to a publish
// call (the pod's name, namespace, uid, service account).
const KubeletAttrPrefix = "csi.storage.k8s.io/"

var driverAttributes = []string{AttrConfigMap, AttrOptional, AttrDefaultMode, AttrDefaultUser, AttrItems, AttrUpdates}

// DriverSource is what a driver volume's attributes ask for: the
// ConfigMapVolumeSource of the same meaning, and whether its files are
// rewritten in place (updates: inPlace).
type DriverSource struct {
	ConfigMap corev1.ConfigMapVolumeSource
	InPlace   bool
}

// ParseDriverAttributes checks a driver volume's attributes and returns
// what they ask for, or every problem found, in words a pod's author can
// act on. The kubelet's own attributes are left to the caller.
func ParseDriverAttributes(attrs map[string]string) (DriverSource, []string) {
	var src DriverSource
	problems := unknownAttributes(attrs)
	name := attrs[AttrConfigMap]
	problems = append(problems, configMapNameProblems(name)...)
	src.ConfigMap.Name = name
	if v, ok := attrs[AttrOptional]; ok {
		optional, err := strconv.ParseBool(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf(`attribute %s=%q: want "true" or "false"`, AttrOptional, v))
		}
		src.ConfigMap.Optional = &optional
	}
	mode := corev1.ConfigMapVolumeSourceDefaultMode
	if v, ok := attrs[AttrDefaultMode]; ok {
		m, err := parseMode(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("attribute %s=%q: %v", AttrDefaultMode, v, err))
		}
		mode = m
	}
	src.ConfigMap.DefaultMode = &mode
	if v, ok := attrs[AttrDefaultUser]; ok {
		user, err := parseUser(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("attribute %s=%q: %v", AttrDefaultUser, v, err))
		}
		src.ConfigMap.DefaultUser = &user
	}
	if v, ok := attrs[AttrItems]; ok {
		items, errs := parseItems(v)
		problems = append(problems, errs...)
		src.ConfigMap.Items = items
	}
	switch v := attrs[AttrUpdates]; v {
	case "", UpdatesAtomic:
	case UpdatesInPlace:
		src.InPlace = true
	default:
		problems = append(problems, fmt.Sprintf("attribute %s=%q: want %s (the default) or %s", AttrUpdates, v, UpdatesAtomic, UpdatesInPlace))
	}
	return src, problems
}

// unknownAttributes says which of attrs the driver does not know (the
// kubelet's own are left alone).
func unknownAttributes(attrs map[string]string) []string {
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(attrs)) {
		switch {
		case key == "namespace":
			problems = append(problems, `attribute "namespace" is not supported: a volume reads a ConfigMap of its own pod's namespace only, as a configMap volume does`)
		case strings.HasPrefix(key, KubeletAttrPrefix):
		case !slices.Contains(driverAttributes, key):
			problems = append(problems, fmt.Sprintf("unknown attribute %q (known: %s)", key, strings.Join(driverAttributes, ", ")))
		}
	}
	return problems
}

// configMapNameProblems says what is wrong with the configMap attribute.
func configMapNameProblems(name string) []string {
	switch {
	case name == "":
		return []string{fmt.Sprintf("attribute %q is required: the name of a ConfigMap in the pod's namespace", AttrConfigMap)}
	case strings.Contains(name, "/"):
		return []string{fmt.Sprintf("attribute %s=%q: a ConfigMap name has no slash; a volume reads a ConfigMap of its pod's namespace only", AttrConfigMap, name)}
	}
	var problems []string
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		problems = append(problems, fmt.Sprintf("attribute %s=%q: %s", AttrConfigMap, name, msg))
	}
	return problems
}

// driverVolume is v as the CSI driver serves it, if it is one of the
// driver's volumes and the driver accepts its attributes.
func driverVolume(v *corev1.Volume) (DriverVolume, bool) {
	if v.CSI == nil || v.CSI.Driver != DriverName {
		return DriverVolume{}, false
	}
	src, problems := ParseDriverAttributes(v.CSI.VolumeAttributes)
	if len(problems) > 0 {
		return DriverVolume{}, false
	}
	read := Ref{Kind: model.ConfigMap, Name: src.ConfigMap.Name, Optional: isTrue(src.ConfigMap.Optional), Keys: itemKeys(src.ConfigMap.Items)}
	return DriverVolume{Name: v.Name, Reads: []Ref{read}, InPlace: src.InPlace}, true
}

// refusedDriverVolume is v, if it is one of the driver's volumes and the
// driver refuses its attributes, with what the driver says of them.
func refusedDriverVolume(v *corev1.Volume) (RefusedDriverVolume, bool) {
	if v.CSI == nil || v.CSI.Driver != DriverName {
		return RefusedDriverVolume{}, false
	}
	_, problems := ParseDriverAttributes(v.CSI.VolumeAttributes)
	if len(problems) == 0 {
		return RefusedDriverVolume{}, false
	}
	return RefusedDriverVolume{Name: v.Name, ConfigMap: v.CSI.VolumeAttributes[AttrConfigMap], Problem: strings.Join(problems, "; ")}, true
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

// parseUser reads a file owner's UID, as a pod's YAML writes defaultUser.
func parseUser(s string) (int64, error) {
	uid, err := strconv.ParseInt(s, 10, 64)
	if err != nil || len(validation.IsValidUserID(uid)) > 0 {
		return 0, fmt.Errorf("want a user ID from 0 to 2147483647")
	}
	return uid, nil
}

// parseItems reads the JSON of a ConfigMapVolumeSource's items (modes in
// decimal, as JSON writes them: 256 is 0400) and checks each as the API
// server checks them.
func parseItems(s string) ([]corev1.KeyToPath, []string) {
	var items []corev1.KeyToPath
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&items); err != nil {
		return nil, []string{fmt.Sprintf(`attribute %s is not a JSON list of {"key", "path", "mode", "user"}: %v`, AttrItems, err)}
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
		if item.User != nil && len(validation.IsValidUserID(*item.User)) > 0 {
			problems = append(problems, fmt.Sprintf("%s: user %d is not a user ID from 0 to 2147483647", where, *item.User))
		}
	}
	if len(problems) == 0 {
		if _, err := atomicwriter.ValidatePayloadPaths(paths); err != nil {
			problems = append(problems, fmt.Sprintf("attribute %s: %v", AttrItems, err))
		}
	}
	return items, problems
}
