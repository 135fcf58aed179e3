package live

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
)

// EventSource is the component the events name as their source.
const EventSource = "nodeagent-analyze"

// Events posts a Warning event on the pod of each finding that appears
// while the analyzer runs: analyze always on's one write, off unless asked
// for. The findings of the first report are the baseline, not news: an
// analyzer that restarts does not post again what it posted before, and
// one started on a large cluster does not post its every finding at once
// (the report and the metrics have them). At most MaxPerReport events
// follow one report; the others are counted as dropped.
type Events struct {
	recorder     record.EventRecorder
	maxPerReport int
	// previous are the last report's findings; nil before the first.
	previous map[findingKey]bool
	// observedLen and observedFirst are the last findings slice seen.
	observedLen   int
	observedFirst *analyze.Finding
	posted        prometheus.Counter
	dropped       prometheus.Counter
}

// findingKey is a finding's identity across reports.
type findingKey struct {
	typ                       analyze.FindingType
	pod, container, kind, obj string
}

// NewEvents returns Events that post through recorder.
func NewEvents(recorder record.EventRecorder, maxPerReport int) *Events {
	return &Events{
		recorder:     recorder,
		maxPerReport: maxPerReport,
		posted: prometheus.NewCounter(prometheus.CounterOpts{Name: "nodeagent_analyze_events_posted_total",
			Help: "Events posted on pods for findings that appeared while analyze ran (--events)."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "nodeagent_analyze_events_dropped_total",
			Help: "New findings left without an event because one report had more than --max-events-per-report."}),
	}
}

// NewRecorder is an event recorder that posts core events through client,
// as the kubelet's does (repeats of one event become one, counted), until
// stop is called.
func NewRecorder(ctx context.Context, client kubernetes.Interface) (recorder record.EventRecorder, stop func()) {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventSource}), broadcaster.Shutdown
}

// Collectors are the counters of posted and dropped events.
func (e *Events) Collectors() []prometheus.Collector {
	return []prometheus.Collector{e.posted, e.dropped}
}

// observe posts an event for each of findings that the previous report
// did not have.
func (e *Events) observe(ctx context.Context, findings []analyze.Finding) {
	if e.previous != nil && len(findings) > 0 && len(findings) == e.observedLen && &findings[0] == e.observedFirst {
		return // the report's findings are the last one's (analyze keeps the slice where none changed)
	}
	if len(findings) > 0 {
		e.observedLen, e.observedFirst = len(findings), &findings[0]
	}
	current := make(map[findingKey]bool, len(findings))
	var fresh []analyze.Finding
	for _, f := range findings {
		k := findingKey{f.Type, f.Pod, f.Container, string(f.Object.Kind), f.Object.Namespace + "/" + f.Object.Name}
		if current[k] {
			continue
		}
		current[k] = true
		if e.previous != nil && !e.previous[k] {
			fresh = append(fresh, f)
		}
	}
	e.previous = current
	for i, f := range fresh {
		if i == e.maxPerReport {
			e.dropped.Add(float64(len(fresh) - i))
			klog.FromContext(ctx).Info("New findings left without an event", "dropped", len(fresh)-i, "maxPerReport", e.maxPerReport)
			return
		}
		namespace, name, _ := strings.Cut(f.Pod, "/")
		pod := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: namespace, Name: name}
		if f.Container != "" {
			pod.FieldPath = fmt.Sprintf("spec.containers{%s}", f.Container)
		}
		e.recorder.Event(pod, corev1.EventTypeWarning, eventReason(f.Type), f.Detail+": "+f.Action)
		e.posted.Inc()
	}
}

// eventReason is a finding type as an event's reason: UpperCamelCase, as
// the kubelet's reasons are.
func eventReason(t analyze.FindingType) string {
	s := string(t)
	if s == "" {
		return "Finding"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
