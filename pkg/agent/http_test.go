package agent

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// An agent that was built but whose loops never ran: unhealthy once the
// grace period has passed, never ready, and still able to describe itself.
func TestEndpointsOfAnAgentThatIsNotRunning(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeName, cfg.RootDir = "node-a", t.TempDir()
	a, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}

	a.startTime = time.Now()
	if rec := get("/healthz"); rec.Code != http.StatusOK {
		t.Errorf("/healthz within the grace period: %d", rec.Code)
	}
	a.startTime = time.Now().Add(-time.Minute)
	if rec := get("/healthz"); rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "sync loop last ran") {
		t.Errorf("/healthz with a sync loop that never ran: %d %q", rec.Code, rec.Body.String())
	}
	if rec := get("/readyz"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the informers synced: %d", rec.Code)
	}
	rec := get("/debug/volumes")
	var debug struct {
		Node       string  `json:"node"`
		TTLSeconds float64 `json:"ttlSeconds"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &debug); err != nil || debug.Node != "node-a" || debug.TTLSeconds != 60 {
		t.Errorf("/debug/volumes: %v %q", err, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/debug/volumes", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /debug/volumes: %d, want 405", rec.Code)
	}
	body := get("/metrics").Body.String()
	for _, want := range []string{`nodeagent_info{invalidation="first-reference",strategy="cache"`, `nodeagent_configmap_get_requests_total{resource_version="unset",strategy="cache"} 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Go's profiles are served only with --profiling.
func TestProfilingIsOptIn(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.NodeName, cfg.RootDir, cfg.Profiling = "node-a", t.TempDir(), profiling
		a, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/goroutine?debug=1", nil))
		served := rec.Code == http.StatusOK && strings.Contains(rec.Body.String(), "goroutine profile:")
		if served != profiling {
			t.Errorf("--profiling=%v: /debug/pprof/goroutine answered %d %.40q", profiling, rec.Code, rec.Body.String())
		}
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeName = ""
	cfg.SyncFrequency = 0
	cfg.ContentType = "xml"
	err := cfg.Validate()
	for _, want := range []string{"--node-name", "--sync-frequency", "--kube-api-content-type"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v; want it to name %s", err, want)
		}
	}
}
