package updateprobe

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestGenerationRoundTrip(t *testing.T) {
	value := generationValue("shared-0001", "watch", 42)
	if g, ok := parseGeneration([]byte(value), "watch"); !ok || g != 42 {
		t.Errorf("parseGeneration(%q) = %d, %v; want 42", value, g, ok)
	}
	// Another phase's content, and the run's initial content, are
	// generation 0 of this phase: an update never looks like it landed
	// because an earlier phase left the same bytes.
	if g, ok := parseGeneration([]byte(value), "every-sync"); !ok || g != 0 {
		t.Errorf("another phase's content = %d, %v; want 0, true", g, ok)
	}
	if g, ok := parseGeneration([]byte("name: shared-0001\n"), "watch"); !ok || g != 0 {
		t.Errorf("initial content = %d, %v; want 0, true", g, ok)
	}
	if _, ok := parseGeneration([]byte("garbage"), "watch"); ok {
		t.Error("garbage parsed")
	}
}

// A volume that skips generations takes every update up to the one it
// shows, each with its own latency; a repeated event adds nothing.
func TestLatencyProbeSupersededUpdates(t *testing.T) {
	dir := t.TempDir()
	p := &Probe{
		phase:        "every-sync",
		volumes:      map[string][]string{"cm": {dir}},
		sent:         map[string][]time.Time{},
		seen:         map[string]int{},
		dirConfigMap: map[string]string{dir: "cm"},
	}
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	p.sent["cm"] = []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)}
	write := func(g int) {
		if err := os.WriteFile(filepath.Join(dir, latencyKey), []byte(generationValue("cm", "every-sync", g)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(2)
	p.landed(dir, t0.Add(3*time.Second))
	p.landed(dir, t0.Add(4*time.Second)) // the same generation again
	if got := p.Unseen(); got != 1 {
		t.Errorf("unseen = %d, want 1 (generation 3)", got)
	}
	write(3)
	p.landed(dir, t0.Add(5*time.Second))
	r := p.Result()
	if r.Updates != 3 || r.Samples != 3 || p.Unseen() != 0 {
		t.Fatalf("result %+v, unseen %d; want 3 updates, 3 samples, none unseen", r, p.Unseen())
	}
	if want := []float64{2, 3, 3}; !equalFloats(r.SampleSeconds, want) {
		t.Errorf("latencies %v, want %v", r.SampleSeconds, want)
	}
	if r.P50Seconds != 3 || r.MaxSeconds != 3 {
		t.Errorf("p50 %v max %v, want 3 and 3", r.P50Seconds, r.MaxSeconds)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}
