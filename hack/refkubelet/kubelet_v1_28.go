//go:build refkubelet_v1_28

package main

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/component-base/configz"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet/cri/remote"
	fakeremote "k8s.io/kubernetes/pkg/kubelet/cri/remote/fake"
	kubeletserver "k8s.io/kubernetes/pkg/kubelet/server"
)

// startKubelet serves a fake CRI runtime in this process and starts the
// kubelet on it; stop ends the fake runtime, removing its socket. v1.28
// differs from v1.37 in where the fake runtime lives, in the runtime
// client's and RunKubelet's signatures, and in having no node startup
// tracker and no pod logs directory setting.
func startKubelet(ctx context.Context, server *options.KubeletServer, client, heartbeatClient, eventClient *clientset.Clientset) (stop func(), err error) {
	endpoint, err := fakeremote.GenerateEndpoint()
	if err != nil {
		return nil, fmt.Errorf("choosing the fake runtime's endpoint: %w", err)
	}
	fakeRuntime := fakeremote.NewFakeRemoteRuntime()
	if err := fakeRuntime.Start(endpoint); err != nil {
		return nil, fmt.Errorf("starting the fake runtime: %w", err)
	}
	tracing := trace.NewNoopTracerProvider()
	runtimeService, err := remote.NewRemoteRuntimeService(endpoint, 15*time.Second, tracing)
	if err != nil {
		fakeRuntime.Stop()
		return nil, fmt.Errorf("connecting to the fake runtime: %w", err)
	}
	deps := dependencies(server.HostnameOverride, client, heartbeatClient, eventClient, runtimeService, fakeRuntime.ImageService)
	if err := secureServer(ctx, server, client, deps); err != nil {
		fakeRuntime.Stop()
		return nil, err
	}
	deps.TracerProvider = tracing
	if err := kubeletapp.RunKubelet(server, deps, false); err != nil {
		fakeRuntime.Stop()
		return nil, err
	}
	return fakeRuntime.Stop, nil
}

// initializeTLS is the kubelet's TLS set-up, whose signature differs
// between the releases.
func initializeTLS(ctx context.Context, s *options.KubeletServer) (*kubeletserver.TLSOptions, error) {
	return kubeletapp.InitializeTLS(&s.KubeletFlags, &s.KubeletConfiguration)
}

// setConfigz sets the /configz entry, which v1.28 takes as any value
// and serves without apiVersion or kind.
func setConfigz(entry *configz.Config, versioned *kubeletconfigv1beta1.KubeletConfiguration) error {
	entry.Set(*versioned)
	return nil
}
