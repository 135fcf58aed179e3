package live

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// A pod's driver volume on a node where the driver is registered is
// served; once the node's CSINode no longer lists the driver (its pod gone,
// the driver uninstalled) the volume is a driverVolumeFailing finding, and
// back to served when it returns.
func TestAnalyzerSeesTheDriverGo(t *testing.T) {
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: storagev1.CSINodeSpec{
		Drivers: []storagev1.CSINodeDriver{{Name: podrefs.DriverName, NodeID: "n1"}}}}
	pod := podReading("web", "n1", "cfg", "env")
	pod.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: podrefs.DriverName,
		VolumeAttributes: map[string]string{podrefs.AttrConfigMap: "cfg"}}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cfg"}}
	client := fake.NewClientset(node("n1"), pod, cm, csiNode)
	a := startAnalyzer(t, client)
	failing := func() int {
		n := 0
		for _, f := range a.Report().Findings {
			if f.Type == analyze.DriverVolumeFailing {
				n++
			}
		}
		return n
	}
	if n := failing(); n != 0 {
		t.Fatalf("%d driverVolumeFailing findings with the driver registered, want none", n)
	}
	csiNodes := client.StorageV1().CSINodes()
	if err := csiNodes.Delete(context.Background(), "n1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "a finding for the volume nothing serves", func() bool { return failing() == 1 })
	if d := a.Report().Driver; d == nil || d.Failing != 1 {
		t.Errorf("driver section %+v, want its volume failing", d)
	}
	if _, err := csiNodes.Create(context.Background(), csiNode, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the finding gone with the driver back", func() bool { return failing() == 0 })
}
