package podrefs

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// A projected volume reads its configMap and secret sources' objects,
// each of its kind; its secret sources are left out unless Secrets are
// served, its token source always.
func TestKeptVolumeSources(t *testing.T) {
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	v := KeptVolume{Name: "p", Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("b")}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: ref("tls")}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("a")}},
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
	}}}
	if got := fmt.Sprint(v.ConfigMapNames(), v.SecretNames()); got != "[a b] [tls]" {
		t.Errorf("names %s, want [a b] [tls]", got)
	}
	for _, c := range []struct {
		kind model.Kind
		name string
		want bool
	}{{model.ConfigMap, "a", true}, {model.Secret, "tls", true}, {model.Secret, "a", false}, {model.ConfigMap, "tls", false}} {
		if got := v.Reads(c.kind, c.name); got != c.want {
			t.Errorf("Reads(%s, %s) = %v, want %v", c.kind, c.name, got, c.want)
		}
	}
	if got := fmt.Sprint(v.NotServed(false), v.NotServed(true)); got != "[secret tls serviceAccountToken token] [serviceAccountToken token]" {
		t.Errorf("NotServed without and with Secrets: %s", got)
	}
	secret := KeptVolume{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}
	if !secret.Reads(model.Secret, "tls") || secret.Reads(model.ConfigMap, "tls") || fmt.Sprint(secret.SecretNames()) != "[tls]" {
		t.Errorf("a Secret volume: Reads and SecretNames do not name its Secret alone")
	}
}

// Reads allocates nothing: every watch event asks it of every volume of
// the object's namespace.
func TestKeptVolumeReadsAllocatesNothing(t *testing.T) {
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	v := KeptVolume{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("a")}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: ref("tls")}}}}}
	if allocs := testing.AllocsPerRun(100, func() { v.Reads(model.Secret, "tls") }); allocs != 0 {
		t.Errorf("Reads allocates %v times a call", allocs)
	}
}
