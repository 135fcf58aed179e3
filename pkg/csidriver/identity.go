package csidriver

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/nodeagent-io/nodeagent/internal/version"
)

// identityServer is the CSI Identity service: the driver's name and
// version, no plugin capability (no controller service: an inline
// ephemeral volume needs none), and readiness.
type identityServer struct {
	csi.UnimplementedIdentityServer
	name  string
	ready func() bool
}

func (s *identityServer) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: s.name, VendorVersion: version.Get().Version}, nil
}

func (s *identityServer) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

// Probe says ready once the volumes published before a restart are the
// volume core's again.
func (s *identityServer) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(s.ready())}, nil
}
