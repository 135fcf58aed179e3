package compare

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGenerationRoundTrip(t *testing.T) {
	value := generationValue("shared-0001", ModeWatch, 42)
	if g, ok := parseGeneration([]byte(value), ModeWatch); !ok || g != 42 {
		t.Errorf("parseGeneration(%q) = %d, %v; want 42", value, g, ok)
	}
	// Another phase's content, and the run's initial content, are
	// generation 0 of this phase: an update never looks like it landed
	// because an earlier phase left the same bytes.
	if g, ok := parseGeneration([]byte(value), ModeEverySync); !ok || g != 0 {
		t.Errorf("another phase's content = %d, %v; want 0, true", g, ok)
	}
	if g, ok := parseGeneration([]byte("name: shared-0001\n"), ModeWatch); !ok || g != 0 {
		t.Errorf("initial content = %d, %v; want 0, true", g, ok)
	}
	if _, ok := parseGeneration([]byte("garbage"), ModeWatch); ok {
		t.Error("garbage parsed")
	}
}

// A volume that skips generations takes every update up to the one it
// shows, each with its own latency; a repeated event adds nothing.
func TestLatencyProbeSupersededUpdates(t *testing.T) {
	dir := t.TempDir()
	p := &latencyProbe{
		phase:        ModeEverySync,
		volumes:      map[string][]string{"cm": {dir}},
		sent:         map[string][]time.Time{},
		seen:         map[string]int{},
		dirConfigMap: map[string]string{dir: "cm"},
	}
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	p.sent["cm"] = []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)}
	write := func(g int) {
		if err := os.WriteFile(filepath.Join(dir, latencyKey), []byte(generationValue("cm", ModeEverySync, g)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(2)
	p.landed(dir, t0.Add(3*time.Second))
	p.landed(dir, t0.Add(4*time.Second)) // the same generation again
	if got := p.unseen(); got != 1 {
		t.Errorf("unseen = %d, want 1 (generation 3)", got)
	}
	write(3)
	p.landed(dir, t0.Add(5*time.Second))
	r := p.result()
	if r.Updates != 3 || r.Samples != 3 || p.unseen() != 0 {
		t.Fatalf("result %+v, unseen %d; want 3 updates, 3 samples, none unseen", r, p.unseen())
	}
	if want := []float64{2, 3, 3}; !equalFloats(r.seconds, want) {
		t.Errorf("latencies %v, want %v", r.seconds, want)
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

func TestQuantile(t *testing.T) {
	sorted := make([]float64, 100)
	for i := range sorted {
		sorted[i] = float64(i + 1)
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 50}, {0.99, 99}, {1, 100}, {0, 1}} {
		if got := quantile(sorted, c.q); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("quantile of nothing is not 0")
	}
}

// The model against what can be worked out by hand: at the next sync, the
// wait is the forward recurrence time of the sync process, whose mean is
// E[X²]/2E[X]; a TTL-driven cache adds to it, and a TTL of zero does not.
func TestModelLatency(t *testing.T) {
	s := time.Minute
	p50, p99, bound := modelLatency(ModeWatchAtSync, s, 0, 20)
	mean, meanSquare := syncIntervalMoments(s)
	residual := meanSquare / (2 * mean) // 38.3 s
	if p50 < 0.8*residual || p50 > 1.2*residual {
		t.Errorf("watch-at-sync p50 %.1fs, want near the mean forward recurrence %.1fs", p50, residual)
	}
	if p99 > bound || bound != 1.5*60+1+maxRemountDelay {
		t.Errorf("p99 %.1fs, bound %.2fs: want p99 within the bound 91.15s", p99, bound)
	}
	if e50, _, _ := modelLatency(ModeEverySync, s, 25*time.Second, 20); math.Abs(e50-p50) > 0.05*p50 {
		t.Errorf("every-sync p50 %.1fs, want the same as watch-at-sync's %.1fs: both take the update at the next sync", e50, p50)
	}
	f50, f99, fBound := modelLatency(ModeFirstReference, s, 25*time.Second, 20)
	if f50 <= p50 || f99 > fBound || fBound != bound+25 {
		t.Errorf("first-reference p50 %.1fs p99 %.1fs bound %.1fs: want later than at the next sync (%.1fs), within TTL + the sync bound", f50, f99, fBound, p50)
	}
	if z50, _, _ := modelLatency(ModeKubeletV136, s, 0, 20); math.Abs(z50-p50) > 0.05*p50 {
		t.Errorf("first-reference at TTL 0: p50 %.1fs, want the next sync's %.1fs", z50, p50)
	}
}

func TestLatencyReport(t *testing.T) {
	r := &Report{Scenario: ScenarioReport{PodsPerNode: 1000, SyncFrequencySeconds: 60, UpdateRate: 5}, Phases: []PhaseResult{
		{Mode: ModeWatch, Latency: &LatencyResult{Updates: 900, Samples: 18000, P50Seconds: 0.1, P99Seconds: 0.113, MaxSeconds: 0.2, APIWriteP99Seconds: 0.012, ModelP50Seconds: 38, ModelP99Seconds: 88, BoundSeconds: 91.15, seconds: []float64{0.1, 0.113, 0.2}}},
		{Mode: ModeFirstReference},
	}}
	md := r.Markdown()
	for _, want := range []string{"## Update latency", "| watch | 900 | 18000 | 100 ms | 113 ms | 200 ms | 38.0 s | 88.0 s | 91.2 s | 0 | 12 ms |", "latency.svg"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if rows := r.latencyRows(); len(rows) != 2 {
		t.Errorf("%d latency rows, want the header and watch's", len(rows))
	}
	dir := t.TempDir()
	if err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "latency.svg")); err != nil {
		t.Error(err)
	}
}
