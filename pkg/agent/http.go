package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nodeagent-io/nodeagent/internal/profiling"
)

// healthyWithin is how recently the pod workers' 1 s sync loop must have
// ticked for /healthz to pass; a wedged loop means no pod is resynced.
const healthyWithin = 30 * time.Second

// Handler serves the agent's HTTP endpoints:
//
//	/metrics        Prometheus metrics (nodeagent_*)
//	/healthz        200 while the sync loop runs; 500 when it has not ticked for 30 s
//	/readyz         200 once the pod and node informers have synced
//	/debug/volumes  the volumes on disk, as JSON (read-only)
//	/debug/pprof/   Go's profiles (net/http/pprof), with --profiling only
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	if a.cfg.Profiling {
		profiling.Handle(mux)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(a.Metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		last := a.workers.LastTick()
		if last.IsZero() {
			last = a.startTime // not ticked yet: give it the grace period from start
		}
		if age := time.Since(last); age > healthyWithin {
			http.Error(w, fmt.Sprintf("sync loop last ran %s ago", age.Round(time.Second)), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.Ready() {
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/debug/volumes", ReadOnlyJSON(func() any {
		return map[string]any{
			"node":         a.cfg.NodeName,
			"strategy":     a.cfg.Strategy,
			"invalidation": a.cfg.Invalidation,
			"ttlSeconds":   a.ttl().Seconds(),
			"volumes":      a.Volumes(),
		}
	}))
	return mux
}

// ReadOnlyJSON serves what view returns, indented, to GET requests alone:
// the debug endpoints of the agent and of the CSI driver.
func ReadOnlyJSON(view func() any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(view())
	}
}
