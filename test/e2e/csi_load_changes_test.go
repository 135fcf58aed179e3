//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nodeagent-io/nodeagent/pkg/agent"
)

// changeBuckets is a snapshot of the driver's histogram of its changes'
// delays (agent.MetricChangeDelay): cumulative counts by upper bound, in
// seconds, ascending.
type changeBuckets struct {
	bounds []float64
	counts []uint64
}

// driverChangeReads reads the histogram from the driver's /metrics at
// address.
func driverChangeReads(t *testing.T, address string) changeBuckets {
	t.Helper()
	resp, err := http.Get("http://" + address + "/metrics")
	if err != nil {
		t.Fatalf("the driver's /metrics: %v", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the driver's /metrics: %v", err)
	}
	family := families[agent.MetricChangeDelay]
	if family == nil || len(family.GetMetric()) != 1 {
		t.Fatalf("the driver serves no %s", agent.MetricChangeDelay)
	}
	var b changeBuckets
	for _, bucket := range family.GetMetric()[0].GetHistogram().GetBucket() {
		b.bounds = append(b.bounds, bucket.GetUpperBound())
		b.counts = append(b.counts, bucket.GetCumulativeCount())
	}
	return b
}

// since is what b counted after earlier.
func (b changeBuckets) since(earlier changeBuckets) changeBuckets {
	out := changeBuckets{bounds: b.bounds}
	for i, c := range b.counts {
		out.counts = append(out.counts, c-earlier.counts[i])
	}
	return out
}

// quantile is the q-quantile as Prometheus's histogram_quantile estimates
// it (linear within its bucket), and how many delays there are.
func (b changeBuckets) quantile(q float64) (float64, uint64) {
	total := b.counts[len(b.counts)-1]
	if total == 0 {
		return 0, 0
	}
	rank := q * float64(total)
	lower, below := 0.0, uint64(0)
	for i, c := range b.counts {
		if float64(c) >= rank {
			return lower + (b.bounds[i]-lower)*(rank-float64(below))/float64(c-below), total
		}
		lower, below = b.bounds[i], c
	}
	return b.bounds[len(b.bounds)-1], total
}

// changeReadCell is the table's cell of the driver's share: the median and
// p99 of its changes' delays.
func changeReadCell(t *testing.T, b changeBuckets) string {
	median, n := b.quantile(0.5)
	p99, _ := b.quantile(0.99)
	t.Logf("the driver's share: %d changes read, median %.1f ms, p99 %.1f ms (%s, as histogram_quantile)", n, 1000*median, 1000*p99, agent.MetricChangeDelay)
	return fmt.Sprintf("%.1f ms / %.1f ms", 1000*median, 1000*p99)
}
