package convert

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// VolumeResult is what Convert did to one volume of a pod template.
type VolumeResult struct {
	Volume string
	// ConfigMap: it was a configMap volume; Converted: it is the
	// driver's now.
	ConfigMap, Converted bool
	// InPlace: converted with updates: inPlace, for SubPathUsers.
	InPlace      bool
	SubPathUsers []string
	// Reverted: it was the driver's, and is a configMap volume again
	// (PlanRevert).
	Reverted bool
	// Reason says why a volume was left as it was.
	Reason string
}

// podFacts are what converting a pod spec's volumes reads of the rest of
// it.
type podFacts struct {
	// subPathUsers maps each volume to the containers that mount part of
	// it with subPath or subPathExpr.
	subPathUsers map[string][]string
	windows      bool
}

func factsOf(spec *corev1.PodSpec) podFacts {
	facts := podFacts{subPathUsers: map[string][]string{}, windows: spec.OS != nil && spec.OS.Name == corev1.Windows}
	podrefs.VisitSpecContainers(spec, func(c *corev1.Container) {
		for _, m := range c.VolumeMounts {
			if m.SubPath != "" || m.SubPathExpr != "" {
				facts.subPathUsers[m.Name] = appendOnce(facts.subPathUsers[m.Name], c.Name)
			}
		}
	})
	return facts
}

// plan decides what becomes of one volume, and returns the driver's
// attributes for a volume to convert.
func (f podFacts) plan(volume *corev1.Volume, opts Options) (VolumeResult, map[string]string) {
	r := VolumeResult{Volume: volume.Name, ConfigMap: volume.ConfigMap != nil, SubPathUsers: f.subPathUsers[volume.Name]}
	moves := volume.ConfigMap != nil || opts.Secrets && (volume.Secret != nil || volume.Projected != nil)
	switch {
	case !moves:
		r.Reason = notConfigMap(*volume)
	case f.windows:
		r.Reason = "a Windows pod: the driver runs on Linux nodes"
	case !opts.Want(volume.Name):
		r.Reason = "not chosen by the options"
	}
	if r.Reason != "" {
		return r, nil
	}
	r.InPlace = len(r.SubPathUsers) > 0
	var attrs map[string]string
	var err error
	switch {
	case volume.ConfigMap != nil:
		attrs, err = driverAttributes(volume.ConfigMap, r.InPlace)
	case volume.Secret != nil:
		attrs, err = secretAttributes(volume.Secret, r.InPlace)
	default:
		attrs, err = sourcesAttributes(volume.Projected, r.InPlace)
	}
	if err != nil {
		r.Reason = err.Error()
		return r, nil
	}
	r.Converted = true
	return r, attrs
}

// Options choose what PlanWith converts.
type Options struct {
	// Want chooses the volumes by name; nil chooses every one.
	Want func(volume string) bool
	// Secrets converts secret volumes, and projected volumes of configMap
	// and secret sources, too: for the driver's Secrets mode.
	Secrets bool
}

// Decision is what becomes of one volume: the result, and the driver's
// attributes of a volume to convert.
type Decision struct {
	VolumeResult
	Attributes map[string]string
	// From is the volume's source field that the driver's csi replaces
	// (configMap, secret or projected).
	From string
}

// Plan decides, without changing spec, what becomes of each of its
// configMap volumes that want chooses (nil: all).
func Plan(spec *corev1.PodSpec, want func(volume string) bool) []Decision {
	return PlanWith(spec, Options{Want: want})
}

// PlanWith decides, without changing spec, what becomes of each of its
// volumes, as opts say.
func PlanWith(spec *corev1.PodSpec, opts Options) []Decision {
	if opts.Want == nil {
		opts.Want = func(string) bool { return true }
	}
	facts := factsOf(spec)
	out := make([]Decision, 0, len(spec.Volumes))
	for i := range spec.Volumes {
		r, attrs := facts.plan(&spec.Volumes[i], opts)
		out = append(out, Decision{VolumeResult: r, Attributes: attrs, From: sourceField(spec.Volumes[i])})
	}
	return out
}

// sourceField is the name of the field of v's source: configMap, secret,
// projected, or "" for any other.
func sourceField(v corev1.Volume) string {
	switch {
	case v.ConfigMap != nil:
		return "configMap"
	case v.Secret != nil:
		return "secret"
	case v.Projected != nil:
		return "projected"
	}
	return ""
}

// PodSpec converts the configMap volumes of spec that want chooses (nil:
// all) in place, and returns what it did to each volume.
func PodSpec(spec *corev1.PodSpec, want func(volume string) bool) []VolumeResult {
	decisions := Plan(spec, want)
	results := make([]VolumeResult, 0, len(decisions))
	for i, d := range decisions {
		if d.Converted {
			spec.Volumes[i] = d.DriverVolume(spec.Volumes[i].Name)
		}
		results = append(results, d.VolumeResult)
	}
	return results
}

