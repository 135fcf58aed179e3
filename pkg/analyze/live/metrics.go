package live

import (
	"strings"
	"sync"

	dto "github.com/prometheus/client_model/go"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
)

// The metrics of `analyze --serve`, read from the current report at each
// scrape. The totals' cardinality is bounded by the cluster's namespaces and
// the finding types; series.go's by the nodes, the what-ifs and
// MaxFindingSeries.
var (
	descFindings = prometheus.NewDesc("nodeagent_analyze_findings",
		"Findings of the current report (pods and containers that hold, or will hold, other content than the API's), by type and namespace.",
		[]string{"type", "namespace"}, nil)
	descGets = prometheus.NewDesc("nodeagent_analyze_predicted_apiserver_gets_per_second",
		"The kubelets' predicted GETs a second at the apiserver, by kind (configmaps, secrets).", []string{"kind"}, nil)
	descQuorumGets = prometheus.NewDesc("nodeagent_analyze_predicted_quorum_gets_per_second",
		"The kubelets' predicted GETs a second that reach etcd (without resourceVersion), by kind.", []string{"kind"}, nil)
	descWatches = prometheus.NewDesc("nodeagent_analyze_predicted_watches",
		"The kubelets' predicted open watches, by kind.", []string{"kind"}, nil)
	descDelay = prometheus.NewDesc("nodeagent_analyze_update_delay_seconds",
		"How long an update takes to reach the volumes that mount it, over every volume read in the cluster: the median and the longest.", []string{"stat"}, nil)
	descComputedAt = prometheus.NewDesc("nodeagent_analyze_last_computation_timestamp_seconds",
		"When the current report was computed (Unix time).", nil, nil)
	descComputeSeconds = prometheus.NewDesc("nodeagent_analyze_computation_seconds",
		"How long the current report took to compute.", nil, nil)
	descComputations = prometheus.NewDesc("nodeagent_analyze_computations_total",
		"Reports computed since the start.", nil, nil)
	descPartsComputed = prometheus.NewDesc("nodeagent_analyze_node_parts_computed_total",
		"Nodes' parts of the analysis computed since the start: every node's at the first report, then those of the nodes each change touches.", nil, nil)
	descObjects = prometheus.NewDesc("nodeagent_analyze_objects",
		"Objects the informers hold, by resource.", []string{"resource"}, nil)
)

// collector is the Analyzer's own state as a Prometheus collector: its
// computations, its failed lists and watches, what its report cannot see.
type collector struct{ a *Analyzer }

// Collector returns the Analyzer's own metrics as a collector; Handler
// serves them with the current report's.
func (a *Analyzer) Collector() prometheus.Collector { return collector{a} }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descComputations, descPartsComputed, descNotes, descWatchErrors} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descComputations, prometheus.CounterValue, float64(c.a.computations.Load()))
	ch <- prometheus.MustNewConstMetric(descPartsComputed, prometheus.CounterValue, float64(c.a.partsComputed.Load()))
	c.a.failures.collect(ch)
	if r := c.a.Report(); r != nil {
		for reason, n := range notes(r, len(c.a.failures.recent(c.a.clock.Now()))) {
			ch <- prometheus.MustNewConstMetric(descNotes, prometheus.GaugeValue, float64(n), reason)
		}
	}
}

// reportCollector is the current report's metrics as a collector.
type reportCollector struct{ a *Analyzer }

func (reportCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descFindings, descGets, descQuorumGets, descWatches, descDelay, descComputedAt, descComputeSeconds, descObjects,
		descNodeGets, descNodeWatches, descNodeDelay, descWhatIfGets, descWhatIfWatches, descMoveGets, descMoveWatches, descFinding, descFindingsDropped} {
		ch <- d
	}
}

func (c reportCollector) Collect(ch chan<- prometheus.Metric) {
	if r := c.a.Report(); r != nil {
		for _, m := range c.a.reportMetrics(r) {
			ch <- m
		}
	}
}

// reportGatherer is the current report's metrics: as families for
// whoever gathers them (tests), and in the exposition's form for /metrics,
// made once a report (exposition). At 10,000 nodes they are tens of
// thousands of series: made again at every scrape, or held as families
// beside their text, they cost more than the report.
type reportGatherer struct {
	a        *Analyzer
	registry *prometheus.Registry
	mu       sync.Mutex
	// text and zipped are report's metrics in Prometheus's text format,
	// plain and gzipped (zipped made where first asked).
	report       *Report
	text, zipped []byte
}

func newReportGatherer(a *Analyzer) *reportGatherer {
	registry := prometheus.NewRegistry()
	registry.MustRegister(reportCollector{a})
	return &reportGatherer{a: a, registry: registry}
}

// Gather gathers the current report's metrics.
func (g *reportGatherer) Gather() ([]*dto.MetricFamily, error) { return g.registry.Gather() }

// exposition is the current report's metrics in Prometheus's text format,
// gzipped where zipped says (a gzip member, which may follow another).
func (g *reportGatherer) exposition(zipped bool) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r := g.a.Report(); r != g.report || g.text == nil {
		families, err := g.registry.Gather()
		if err != nil {
			return nil, err
		}
		text, err := encodeText(families, false)
		if err != nil {
			return nil, err
		}
		g.report, g.text, g.zipped = r, text, nil
	}
	if !zipped {
		return g.text, nil
	}
	if g.zipped == nil {
		z, err := gzipped(g.text)
		if err != nil {
			return nil, err
		}
		g.zipped = z
	}
	return g.zipped, nil
}

// reportMetrics are r's metrics (reportGatherer makes them once a report).
func (a *Analyzer) reportMetrics(r *Report) []prometheus.Metric {
	var out []prometheus.Metric
	add := func(m prometheus.Metric) { out = append(out, m) }
	counts := map[[2]string]int{}
	for _, t := range analyze.FindingTypes {
		counts[[2]string{string(t), ""}] = 0 // every type, so that alerts see zeros
	}
	for _, f := range r.Findings {
		ns, _, _ := strings.Cut(f.Pod, "/")
		delete(counts, [2]string{string(f.Type), ""})
		counts[[2]string{string(f.Type), ns}]++
	}
	for k, n := range counts {
		add(prometheus.MustNewConstMetric(descFindings, prometheus.GaugeValue, float64(n), k[0], k[1]))
	}
	for kind, rates := range map[string]analyze.Rates{"configmaps": r.Total.Predicted.ConfigMaps, "secrets": r.Total.Predicted.Secrets} {
		add(prometheus.MustNewConstMetric(descGets, prometheus.GaugeValue, rates.APIServerGets, kind))
		add(prometheus.MustNewConstMetric(descQuorumGets, prometheus.GaugeValue, rates.QuorumGets, kind))
		add(prometheus.MustNewConstMetric(descWatches, prometheus.GaugeValue, float64(rates.Watches), kind))
	}
	if d := r.Total.UpdateDelay; d != nil {
		add(prometheus.MustNewConstMetric(descDelay, prometheus.GaugeValue, d.Median, "median"))
		add(prometheus.MustNewConstMetric(descDelay, prometheus.GaugeValue, d.Max, "max"))
	}
	add(prometheus.MustNewConstMetric(descComputedAt, prometheus.GaugeValue, float64(r.ComputedAt.UnixNano())/1e9))
	add(prometheus.MustNewConstMetric(descComputeSeconds, prometheus.GaugeValue, r.Seconds))
	for resource, n := range r.Objects {
		add(prometheus.MustNewConstMetric(descObjects, prometheus.GaugeValue, float64(n), resource))
	}
	return appendSeries(out, r, a.opts.MaxFindingSeries)
}
