package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
	"github.com/nodeagent-io/nodeagent/pkg/csidriver"
)

// The driver's endpoints: alive at once, ready only once the recorded
// volumes are served again (and, when registering, the kubelet accepted
// it), its volumes as read-only JSON.
func TestCSIHandler(t *testing.T) {
	driver, err := csidriver.New(csidriver.Options{NodeName: "n", Endpoint: "/unused.sock", StateDir: t.TempDir(), ReadAs: csidriver.ReadAsDriver,
		ConfigMaps: func(string) configmapcache.ConfigMapClient { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	h := csiHandler(driver, prometheus.NewRegistry(), true, false)
	for _, c := range []struct {
		method, path string
		code         int
		says         string
	}{
		{http.MethodGet, "/healthz", http.StatusOK, "ok"},
		{http.MethodGet, "/readyz", http.StatusServiceUnavailable, "restoring the published volumes"},
		{http.MethodGet, "/debug/volumes", http.StatusOK, `"configMapWatches": 0`},
		{http.MethodPost, "/debug/volumes", http.StatusMethodNotAllowed, "read-only"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.says) {
			t.Errorf("%s %s: %d %q, want %d saying %q", c.method, c.path, rec.Code, rec.Body.String(), c.code, c.says)
		}
	}
}
