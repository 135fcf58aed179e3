package convert

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// A converted volume asks the driver for exactly the files the configMap
// volume asked the kubelet for: the attributes, parsed as the driver
// parses them, give back the ConfigMapVolumeSource.
func TestConvertedVolumesAskForTheSameFiles(t *testing.T) {
	mode := func(m int32) *int32 { return &m }
	yes, no := true, false
	for _, source := range []corev1.ConfigMapVolumeSource{
		{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}},
		{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, DefaultMode: mode(0o400), Optional: &yes},
		{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Optional: &no, Items: []corev1.KeyToPath{
			{Key: "k", Path: "d/k.conf", Mode: mode(0o600)}, {Key: "j", Path: "j"}}},
	} {
		attrs, err := driverAttributes(&source, false)
		if err != nil {
			t.Fatalf("%+v: %v", source, err)
		}
		parsed, problems := podrefs.ParseDriverAttributes(attrs)
		if len(problems) > 0 || parsed.InPlace {
			t.Fatalf("%v: %v, inPlace %v", attrs, problems, parsed.InPlace)
		}
		if parsed.ConfigMap == nil || !sameFiles(&source, parsed.ConfigMap) {
			t.Errorf("%+v became %v, which the driver reads as %+v", source, attrs, parsed.ConfigMap)
		}
	}
	if _, err := driverAttributes(&corev1.ConfigMapVolumeSource{}, false); err == nil {
		t.Error("a configMap volume without a name was converted")
	}
	// The files' owners (KEP-5936) are attributes too: defaultUser its own,
	// items' user in the items, and the driver reads back the same owners.
	user, other := int64(1000), int64(2000)
	owned := corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, DefaultUser: &user,
		Items: []corev1.KeyToPath{{Key: "k", Path: "k"}, {Key: "j", Path: "j", User: &other}}}
	attrs, err := driverAttributes(&owned, false)
	if err != nil || attrs[podrefs.AttrDefaultUser] != "1000" || !strings.Contains(attrs[podrefs.AttrItems], `"user":2000`) {
		t.Fatalf("a volume that sets its files' owners: %v, %v", attrs, err)
	}
	if parsed, problems := podrefs.ParseDriverAttributes(attrs); len(problems) > 0 || parsed.ConfigMap == nil || !sameFiles(&owned, parsed.ConfigMap) {
		t.Errorf("the driver reads the owners back as %+v (%v)", parsed.ConfigMap, problems)
	}
}
