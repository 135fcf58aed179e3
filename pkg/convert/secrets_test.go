package convert

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// With Secrets, a secret volume and a projected volume of configMap and
// secret sources move, each to attributes the driver reads back as the
// same source; a service account's token volume stays, named; without
// Secrets both stay.
func TestPlanSecrets(t *testing.T) {
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	mode := func(m int32) *int32 { return &m }
	spec := &corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", DefaultMode: mode(0o400),
				Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}}}}},
			{Name: "both", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("cfg")}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: ref("tls"), Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}}}}},
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("kube-root-ca.crt")}}}}}},
		},
		Containers: []corev1.Container{{Name: "server", VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/etc/tls/tls.crt", SubPath: "tls.crt"}}}},
	}
	decisions := PlanWith(spec, Options{Secrets: true})
	for i, want := range []bool{true, true, false} {
		if d := decisions[i]; d.Converted != want {
			t.Fatalf("volume %s: converted %v (%s), want %v", d.Volume, d.Converted, d.Reason, want)
		}
	}
	tls, both, token := decisions[0], decisions[1], decisions[2]
	if !tls.InPlace || tls.From != "secret" || both.From != "projected" {
		t.Errorf("tls: inPlace %v from %s; both from %s; want inPlace (a subPath user), secret, projected", tls.InPlace, tls.From, both.From)
	}
	if !strings.Contains(token.Reason, "serviceAccountToken") {
		t.Errorf("the token volume's reason %q does not name its serviceAccountToken source", token.Reason)
	}
	parsed, problems := podrefs.ParseDriverAttributes(both.Attributes)
	if len(problems) > 0 || parsed.Projected == nil || !sameProjectedFiles(spec.Volumes[1].Projected, parsed.Projected) {
		t.Errorf("the projected volume's attributes %v read back as %+v (%v)", both.Attributes, parsed.Projected, problems)
	}
	for _, d := range Plan(spec, nil) {
		if d.Converted {
			t.Errorf("without Secrets, volume %s moved", d.Volume)
		}
	}
}
