package main

import (
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/kubernetes/pkg/kubelet"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	containertest "k8s.io/kubernetes/pkg/kubelet/container/testing"
	probetest "k8s.io/kubernetes/pkg/kubelet/prober/testing"
	kubeletutil "k8s.io/kubernetes/pkg/kubelet/util"
	"k8s.io/kubernetes/pkg/util/oom"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	"k8s.io/kubernetes/pkg/volume/util/subpath"
	"k8s.io/mount-utils"
)

// dependencies are what the kubelet runs on instead of a host, the same in
// every release: the fake runtime, stub cgroups and cAdvisor, a fake
// mounter (volumes are plain directories), no probes, and no OOM watcher.
// The release's own file adds what differs.
func dependencies(node string, client, heartbeatClient *clientset.Clientset, runtime internalapi.RuntimeService, images internalapi.ImageManagerService) *kubelet.Dependencies {
	return &kubelet.Dependencies{
		KubeClient:               client,
		HeartbeatClient:          heartbeatClient,
		ProbeManager:             probetest.FakeManager{},
		RemoteRuntimeService:     runtime,
		RemoteImageService:       images,
		CAdvisorInterface:        &cadvisortest.Fake{NodeName: node},
		OSInterface:              &containertest.FakeOS{},
		ContainerManager:         cm.NewStubContainerManager(),
		VolumePlugins:            volumePlugins(),
		OOMAdjuster:              oom.NewFakeOOMAdjuster(),
		Mounter:                  mount.NewFakeMounter(nil),
		Subpather:                &subpath.FakeSubpath{},
		HostUtil:                 hostutil.NewFakeHostUtil(nil),
		PodStartupLatencyTracker: kubeletutil.NewPodStartupLatencyTracker(),
		// The real recorder reads /dev/kmsg for OOM events.
		Recorder: &record.FakeRecorder{},
	}
}
