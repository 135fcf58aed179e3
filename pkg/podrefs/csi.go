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
	AttrSecret      = "secret"
	AttrSources     = "sources"
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

var driverAttributes = []string{AttrConfigMap, AttrSecret, AttrSources, AttrOptional, AttrDefaultMode, AttrDefaultUser, AttrItems, AttrUpdates}

// DriverSource is what a driver volume's attributes ask for: the volume
// source of the same meaning (exactly one of ConfigMap, Secret and
// Projected, as the attribute configMap, secret or sources names it), and
// whether its files are rewritten in place (updates: inPlace).
type DriverSource struct {
	ConfigMap *corev1.ConfigMapVolumeSource
	Secret    *corev1.SecretVolumeSource
	Projected *corev1.ProjectedVolumeSource
	InPlace   bool
}

// Reads are the objects the volume reads, in its sources' order, as
// volumeReads says of the volume of the same source.
func (s DriverSource) Reads() []Ref {
	return volumeReads(&corev1.Volume{VolumeSource: corev1.VolumeSource{ConfigMap: s.ConfigMap, Secret: s.Secret, Projected: s.Projected}})
}

// HoldsSecrets says whether the volume's files hold a Secret's bytes.
func (s DriverSource) HoldsSecrets() bool {
	return slices.ContainsFunc(s.Reads(), func(r Ref) bool { return r.Kind == model.Secret })
}

// ParseDriverAttributes checks a driver volume's attributes and returns
// what they ask for, or every problem found, in words a pod's author can
// act on. The kubelet's own attributes are left to the caller.
func ParseDriverAttributes(attrs map[string]string) (DriverSource, []string) {
	problems := unknownAttributes(attrs)
	c, more := parseCommon(attrs)
	problems = append(problems, more...)
	var src DriverSource
	src.InPlace = c.inPlace
	named := namedSources(attrs)
	switch {
	case len(named) == 0:
		problems = append(problems, fmt.Sprintf("attribute %q is required: the name of a ConfigMap in the pod's namespace (or %q, a Secret's, or %q, a JSON list of projected sources)",
			AttrConfigMap, AttrSecret, AttrSources))
	case len(named) > 1:
		problems = append(problems, fmt.Sprintf("attributes %s are all set: a volume reads one ConfigMap (%s), one Secret (%s) or the projected sources (%s)",
			strings.Join(named, " and "), AttrConfigMap, AttrSecret, AttrSources))
	case named[0] == AttrConfigMap:
		name := attrs[AttrConfigMap]
		problems = append(problems, objectNameProblems(AttrConfigMap, "ConfigMap", name)...)
		src.ConfigMap = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name},
			Optional: c.optional, DefaultMode: &c.mode, DefaultUser: c.user, Items: c.items}
	case named[0] == AttrSecret:
		name := attrs[AttrSecret]
		problems = append(problems, objectNameProblems(AttrSecret, "Secret", name)...)
		src.Secret = &corev1.SecretVolumeSource{SecretName: name, Optional: c.optional, DefaultMode: &c.mode, DefaultUser: c.user, Items: c.items}
	default:
		if c.optional != nil || c.items != nil {
			problems = append(problems, fmt.Sprintf("attributes %s and %s are each source's own in %s, as in a projected volume", AttrOptional, AttrItems, AttrSources))
		}
		sources, more := parseSources(attrs[AttrSources])
		problems = append(problems, more...)
		src.Projected = &corev1.ProjectedVolumeSource{Sources: sources, DefaultMode: &c.mode, DefaultUser: c.user}
	}
	return src, problems
}

// namedSources are which of configMap, secret and sources attrs sets.
func namedSources(attrs map[string]string) []string {
	var named []string
	for _, a := range []string{AttrConfigMap, AttrSecret, AttrSources} {
		if _, ok := attrs[a]; ok {
			named = append(named, a)
		}
	}
	return named
}

// commonAttributes are the attributes every kind of driver volume reads.
type commonAttributes struct {
	optional *bool
	mode     int32
	user     *int64
	items    []corev1.KeyToPath
	inPlace  bool
}

