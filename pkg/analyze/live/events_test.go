package live

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
)

// The first report is the baseline; each later one posts an event for the
// findings the one before did not have, at most maxPerReport, and counts
// the rest.
func TestEventsPostNewFindings(t *testing.T) {
	finding := func(pod string) analyze.Finding {
		return analyze.Finding{Type: analyze.StaleSinceStart, Pod: "team/" + pod, Container: "app",
			Object: analyze.ObjectRef{Kind: "ConfigMap", Namespace: "team", Name: "settings"},
			Detail: "started before ConfigMap team/settings last changed", Action: "restart the container"}
	}
	recorder := &eventsSeen{}
	events := NewEvents(recorder, 2)
	ctx := context.Background()
	posted := func() []string {
		out := recorder.events
		recorder.events = nil
		return out
	}

	events.observe(ctx, []analyze.Finding{finding("a"), finding("b")})
	if got := posted(); len(got) != 0 {
		t.Errorf("the first report posted %q; want nothing (the baseline)", got)
	}
	events.observe(ctx, []analyze.Finding{finding("a"), finding("b"), finding("c"), finding("c")})
	got := posted()
	if want := "Pod team/c spec.containers{app}: Warning StaleSinceStart started before ConfigMap team/settings last changed: restart the container"; len(got) != 1 || got[0] != want {
		t.Errorf("a new finding posted %q; want one Warning event on pod c's container app", got)
	}
	events.observe(ctx, []analyze.Finding{finding("a")})
	if got := posted(); len(got) != 0 {
		t.Errorf("findings that went posted %q", got)
	}
	events.observe(ctx, []analyze.Finding{finding("a"), finding("b"), finding("c"), finding("d"), finding("e")})
	if got := posted(); len(got) != 2 {
		t.Errorf("four new findings, at most 2 a report: posted %q", got)
	}
	if posted, dropped := testutil.ToFloat64(events.posted), testutil.ToFloat64(events.dropped); posted != 3 || dropped != 2 {
		t.Errorf("counted %g posted and %g dropped; want 3 and 2", posted, dropped)
	}
}

// eventsSeen records each event as "Kind namespace/name fieldPath: type
// reason message".
type eventsSeen struct{ events []string }

var _ record.EventRecorder = &eventsSeen{}

func (r *eventsSeen) Event(object runtime.Object, eventtype, reason, message string) {
	ref := object.(*corev1.ObjectReference)
	r.events = append(r.events, fmt.Sprintf("%s %s/%s %s: %s %s %s", ref.Kind, ref.Namespace, ref.Name, ref.FieldPath, eventtype, reason, message))
}

func (r *eventsSeen) Eventf(object runtime.Object, eventtype, reason, format string, args ...interface{}) {
	r.Event(object, eventtype, reason, fmt.Sprintf(format, args...))
}

func (r *eventsSeen) AnnotatedEventf(object runtime.Object, _ map[string]string, eventtype, reason, format string, args ...interface{}) {
	r.Eventf(object, eventtype, reason, format, args...)
}