// notConfigMap says why a volume that is not a configMap volume stays.
func notConfigMap(v corev1.Volume) string {
	switch {
	case v.Projected != nil:
		return "a projected volume: moved only with --secrets, for the driver's Secrets mode"
	case v.Secret != nil:
		return "a secret volume: moved only with --secrets, for the driver's Secrets mode"
	case v.CSI != nil:
		return "a csi volume already"
	}
	return "not a configMap volume"
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	list = append(list, s)
	sort.Strings(list)
	return list
}

// Describe is a VolumeResult in a line of a summary.
func (r VolumeResult) Describe() string {
	switch {
	case r.Reverted:
		return fmt.Sprintf("volume %s: a configMap volume again", r.Volume)
	case r.Converted && r.InPlace:
		return fmt.Sprintf("volume %s: converted, updates: inPlace (mounted with subPath by %s)", r.Volume, strings.Join(r.SubPathUsers, ", "))
	case r.Converted:
		return fmt.Sprintf("volume %s: converted", r.Volume)
	}
	return fmt.Sprintf("volume %s: left as it is: %s", r.Volume, r.Reason)
}

// driverAttributes returns the driver's attributes for source, or why the
// driver cannot serve it as the configMap volume would be served.
func driverAttributes(source *corev1.ConfigMapVolumeSource, inPlace bool) (map[string]string, error) {
	attrs := map[string]string{podrefs.AttrConfigMap: source.Name}
	if err := setCommon(attrs, source.Optional, source.DefaultMode, source.DefaultUser, source.Items, inPlace); err != nil {
		return nil, err
	}
	parsed, err := parseBack(attrs)
	if err != nil {
		return nil, err
	}
	if parsed.ConfigMap == nil || !sameFiles(source, parsed.ConfigMap) {
		return nil, errNotExact
	}
	return attrs, nil
}

// errNotExact: the driver's attributes would ask for other files.
var errNotExact = fmt.Errorf("the driver's attributes cannot say it exactly")

// setCommon writes the attributes every kind of volume shares, those set.
func setCommon(attrs map[string]string, optional *bool, defaultMode *int32, defaultUser *int64, items []corev1.KeyToPath, inPlace bool) error {
	if optional != nil {
		attrs[podrefs.AttrOptional] = strconv.FormatBool(*optional)
	}
	if defaultMode != nil {
		attrs[podrefs.AttrDefaultMode] = fmt.Sprintf("%04o", *defaultMode)
	}
	if defaultUser != nil {
		attrs[podrefs.AttrDefaultUser] = strconv.FormatInt(*defaultUser, 10)
	}
	if len(items) > 0 {
		encoded, err := json.Marshal(items)
		if err != nil {
			return err
		}
		attrs[podrefs.AttrItems] = string(encoded)
	}
	if inPlace {
		attrs[podrefs.AttrUpdates] = podrefs.UpdatesInPlace
	}
	return nil
}

// parseBack reads attrs as the driver will, refusing what it would refuse.
func parseBack(attrs map[string]string) (podrefs.DriverSource, error) {
	parsed, problems := podrefs.ParseDriverAttributes(attrs)
	if len(problems) > 0 {
		return parsed, fmt.Errorf("the driver would refuse it: %s", problems[0])
	}
	return parsed, nil
}

// sameFiles says whether the driver's source asks for the files the volume's
// does, defaults applied to both as the API applies them.
func sameFiles(volume, driver *corev1.ConfigMapVolumeSource) bool {
	v, d := volume.DeepCopy(), driver.DeepCopy()
	for _, s := range []*corev1.ConfigMapVolumeSource{v, d} {
		if s.DefaultMode == nil {
			s.DefaultMode = ptrTo(corev1.ConfigMapVolumeSourceDefaultMode)
		}
		if s.Optional == nil {
			s.Optional = ptrTo(false)
		}
		if len(s.Items) == 0 {
			s.Items = nil
		}
	}
	return equality.Semantic.DeepEqual(v, d)
}

func ptrTo[T any](v T) *T { return &v }

// AttributeOrder is the order a volume's attributes are best written in:
// what the volume reads, the fields of its source, then updates. Every
// attribute the driver knows is in it.
var AttributeOrder = []string{podrefs.AttrConfigMap, podrefs.AttrSecret, podrefs.AttrSources, podrefs.AttrOptional, podrefs.AttrDefaultMode,
	podrefs.AttrDefaultUser, podrefs.AttrItems, podrefs.AttrUpdates}
