package live

import (
	"slices"
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

// reportGatherer gathers the current report's metrics once per report: at
// 5,000 nodes they are tens of thousands of series, which every scrape
// would otherwise turn into the exposition's form again.
type reportGatherer struct {
	a        *Analyzer
	registry *prometheus.Registry
	mu       sync.Mutex
	report   *Report
	families []*dto.MetricFamily
	// text and zipped are the families in Prometheus's text format, plain
	// and gzipped, made once for report where asked (exposition).
	text, zipped []byte
}

func newReportGatherer(a *Analyzer) *reportGatherer {
	registry := prometheus.NewRegistry()
	registry.MustRegister(reportCollector{a})
	return &reportGatherer{a: a, registry: registry}
}

// Gather returns copies of the families' lists, which the caller may
// sort and merge; the metrics themselves are shared and never changed.
func (g *reportGatherer) Gather() ([]*dto.MetricFamily, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.current(); err != nil {
		return nil, err
	}
	out := make([]*dto.MetricFamily, len(g.families))
	for i, f := range g.families {
		out[i] = &dto.MetricFamily{Name: f.Name, Help: f.Help, Type: f.Type, Unit: f.Unit, Metric: slices.Clone(f.Metric)}
	}
	return out, nil
}

// current makes g's families the current report's; g.mu held.
func (g *reportGatherer) current() error {
	if r := g.a.Report(); r != g.report {
		families, err := g.registry.Gather()
		if err != nil {
			return err
		}
		g.report, g.families, g.text, g.zipped = r, families, nil, nil
	}
	return nil
}

// exposition is the current report's metrics in Prometheus's text format,
// gzipped where zipped says (a gzip member, which may follow another):
// encoded once a report, where every scrape made tens of thousands of
// series again, and merged and checked them with the registry's.
func (g *reportGatherer) exposition(zipped bool) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.current(); err != nil {
		return nil, err
	}
	if g.text == nil {
		text, err := encodeText(g.families, false)
		if err != nil {
			return nil, err
		}
		g.text = text
	}
	if zipped && g.zipped == nil {
		z, err := gzipped(g.text)
		if err != nil {
			return nil, err
		}
		g.zipped = z
	}
	if zipped {
		return g.zipped, nil
	}
	return g.text, nil
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
