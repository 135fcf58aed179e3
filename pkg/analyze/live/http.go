package live

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the Analyzer's endpoints:
//
//	/report   the current report: analyze -o json's, with computedAt
//	          (503 before the first)
//	/metrics  Prometheus metrics: the current report's, and registry's
//	          (which holds the Analyzer's Collector)
//	/healthz  200 while the process serves
//	/readyz   200 once the first report is computed
func (a *Analyzer) Handler(registry *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{registry, a.reports}, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if a.Report() == nil {
			http.Error(w, "no report yet: the informers are listing the cluster", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/report", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		report := a.Report()
		if report == nil {
			http.Error(w, "no report yet: the informers are listing the cluster", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(report)
	})
	return mux
}
