package inprocess

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// NodeLabel is the label that says which node's agent a series is from, on
// the metrics compare serves (Options.MetricsAddress) as on those the
// chart's PodMonitor scrapes; deploy/prometheus's rules aggregate by it.
const NodeLabel = "node"

// nodeGatherer is one agent's registry, its series labelled with its node.
type nodeGatherer struct {
	node string
	from prometheus.Gatherer
}

func (g nodeGatherer) Gather() ([]*dto.MetricFamily, error) {
	families, err := g.from.Gather()
	for _, f := range families {
		for _, m := range f.Metric {
			m.Label = append(m.Label, &dto.LabelPair{Name: ptr.To(NodeLabel), Value: ptr.To(g.node)})
		}
	}
	return families, err
}

// agentRegistries is the registries of the agents a phase runs in this
// process, by node, for the metrics server: set when a phase's agents
// start, emptied when they stop.
type agentRegistries struct {
	mu        sync.Mutex
	gatherers prometheus.Gatherers
}

func (r *agentRegistries) set(g prometheus.Gatherers) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gatherers = g
}

// Gather merges every running agent's metrics, each series with its node:
// what a Prometheus that scrapes each node's agent stores, in one scrape.
// Between phases it has nothing; a new phase's agents start their counters
// at zero, which Prometheus's rate() reads as a counter reset.
func (r *agentRegistries) Gather() ([]*dto.MetricFamily, error) {
	r.mu.Lock()
	g := r.gatherers
	r.mu.Unlock()
	return g.Gather()
}

// serveMetrics serves the agents' metrics at http://addr/metrics until ctx
// ends. It returns once the address is bound, so that a bad address fails
// the run before anything is created.
func serveMetrics(ctx context.Context, addr string, g prometheus.Gatherer) error {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdownCtx)
	}()
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Serving the agents' metrics failed", "address", addr)
		}
	}()
	return nil
}
