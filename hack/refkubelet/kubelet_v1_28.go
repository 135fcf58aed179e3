//go:build refkubelet_v1_28

package main

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	containertest "k8s.io/kubernetes/pkg/kubelet/container/testing"
	"k8s.io/kubernetes/pkg/kubelet/cri/remote"
	fakeremote "k8s.io/kubernetes/pkg/kubelet/cri/remote/fake"
	probetest "k8s.io/kubernetes/pkg/kubelet/prober/testing"
	kubeletutil "k8s.io/kubernetes/pkg/kubelet/util"
	"k8s.io/kubernetes/pkg/util/oom"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/kubernetes/pkg/volume/util/subpath"
	"k8s.io/mount-utils"
)

// startKubelet serves a fake CRI runtime in this process and starts the
// kubelet on it. stop ends the fake runtime, removing its socket. v1.28 differs from v1.36 in where the fake runtime lives,
// in the runtime client's and RunKubelet's signatures, and in having no
// node startup tracker and no pod logs directory setting.
func startKubelet(ctx context.Context, server *options.KubeletServer, client, heartbeatClient *clientset.Clientset) (stop func(), err error) {
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
	deps := &kubelet.Dependencies{
		KubeClient:               client,
		HeartbeatClient:          heartbeatClient,
		ProbeManager:             probetest.FakeManager{},
		RemoteRuntimeService:     runtimeService,
		RemoteImageService:       fakeRuntime.ImageService,
		CAdvisorInterface:        &cadvisortest.Fake{NodeName: server.HostnameOverride},
		OSInterface:              &containertest.FakeOS{},
		ContainerManager:         cm.NewStubContainerManager(),
		VolumePlugins:            volumePlugins(),
		OOMAdjuster:              oom.NewFakeOOMAdjuster(),
		Mounter:                  mount.NewFakeMounter(nil),
		Subpather:                &subpath.FakeSubpath{},
		HostUtil:                 hostutil.NewFakeHostUtil(nil),
		PodStartupLatencyTracker: kubeletutil.NewPodStartupLatencyTracker(),
		TracerProvider:           tracing,
		// The real recorder reads /dev/kmsg for OOM events.
		Recorder: &record.FakeRecorder{},
	}
	if err := kubeletapp.RunKubelet(server, deps, false); err != nil {
		fakeRuntime.Stop()
		return nil, err
	}
	return fakeRuntime.Stop, nil
}
