package live

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Two pods' entries share one copy of each name they repeat (a decoded
// pod has its own), and names forgets what it holds at maxNames.
func TestPodEntriesShareNames(t *testing.T) {
	transform := podEntries(&names{})
	pod := func(name string) *podEntry {
		// strings.Clone: each pod its own copies, as decoding gives.
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: strings.Clone("team-a"), Name: name},
			Spec: corev1.PodSpec{NodeName: strings.Clone("node-1"),
				Volumes: []corev1.Volume{{Name: strings.Clone("config"), VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: strings.Clone("app-config")}}}}},
				Containers: []corev1.Container{{Name: strings.Clone("app"), VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}}}}}}
		e, err := transform(p)
		if err != nil {
			t.Fatal(err)
		}
		return e.(*podEntry)
	}
	a, b := pod("a"), pod("b")
	same := func(what, x, y string) {
		if x != y || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q and %q are two copies", what, x, y)
		}
	}
	same("namespace", a.Info.Namespace, b.Info.Namespace)
	same("the key's namespace", a.namespace, b.Info.Namespace)
	same("node", a.Info.Node, b.Info.Node)
	same("volume", a.Info.Refs.Volumes[0].Name, b.Info.Refs.Volumes[0].Name)
	same("ConfigMap", a.Info.Refs.Volumes[0].Reads[0].Name, b.Info.Refs.Volumes[0].Reads[0].Name)
	same("unconverted ConfigMap", a.Info.Unconverted[0].ConfigMap, b.Info.Refs.Volumes[0].Reads[0].Name)

	var n names
	for i := range maxNames + 1 {
		n.of(fmt.Sprint(i))
	}
	if len(n.known) != 1 {
		t.Errorf("names holds %d after %d; want it to forget at %d", len(n.known), maxNames+1, maxNames)
	}
}
