//go:build !refkubelet_v1_28

package main

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/component-base/configz"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletserver "k8s.io/kubernetes/pkg/kubelet/server"
	kubeletutil "k8s.io/kubernetes/pkg/kubelet/util"
)

// startKubelet serves a fake CRI runtime in this process and starts the
// kubelet on it. stop ends the fake runtime, removing its socket.
func startKubelet(ctx context.Context, server *options.KubeletServer, client, heartbeatClient, eventClient *clientset.Clientset) (stop func(), err error) {
	server.PodLogsDir = server.RootDirectory + "/pod-logs"
	endpoint, err := fakeremote.GenerateEndpoint()
	if err != nil {
		return nil, fmt.Errorf("choosing the fake runtime's endpoint: %w", err)
	}
	fakeRuntime := fakeremote.NewFakeRemoteRuntime()
	if err := fakeRuntime.Start(endpoint); err != nil {
		return nil, fmt.Errorf("starting the fake runtime: %w", err)
	}
	runtimeService, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(15 * time.Second).
		WithTracerProvider(noop.NewTracerProvider()).WithUseStreaming(false).Build(ctx)
	if err != nil {
		fakeRuntime.Stop()
		return nil, fmt.Errorf("connecting to the fake runtime: %w", err)
	}
	deps := dependencies(server.HostnameOverride, client, heartbeatClient, eventClient, runtimeService, fakeRuntime.ImageService)
	if err := secureServer(ctx, server, client, deps); err != nil {
		fakeRuntime.Stop()
		return nil, err
	}
	deps.NodeStartupLatencyTracker = kubeletutil.NewNodeStartupLatencyTracker(klog.FromContext(ctx))
	deps.TracerProvider = noop.NewTracerProvider()
	if err := kubeletapp.RunKubelet(klog.NewContext(ctx, klog.Background()), server, deps); err != nil {
		fakeRuntime.Stop()
		return nil, err
	}
	return fakeRuntime.Stop, nil
}

// initializeTLS is the kubelet's TLS set-up, whose signature differs
// between the releases.
func initializeTLS(ctx context.Context, s *options.KubeletServer) (*kubeletserver.TLSOptions, error) {
	return kubeletapp.InitializeTLS(ctx, &s.KubeletFlags, &s.KubeletConfiguration)
}

// setConfigz sets the /configz entry; from v1.33 the entry is a typed
// object that carries its apiVersion and kind, as the kubelet's does.
func setConfigz(entry *configz.Config, versioned *kubeletconfigv1beta1.KubeletConfiguration) error {
	versioned.GetObjectKind().SetGroupVersionKind(kubeletconfigv1beta1.SchemeGroupVersion.WithKind("KubeletConfiguration"))
	return entry.Set(versioned)
}
