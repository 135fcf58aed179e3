package main

import (
	v1 "k8s.io/api/core/v1"
	clientset "k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
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
// Events are the kubelet's own: a recorder whose broadcaster posts them
// through eventClient, which has its own rate limit (--event-qps,
// --event-burst), as the kubelet's server sets them up. The release's own
// file adds what differs.
func dependencies(node string, client, heartbeatClient, eventClient *clientset.Clientset, runtime internalapi.RuntimeService, images internalapi.ImageManagerService) *kubelet.Dependencies {
	broadcaster := record.NewBroadcaster()
	broadcaster.StartStructuredLogging(3)
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: eventClient.CoreV1().Events("")})
	return &kubelet.Dependencies{
		KubeClient:               client,
		HeartbeatClient:          heartbeatClient,
		EventClient:              eventClient.CoreV1(),
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
		Recorder:                 broadcaster.NewRecorder(legacyscheme.Scheme, v1.EventSource{Component: "kubelet", Host: node}),
	}
}
