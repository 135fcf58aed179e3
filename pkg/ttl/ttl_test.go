package ttl

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReader(t *testing.T) {
	annotated := func(value string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{Annotation: value}}}
	}
	tests := []struct {
		name string
		node *corev1.Node
		err  error
		want time.Duration
	}{
		{"annotation in seconds", annotated("300"), nil, 300 * time.Second},
		{"zero is a real TTL of zero", annotated("0"), nil, 0},
		{"missing annotation", &corev1.Node{}, nil, DefaultTTL},
		{"unparsable", annotated("5m"), nil, DefaultTTL},
		{"negative, as the kubelet reads it", annotated("-15"), nil, -15 * time.Second},
		{"empty", annotated(""), nil, DefaultTTL},
		{"node not known", nil, errors.New("node \"n\" not found"), DefaultTTL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Reader(func() (*corev1.Node, error) { return tt.node, tt.err })()
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// The annotation is read on every call: a change by the TTL controller
// applies at the next freshness check.
func TestReaderFollowsChanges(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{Annotation: "15"}}}
	read := Reader(func() (*corev1.Node, error) { return node, nil })
	if got := read(); got != 15*time.Second {
		t.Fatalf("got %v, want 15s", got)
	}
	node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{Annotation: "30"}}}
	if got := read(); got != 30*time.Second {
		t.Fatalf("after change: got %v, want 30s", got)
	}
}

// FromAnnotations says why there is no TTL, for whoever reports it
// (analyze's notes); OrDefault turns that into the kubelet's default.
func TestFromAnnotations(t *testing.T) {
	for _, tt := range []struct {
		annotations map[string]string
		want        time.Duration
		reason      string
	}{
		{map[string]string{Annotation: "30"}, 30 * time.Second, ""},
		{map[string]string{Annotation: "-1"}, -time.Second, ""},
		{nil, DefaultTTL, "no " + Annotation + " annotation"},
		{map[string]string{Annotation: "1m"}, DefaultTTL, "not a whole number of seconds"},
	} {
		d, err := FromAnnotations(tt.annotations)
		if got := OrDefault(d, err); got != tt.want {
			t.Errorf("%v: TTL %s, want %s", tt.annotations, got, tt.want)
		}
		if (err == nil) != (tt.reason == "") || (err != nil && !strings.Contains(err.Error(), tt.reason)) {
			t.Errorf("%v: error %v, want one saying %q", tt.annotations, err, tt.reason)
		}
	}
}
