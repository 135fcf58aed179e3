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
func (f podFacts) plan(volume *corev1.Volume, want func(volume string) bool) (VolumeResult, map[string]string) {
	r := VolumeResult{Volume: volume.Name, ConfigMap: volume.ConfigMap != nil, SubPathUsers: f.subPathUsers[volume.Name]}
	switch {
	case volume.ConfigMap == nil:
		r.Reason = notConfigMap(*volume)
	case f.windows:
		r.Reason = "a Windows pod: the driver runs on Linux nodes"
	case !want(volume.Name):
		r.Reason = "not chosen by the options"
	}
	if r.Reason != "" {
		return r, nil
	}
	r.InPlace = len(r.SubPathUsers) > 0
	attrs, err := driverAttributes(volume.ConfigMap, r.InPlace)
	if err != nil {
		r.Reason = err.Error()
		return r, nil
	}
	r.Converted = true
	return r, attrs
}

// Decision is what becomes of one volume: the result, and the driver's
// attributes of a volume to convert.
type Decision struct {
	VolumeResult
	Attributes map[string]string
}

// Plan decides, without changing spec, what becomes of each of its
// volumes that want chooses (nil: all).
func Plan(spec *corev1.PodSpec, want func(volume string) bool) []Decision {
	if want == nil {
		want = func(string) bool { return true }
	}
	facts := factsOf(spec)
	out := make([]Decision, 0, len(spec.Volumes))
	for i := range spec.Volumes {
		r, attrs := facts.plan(&spec.Volumes[i], want)
		out = append(out, Decision{VolumeResult: r, Attributes: attrs})
	}
	return out
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
		return "a projected volume: convert moves configMap volumes only (the driver's Secrets mode serves projected sources written by hand)"
	case v.Secret != nil:
		return "a secret volume: convert moves configMap volumes only (the driver's Secrets mode serves Secrets written by hand)"
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
	if source.Optional != nil {
		attrs[podrefs.AttrOptional] = strconv.FormatBool(*source.Optional)
	}
	if source.DefaultMode != nil {
		attrs[podrefs.AttrDefaultMode] = fmt.Sprintf("%04o", *source.DefaultMode)
	}
	if source.DefaultUser != nil {
		attrs[podrefs.AttrDefaultUser] = strconv.FormatInt(*source.DefaultUser, 10)
	}
	if len(source.Items) > 0 {
		items, err := json.Marshal(source.Items)
		if err != nil {
			return nil, err
		}
		attrs[podrefs.AttrItems] = string(items)
	}
	if inPlace {
		attrs[podrefs.AttrUpdates] = podrefs.UpdatesInPlace
	}
	parsed, problems := podrefs.ParseDriverAttributes(attrs)
	if len(problems) > 0 {
		return nil, fmt.Errorf("the driver would refuse it: %s", problems[0])
	}
	if parsed.ConfigMap == nil || !sameFiles(source, parsed.ConfigMap) {
		return nil, fmt.Errorf("the driver's attributes cannot say it exactly")
	}
	return attrs, nil
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
// the ConfigMapVolumeSource's fields, then updates.
var AttributeOrder = []string{podrefs.AttrConfigMap, podrefs.AttrOptional, podrefs.AttrDefaultMode, podrefs.AttrDefaultUser, podrefs.AttrItems, podrefs.AttrUpdates}
