package csidriver

import (
	"context"
	"testing"

	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// The kubelet's plugin watcher learns a CSI plugin, its name and its
// endpoint, and the driver learns whether it was accepted.
func TestRegistration(t *testing.T) {
	t.Parallel()
	s := &registrationServer{driverName: DefaultDriverName, endpoint: "/var/lib/kubelet/plugins/x/csi.sock", logger: klog.Background()}
	info, err := s.GetInfo(context.Background(), &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registerapi.CSIPlugin || info.Name != DefaultDriverName || info.Endpoint != s.endpoint || len(info.SupportedVersions) == 0 {
		t.Errorf("info %+v", info)
	}
	for _, accepted := range []bool{false, true, false} {
		if _, err := s.NotifyRegistrationStatus(context.Background(), &registerapi.RegistrationStatus{PluginRegistered: accepted, Error: "refused"}); err != nil {
			t.Fatal(err)
		}
		if s.registered.Load() != accepted {
			t.Errorf("after a status of %v, registered is %v", accepted, s.registered.Load())
		}
	}
}
