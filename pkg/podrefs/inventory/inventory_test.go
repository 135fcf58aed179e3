package inventory

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory/inventorytest"
)

// List keeps the running, scheduled pods that are not terminating, and what analyze needs of each
// object, and takes a refused Secret list as "unknown", not as a failure.
func TestList(t *testing.T) {
	client := inventorytest.FakeCluster()
	inv, err := List(context.Background(), client, "", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Nodes) != 1 || inv.Nodes[0].TTL != 0 || inv.Nodes[0].TTLMissing != "" || len(inv.Pods) != 1 || inv.Pods[0].Name != "running" {
		t.Errorf("nodes %+v, pods %+v; want the node with its TTL and only the running pod", inv.Nodes, inv.Pods)
	}
	if exists, immutable, known := inv.Exists(model.ConfigMap, "ns", "frozen"); !exists || !immutable || !known {
		t.Errorf("ConfigMap frozen: exists %v, immutable %v, known %v", exists, immutable, known)
	}
	if exists, _, _ := inv.Exists(model.Secret, "ns", "other"); exists || !inv.SecretsListed {
		t.Errorf("an unlisted Secret exists (%v), or Secrets were not listed (%v)", exists, inv.SecretsListed)
	}

	client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", nil)
	})
	inv, err = List(context.Background(), client, "", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exists, immutable, known := inv.Exists(model.Secret, "ns", "anything"); inv.SecretsListed || !exists || immutable || known {
		t.Errorf("Secrets forbidden: listed %v; Secret taken as exists %v, immutable %v, known %v; want not listed, exists, mutable, unknown", inv.SecretsListed, exists, immutable, known)
	}

	// A forbidden list analyze cannot do without fails the run, saying
	// which role to bind.
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
	})
	if _, err := List(context.Background(), client, "", 500, nil); err == nil || !strings.Contains(err.Error(), "listing pods") ||
		!strings.Contains(err.Error(), "nodeagent-analyze ClusterRole") {
		t.Errorf("pods forbidden: %v; want an error that names the list and the role to bind", err)
	}
}

// A finished pod's first start is the earliest of its containers', init
// containers' among them, running or ended (the end of the kubelet's
// first sync of it); a pod whose containers never started says none.
func TestFirstStartedAt(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Date(2026, 11, 28, 12, 0, s, 0, time.UTC)) }
	p := &corev1.Pod{Status: corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: at(3), FinishedAt: at(4)}}}},
		ContainerStatuses: []corev1.ContainerStatus{
			{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(5)}}},
			{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
		}}}
	if got := FirstStartedAt(p); !got.Equal(at(3).Time) {
		t.Errorf("FirstStartedAt = %s, want the init container's start %s", got, at(3))
	}
	if got := FinishedPodOf(p).Started; !got.Equal(at(3).Time) {
		t.Errorf("FinishedPodOf(p).Started = %s, want %s", got, at(3))
	}
	p.Status.InitContainerStatuses = nil
	if got := FirstStartedAt(p); !got.Equal(at(5).Time) {
		t.Errorf("without the init container: %s, want the running container's %s", got, at(5))
	}
	if got := FirstStartedAt(&corev1.Pod{}); !got.IsZero() {
		t.Errorf("no container: %s, want zero", got)
	}
}
