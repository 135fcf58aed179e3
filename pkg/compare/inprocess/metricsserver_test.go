package inprocess

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func counterRegistry(t *testing.T, value float64) *prometheus.Registry {
	t.Helper()
	r := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nodeagent_configmap_get_requests_total", Help: "GETs."},
		[]string{"resource_version"})
	c.WithLabelValues("unset").Add(value)
	r.MustRegister(c)
	return r
}

// The metrics server merges the agents' registries, each series with its
// node, and has nothing between phases.
func TestAgentRegistriesLabelEachSeriesWithItsNode(t *testing.T) {
	var regs agentRegistries
	regs.set(prometheus.Gatherers{
		nodeGatherer{node: "n1", from: counterRegistry(t, 3)},
		nodeGatherer{node: "n2", from: counterRegistry(t, 5)},
	})
	want := `# HELP nodeagent_configmap_get_requests_total GETs.
# TYPE nodeagent_configmap_get_requests_total counter
nodeagent_configmap_get_requests_total{node="n1",resource_version="unset"} 3
nodeagent_configmap_get_requests_total{node="n2",resource_version="unset"} 5
`
	if err := testutil.GatherAndCompare(&regs, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	regs.set(nil)
	if n, err := testutil.GatherAndCount(&regs); n != 0 || err != nil {
		t.Errorf("between phases: %d series, %v; want none", n, err)
	}
}

func TestServeMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A bound address fails at once, before a run creates anything.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if err := serveMetrics(ctx, taken.Addr().String(), prometheus.NewRegistry()); err == nil || !strings.Contains(err.Error(), "--metrics-address") {
		t.Errorf("a bound address: %v, want an error that names the flag", err)
	}
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := free.Addr().String()
	free.Close()
	regs := &agentRegistries{}
	regs.set(prometheus.Gatherers{nodeGatherer{node: "n1", from: counterRegistry(t, 2)}})
	if err := serveMetrics(ctx, addr, regs); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `nodeagent_configmap_get_requests_total{node="n1",resource_version="unset"} 2`) {
		t.Errorf("/metrics:\n%s", body)
	}
}
