package analyze

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// A volume that asks for its files' owner is a finding on a node whose
// kubelet does not set owners: before v1.37, v1.37 without its gate, v1.38
// with the gate turned off; not on v1.37 with it on, nor v1.38.
func TestOwnerIgnored(t *testing.T) {
	user := int64(1000)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: corev1.PodSpec{NodeName: "node",
		Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}, {Name: "plain", MountPath: "/p"}}}},
		Volumes: []corev1.Volume{
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", Items: []corev1.KeyToPath{{Key: "tls.key", Path: "tls.key", User: &user}}}}},
			{Name: "plain", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		}}}
	for _, tc := range []struct {
		version string
		gates   map[string]bool
		want    bool
	}{
		{"v1.36.3", nil, true},
		{"v1.37.2", nil, true},
		{"v1.37.2", map[string]bool{"AtomicWriteVolumeUserFields": true}, false},
		{"v1.38.0", nil, false},
		{"v1.38.0", map[string]bool{"AtomicWriteVolumeUserFields": false}, true},
	} {
		t.Run(fmt.Sprint(tc.version, tc.gates), func(t *testing.T) {
			c := oneNode(tc.version, model.StrategyWatch, time.Minute, 0)
			c.Inventory.Pods = []inventory.PodInfo{inventory.PodInfoOf(pod)}
			s := c.Settings["node"]
			s.FeatureGates = tc.gates
			c.Settings["node"] = s
			var got []Finding
			for _, f := range c.findings() {
				if f.Type == OwnerIgnored {
					got = append(got, f)
				}
			}
			switch {
			case tc.want && (len(got) != 1 || got[0].Object.Name != "tls" || got[0].Object.Kind != model.Secret):
				t.Errorf("findings %+v, want one for volume tls (Secret tls)", got)
			case !tc.want && len(got) != 0:
				t.Errorf("findings %+v, want none: the kubelet sets owners", got)
			}
		})
	}
	if owned := podrefs.Of(pod).OwnedVolumes; len(owned) != 1 || owned[0].Fields[0] != "secret.items[0].user" {
		t.Errorf("owned volumes %+v, want tls with secret.items[0].user", owned)
	}
}
