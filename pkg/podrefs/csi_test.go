package podrefs

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

func driverVolumeOf(name string, attrs map[string]string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: DriverName, VolumeAttributes: attrs}}}
}

// The driver's volumes are the driver's reads, not the kubelet's; a
// subPath of an atomic one stays as it was, of an inPlace one does not; a
// volume the driver would refuse, or another driver's, reads nothing.
func TestOfDriverVolumes(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{
				{Name: "atomic"}, {Name: "inplace"}, {Name: "refused"}, {Name: "other"},
				{Name: "atomic", MountPath: "/etc/a", SubPath: "a"},
				{Name: "inplace", MountPath: "/etc/b", SubPath: "b"},
			}}},
			Volumes: []corev1.Volume{
				driverVolumeOf("atomic", map[string]string{AttrConfigMap: "cfg", AttrItems: `[{"key":"a","path":"a"}]`}),
				driverVolumeOf("inplace", map[string]string{AttrConfigMap: "live", AttrOptional: "true", AttrUpdates: UpdatesInPlace}),
				driverVolumeOf("refused", map[string]string{AttrConfigMap: "x", "namespace": "kube-system"}),
				{Name: "other", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io"}}},
			},
		},
	}
	refs := Of(pod)
	want := []DriverVolume{
		{Name: "atomic", Reads: []Ref{{Kind: model.ConfigMap, Name: "cfg", Keys: []string{"a"}}}},
		{Name: "inplace", Reads: []Ref{{Kind: model.ConfigMap, Name: "live", Optional: true}}, InPlace: true},
	}
	if !reflect.DeepEqual(refs.DriverVolumes, want) {
		t.Errorf("driver volumes %+v, want %+v", refs.DriverVolumes, want)
	}
	if len(refs.Volumes) != 0 {
		t.Errorf("the kubelet reads %+v for the driver's volumes", refs.Volumes)
	}
	if len(refs.Containers) != 1 || len(refs.Containers[0].SubPaths) != 1 || refs.Containers[0].SubPaths[0].Volume != "atomic" {
		t.Errorf("containers %+v, want the subPath of the atomic volume alone", refs.Containers)
	}
}

func TestParseDriverAttributesSaysEveryProblem(t *testing.T) {
	_, problems := ParseDriverAttributes(map[string]string{AttrDefaultMode: "9", AttrUpdates: "sometimes", "colour": "blue"})
	got := strings.Join(problems, "\n")
	for _, want := range []string{`unknown attribute "colour"`, `"configMap" is required`, "want an octal mode", "want atomic (the default) or inPlace"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
}
