package convert

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// Reversal is what becomes of one volume when a pod spec moves back to the
// kubelet: the result, and the configMap volume source of a volume of the
// driver's.
type Reversal struct {
	VolumeResult
	ConfigMap *corev1.ConfigMapVolumeSource
}

// PlanRevert decides, without changing spec, which of its volumes that want
// chooses (nil: all) go back to being configMap volumes: each volume of the
// driver whose attributes the driver accepts becomes the configMap volume
// they describe (updates: inPlace is dropped: the kubelet has no such
// thing). Every other volume stays, with the reason.
func PlanRevert(spec *corev1.PodSpec, want func(volume string) bool) []Reversal {
	if want == nil {
		want = func(string) bool { return true }
	}
	out := make([]Reversal, 0, len(spec.Volumes))
	for _, v := range spec.Volumes {
		r := Reversal{VolumeResult: VolumeResult{Volume: v.Name}}
		switch {
		case v.CSI == nil || v.CSI.Driver != podrefs.DriverName:
			r.Reason = "not a volume of the driver " + podrefs.DriverName
		case !want(v.Name):
			r.Reason = "not chosen by the options"
		default:
			parsed, problems := podrefs.ParseDriverAttributes(v.CSI.VolumeAttributes)
			if len(problems) > 0 {
				r.Reason = fmt.Sprintf("its attributes do not describe a configMap volume: %s", strings.Join(problems, "; "))
				break
			}
			if parsed.ConfigMap == nil {
				r.Reason = "it serves a Secret or projected sources, which revert leaves as they are: only configMap volumes move back"
				break
			}
			r.ConfigMap, r.Reverted = parsed.ConfigMap.DeepCopy(), true
			// What the attributes left to the defaults, the configMap
			// volume leaves to the API's.
			if _, set := v.CSI.VolumeAttributes[podrefs.AttrDefaultMode]; !set {
				r.ConfigMap.DefaultMode = nil
			}
			if _, set := v.CSI.VolumeAttributes[podrefs.AttrOptional]; !set {
				r.ConfigMap.Optional = nil
			}
		}
		out = append(out, r)
	}
	return out
}
