package csidriver

import (
	"context"
	"sync/atomic"

	"k8s.io/klog/v2"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registrationServer is the kubelet's plugin registration service, served
// by the driver itself instead of by the node-driver-registrar sidecar:
// the kubelet's plugin watcher finds its socket in
// <kubelet root>/plugins_registry/, asks GetInfo, connects to the CSI
// endpoint it names, and reports the outcome with NotifyRegistrationStatus.
type registrationServer struct {
	registerapi.UnimplementedRegistrationServer
	driverName string
	// endpoint is the CSI socket's path as the kubelet sees it.
	endpoint   string
	registered atomic.Bool
	logger     klog.Logger
}

func (s *registrationServer) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              s.driverName,
		Endpoint:          s.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (s *registrationServer) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	s.registered.Store(st.PluginRegistered)
	if st.PluginRegistered {
		s.logger.Info("Registered with the kubelet", "driver", s.driverName, "endpoint", s.endpoint)
	} else {
		s.logger.Error(nil, "The kubelet refused the registration", "driver", s.driverName, "error", st.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