// parseCommon reads the attributes every kind of volume shares, with the
// API's default mode where none is set.
func parseCommon(attrs map[string]string) (commonAttributes, []string) {
	c := commonAttributes{mode: corev1.ConfigMapVolumeSourceDefaultMode}
	var problems []string
	if v, ok := attrs[AttrOptional]; ok {
		optional, err := strconv.ParseBool(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf(`attribute %s=%q: want "true" or "false"`, AttrOptional, v))
		}
		c.optional = &optional
	}
	if v, ok := attrs[AttrDefaultMode]; ok {
		m, err := parseMode(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("attribute %s=%q: %v", AttrDefaultMode, v, err))
		}
		c.mode = m
	}
	if v, ok := attrs[AttrDefaultUser]; ok {
		user, err := parseUser(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("attribute %s=%q: %v", AttrDefaultUser, v, err))
		}
		c.user = &user
	}
	if v, ok := attrs[AttrItems]; ok {
		items, errs := parseItems(v)
		problems = append(problems, errs...)
		c.items = items
	}
	switch v := attrs[AttrUpdates]; v {
	case "", UpdatesAtomic:
	case UpdatesInPlace:
		c.inPlace = true
	default:
		problems = append(problems, fmt.Sprintf("attribute %s=%q: want %s (the default) or %s", AttrUpdates, v, UpdatesAtomic, UpdatesInPlace))
	}
	return c, problems
}

// unknownAttributes says which of attrs the driver does not know (the
// kubelet's own are left alone).
func unknownAttributes(attrs map[string]string) []string {
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(attrs)) {
		switch {
		case key == "namespace":
			problems = append(problems, `attribute "namespace" is not supported: a volume reads objects of its own pod's namespace only, as a configMap or secret volume does`)
		case strings.HasPrefix(key, KubeletAttrPrefix):
		case !slices.Contains(driverAttributes, key):
			problems = append(problems, fmt.Sprintf("unknown attribute %q (known: %s)", key, strings.Join(driverAttributes, ", ")))
		}
	}
	return problems
}

// objectNameProblems says what is wrong with the name that attribute attr
// gives an object of kind.
func objectNameProblems(attr, kind, name string) []string {
	switch {
	case name == "":
		return []string{fmt.Sprintf("attribute %s is empty: want the name of a %s in the pod's namespace", attr, kind)}
	case strings.Contains(name, "/"):
		return []string{fmt.Sprintf("attribute %s=%q: a %s name has no slash; a volume reads a %s of its pod's namespace only", attr, name, kind, kind)}
	}
	var problems []string
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		problems = append(problems, fmt.Sprintf("attribute %s=%q: %s", attr, name, msg))
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
	return DriverVolume{Name: v.Name, Reads: src.Reads(), InPlace: src.InPlace}, true
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

// parseItems reads the JSON of a volume source's items (modes in decimal,
// as JSON writes them: 256 is 0400) and checks each as the API server
// checks them.
func parseItems(s string) ([]corev1.KeyToPath, []string) {
	var items []corev1.KeyToPath
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&items); err != nil {
		return nil, []string{fmt.Sprintf(`attribute %s is not a JSON list of {"key", "path", "mode", "user"}: %v`, AttrItems, err)}
	}
	paths, problems := itemProblems("attribute "+AttrItems, items)
	if len(problems) == 0 {
		if _, err := atomicwriter.ValidatePayloadPaths(paths); err != nil {
			problems = append(problems, fmt.Sprintf("attribute %s: %v", AttrItems, err))
		}
	}
	return items, problems
}

// itemProblems checks items as the API server checks a volume's, each
// named where[i] in the problems, and returns their valid paths.
func itemProblems(where string, items []corev1.KeyToPath) (paths, problems []string) {
	for i, item := range items {
		at := fmt.Sprintf("%s[%d]", where, i)
		if item.Key == "" {
			problems = append(problems, at+`: "key" is required`)
		}
		for _, msg := range validation.IsConfigMapKey(item.Key) {
			problems = append(problems, fmt.Sprintf("%s: key %q: %s", at, item.Key, msg))
		}
		if err := atomicwriter.ValidatePath(item.Path); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", at, err))
		} else {
			paths = append(paths, item.Path)
		}
		if item.Mode != nil && (*item.Mode < 0 || *item.Mode > 0o777) {
			problems = append(problems, fmt.Sprintf("%s: mode %d is not a file mode from 0 to 511 (0777)", at, *item.Mode))
		}
		if item.User != nil && len(validation.IsValidUserID(*item.User)) > 0 {
			problems = append(problems, fmt.Sprintf("%s: user %d is not a user ID from 0 to 2147483647", at, *item.User))
		}
	}
	return paths, problems
}
