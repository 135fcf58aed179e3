package live

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// Handler serves the Analyzer's endpoints:
//
//	/report   the current report: analyze -o json's, with computedAt
//	          (503 before the first)
//	/metrics  Prometheus metrics: the current report's, and registry's
//	          (which holds the Analyzer's Collector)
//	/healthz  200 while the process serves
//	/readyz   200 once the first report is computed, while no informer's
//	          set-up has failed
func (a *Analyzer) Handler(registry *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", a.metricsHandler(registry))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if a.Report() == nil {
			http.Error(w, "no report yet: the informers are listing the cluster", http.StatusServiceUnavailable)
			return
		}
		if a.setupFailed.Load() {
			http.Error(w, "setting up an informer failed (the log says why): the report leaves its objects out", http.StatusServiceUnavailable)
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

// metricsHandler serves registry's metrics and the current report's, in
// Prometheus's text format, gzipped where the scraper accepts it (as
// Prometheus does): registry's gathered at each scrape, the report's
// encoded once a report (reportGatherer.exposition).
func (a *Analyzer) metricsHandler(registry prometheus.Gatherer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		zipped := acceptsGzip(r)
		own, err := registry.Gather()
		var ownText, report []byte
		if err == nil {
			ownText, err = encodeText(own, zipped)
		}
		if err == nil {
			report, err = a.reports.exposition(zipped)
		}
		if err != nil {
			http.Error(w, "gathering the metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", string(textFormat))
		if zipped {
			w.Header().Set("Content-Encoding", "gzip")
		}
		_, _ = w.Write(ownText)
		_, _ = w.Write(report)
	})
}
