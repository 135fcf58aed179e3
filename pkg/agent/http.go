package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nodeagent-io/nodeagent/internal/profiling"
)

// healthyWithin is how recently the pod workers' 1 s sync loop must have
// ticked for /healthz to pass; a wedged loop means no pod is resynced.
const healthyWithin = 30 * time.Second

// Endpoints are the HTTP endpoints of a node process, the agent's or the
// CSI driver's:
//
//	/metrics        Prometheus metrics (nodeagent_*)
//	/healthz        200 while Healthy says nil, 500 with its error
//	/readyz         200 once Ready says nil, 503 with its error
//	/debug/volumes  what Volumes returns, as JSON (read-only)
//	/debug/pprof/   Go's profiles (net/http/pprof), with Profiling only
type Endpoints struct {
	Registry  *prometheus.Registry
	Healthy   func() error // nil: always healthy
	Ready     func() error
	Volumes   func() any
	Profiling bool
}

// Handler serves e.
func (e Endpoints) Handler() http.Handler {
	mux := http.NewServeMux()
	if e.Profiling {
		profiling.Handle(mux)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(e.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", check(e.Healthy, http.StatusInternalServerError))
	mux.HandleFunc("/readyz", check(e.Ready, http.StatusServiceUnavailable))
	mux.HandleFunc("/debug/volumes", ReadOnlyJSON(e.Volumes))
	return mux
}

// check answers "ok" while probe says nil, and code with its error.
func check(probe func() error, code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if probe != nil {
			if err := probe(); err != nil {
				http.Error(w, err.Error(), code)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	}
}

// Handler serves the agent's HTTP endpoints (Endpoints): healthy while
// the sync loop has ticked within 30 s, ready once the pod and node
// informers have synced.
func (a *Agent) Handler() http.Handler {
	return Endpoints{
		Registry:  a.Metrics.Registry,
		Profiling: a.cfg.Profiling,
		Healthy: func() error {
			last := a.workers.LastTick()
			if last.IsZero() {
				last = a.startTime // not ticked yet: give it the grace period from start
			}
			if age := time.Since(last); age > healthyWithin {
				return fmt.Errorf("sync loop last ran %s ago", age.Round(time.Second))
			}
			return nil
		},
		Ready: func() error {
			if !a.Ready() {
				return errors.New("informers not synced")
			}
			return nil
		},
		Volumes: func() any {
			return map[string]any{
				"node":         a.cfg.NodeName,
				"strategy":     a.cfg.Strategy,
				"invalidation": a.cfg.Invalidation,
				"ttlSeconds":   a.ttl().Seconds(),
				"volumes":      a.Volumes(),
			}
		},
	}.Handler()
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
