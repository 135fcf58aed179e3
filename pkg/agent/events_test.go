package agent

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// Agents given one broadcaster post through it, each as its own node, and
// make no events client of their own.
func TestSharedEvents(t *testing.T) {
	broadcaster := record.NewBroadcaster()
	defer broadcaster.Shutdown()
	seen := make(chan *corev1.Event, 2)
	broadcaster.StartEventWatcher(func(e *corev1.Event) { seen <- e })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for _, node := range []string{"node-a", "node-b"} {
		cfg := DefaultConfig()
		cfg.NodeName, cfg.RootDir = node, t.TempDir()
		a, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, cfg, SharedEvents(broadcaster))
		if err != nil {
			t.Fatal(err)
		}
		if a.eventClient != nil {
			t.Errorf("%s: an agent with shared events made an events client of its own", node)
		}
		a.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "from %s", node)
		select {
		case e := <-seen:
			if e.Source.Host != node || e.Message != "from "+node {
				t.Errorf("event %q from host %q, want it from %s", e.Message, e.Source.Host, node)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no event reached the shared broadcaster", node)
		}
	}
}
