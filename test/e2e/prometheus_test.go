//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/pkg/report"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// Scaled for a run of minutes: the shipped rules' 5 m rates become the
// phase's 45 s and the alert's 15 m becomes 10 s; promtool's unit tests
// (deploy/prometheus/tests) hold the shipped windows.
//
// The rate window is the whole phase because a sample's timestamp is when
// its scrape began, while a loaded apiserver renders /metrics seconds later
// (2.6 s seen in CI, with three shards beside it): the two samples at a
// window's ends are each off by up to that much, which is 17 % of a 15 s
// window and 6 % of a 45 s one.
const (
	promPhase      = 45 * time.Second
	promRateWindow = "45s"
	promAlertFor   = "10s"
)

// promRules is deploy/prometheus's rule file with its windows scaled to a
// short run.
func promRules(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "prometheus", "nodeagent-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rules := strings.ReplaceAll(string(raw), "[5m]", "["+promRateWindow+"]")
	rules = strings.ReplaceAll(rules, "for: 15m", "for: "+promAlertFor)
	if rules == string(raw) || !strings.Contains(rules, "for: "+promAlertFor) {
		t.Fatal("the rule file's windows were not found to scale: update promRules")
	}
	return rules
}

// startPrometheus runs the pinned Prometheus (make prometheus) on loopback,
// scraping the test control plane's apiserver as its admin and the agents
// that compare serves at agentsAddr, every 2 s, with deploy/prometheus's
// rules; it returns a client of its API once it is ready.
func startPrometheus(t *testing.T, agentsAddr string) promv1.API {
	t.Helper()
	admin := cp.RESTConfig()
	apiserver, err := url.Parse(admin.Host)
	if err != nil {
		t.Fatal(err)
	}
	config := e2eutil.PrometheusConfigHead + fmt.Sprintf(`- job_name: apiserver
  scheme: https
  tls_config: {ca_file: %q, cert_file: %q, key_file: %q}
  static_configs: [{targets: [%q]}]
- job_name: nodeagent
  honor_labels: true
  static_configs: [{targets: [%q]}]
`, admin.CAFile, admin.CertFile, admin.KeyFile, apiserver.Host, agentsAddr)
	return e2eutil.StartPrometheus(t, pinnedTool(t, "PROMETHEUS_BIN", "prometheus"),
		map[string][]byte{"prometheus.yml": []byte(config), "rules.yaml": []byte(promRules(t))})
}

// promValue is the value of a query that returns at most one series at
// at; found is false when it returns none.
func promValue(t *testing.T, api promv1.API, query string, at time.Time) (value float64, found bool) {
	t.Helper()
	result, warnings, err := api.Query(context.Background(), query, at)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	if len(warnings) > 0 {
		t.Logf("%s: warnings %v", query, warnings)
	}
	vector, ok := result.(model.Vector)
	if !ok {
		t.Fatalf("%s: a %s, want a vector", query, result.Type())
	}
	switch len(vector) {
	case 0:
		return 0, false
	case 1:
		return float64(vector[0].Value), true
	}
	t.Fatalf("%s: %d series, want one: %v", query, len(vector), vector)
	return 0, false
}

// TestPrometheusRulesMatchCompare scrapes a compare run with a real
// Prometheus and deploy/prometheus's rules, and holds each recording rule,
// averaged over each phase's measured window, to what compare measured
// there: within 10 %. The quorum-GET alert fires under every-sync and not
// under first-reference.
//
// The rule's value is read at the measured window's end, its rate window
// the phase's length, so that every second of the window weighs the same as
// in compare's figure (an average over overlapping shorter windows weighs
// the middle most, and on a loaded machine the load is not even). The
// agents' counters are read a moment before and after the apiserver's
// window, so their rate is over that longer span.
func TestPrometheusRulesMatchCompare(t *testing.T) {
	agentsAddr := e2eutil.FreeLoopbackAddress(t)
	prom := startPrometheus(t, agentsAddr)
	quorumGets(t)
	out := t.TempDir()
	runCompare(t, "compare-prometheus", out, "--nodes=4", "--pods-per-node=5", "--sync-frequency=2s", "--ttl=6s",
		"--phase-duration="+promPhase.String(), "--modes=every-sync,first-reference", "--metrics-address="+agentsAddr)
	run := e2eutil.ReadReport(t, out)
	if len(run.Phases) != 2 {
		t.Fatalf("%d phases, want 2", len(run.Phases))
	}
	// The last scrape and rule evaluation of the run.
	time.Sleep(5 * time.Second)
	chartPrometheus(t, prom, run)
	measured := report.Table{Header: []string{"phase", "series", "Prometheus, over the window", "compare"}}
	for _, p := range run.Phases {
		if p.MeasuredSeconds < promPhase.Seconds() {
			t.Fatalf("%s: measured %.0fs, shorter than the rules' %s window", p.Mode, p.MeasuredSeconds, promRateWindow)
		}
		ruleAt := func(series string) (float64, bool) { return promValue(t, prom, series, p.WindowEnd) }
		within := func(what, series string, want float64) {
			got, found := ruleAt(series)
			if !found || math.Abs(got-want) > 0.1*want {
				t.Errorf("%s: %s: Prometheus %.2f/s (found %v), compare %.2f/s", p.Mode, what, got, found, want)
				return
			}
			t.Logf("%s: %s: Prometheus %.2f/s, compare %.2f/s", p.Mode, what, got, want)
			measured.Rows = append(measured.Rows, []string{string(p.Mode), "`" + series + "`", fmt.Sprintf("%.2f /s", got), fmt.Sprintf("%.2f /s", want)})
		}
		logScrapes(t, prom, p)
		secs := p.MeasuredSeconds + p.AgentWindowMarginSeconds
		within("apiserver GETs", `resource:apiserver_request_gets:rate5m{resource="configmaps"}`, p.APIServerGetQPS)
		within("agents' GETs", `sum(resource_version:nodeagent_configmap_get_requests:rate5m)`, p.AgentGetTotal/secs)
		// The alert's state at the window's end, over its last two
		// evaluations: its rate window is then the phase's alone.
		firing, _ := promValue(t, prom, `max_over_time(ALERTS{alertname="ConfigMapQuorumGetRateHigh",alertstate="firing"}[4s])`, p.WindowEnd)
		switch p.Mode {
		case modes.EverySync:
			within("etcd gets", `resource:etcd_request_gets:rate5m{resource="configmaps"}`, p.EtcdGetQPS)
			within("agents' quorum GETs", `resource_version:nodeagent_configmap_get_requests:rate5m{resource_version="unset"}`, p.AgentQuorumGetTotal/secs)
			if firing != 1 {
				t.Errorf("every-sync: ConfigMapQuorumGetRateHigh not firing (%.2f etcd gets/s)", p.EtcdGetQPS)
			}
		case modes.FirstReference:
			if etcd, _ := ruleAt(`resource:etcd_request_gets:rate5m{resource="configmaps"}`); etcd > 0.5 {
				t.Errorf("first-reference: %.2f etcd gets/s by the rule, want about none", etcd)
			}
			if firing != 0 {
				t.Error("first-reference: ConfigMapQuorumGetRateHigh fired")
			}
		}
		if p.Mode == modes.EverySync {
			checkDashboard(t, prom, p.WindowEnd)
		}
		// Every node's agent is there, by its node label.
		if nodes, _ := promValue(t, prom, `count(count by (node) (nodeagent_volumes_mounted))`, p.WindowEnd); nodes != 4 {
			t.Errorf("%s: %v nodes' agents scraped, want 4", p.Mode, nodes)
		}
	}
	writeDocTable(t, "prometheus", measured)
}

// logScrapes says how Prometheus's scrapes went in a phase's window: on a
// loaded machine a scrape that times out leaves a gap that a rate over a
// short window reads as fewer requests.
func logScrapes(t *testing.T, prom promv1.API, p results.PhaseResult) {
	t.Helper()
	span := fmt.Sprintf("%ds", int(p.MeasuredSeconds))
	for _, job := range []string{"apiserver", "nodeagent"} {
		sel := `up{job="` + job + `"}[` + span + `]`
		scrapes, _ := promValue(t, prom, "count_over_time("+sel+")", p.WindowEnd)
		ok, _ := promValue(t, prom, "sum_over_time("+sel+")", p.WindowEnd)
		longest, _ := promValue(t, prom, `max_over_time(scrape_duration_seconds{job="`+job+`"}[`+span+`])`, p.WindowEnd)
		t.Logf("%s: %s scrapes in the %s window: %.0f of %.0f answered, the longest took %.2fs", p.Mode, job, span, ok, scrapes, longest)
	}
}

// quorumGets creates a Secret and reads it and a ConfigMap back without a
// resourceVersion, so that the apiserver's and etcd's GET series exist
// before the run, as on any cluster that has run a while: the dashboard's
// Secret panel has data whatever ran before, and the ConfigMap rates start
// from the series' past instead of from their first sample.
func quorumGets(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ns := createNamespace(t, "prometheus-secret")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, StringData: map[string]string{"k": "v"}}
	if _, err := clientset.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clientset.CoreV1().Secrets(ns).Get(ctx, "probe", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Data: map[string]string{"k": "v"}}
	if _, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clientset.CoreV1().ConfigMaps(ns).Get(ctx, "probe", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	// Two scrapes, so that Prometheus has seen the series before the run.
	time.Sleep(5 * time.Second)
}

// checkDashboard runs every query of deploy/grafana/nodeagent.json's panels
// but analyze always on's (test/e2ekind checks those) against prom at at,
// Grafana's variables given the values a user's "All" and Grafana's rate
// interval would: each must parse and return data.
func checkDashboard(t *testing.T, prom promv1.API, at time.Time) {
	t.Helper()
	queries := 0
	for _, q := range e2eutil.DashboardQueries(t, filepath.Join(repoRoot(t), "deploy", "grafana", "nodeagent.json")) {
		if strings.Contains(q.Expr, "nodeagent_analyze_") {
			continue // analyze always on's: the kind test's Prometheus scrapes it
		}
		q.ReturnsData(t, prom, strings.NewReplacer(`$node`, `.*`, `$__rate_interval`, promRateWindow).Replace(q.Expr), at)
		queries++
	}
	if queries < 8 {
		t.Errorf("the dashboard has %d panel queries; want its 8 panels' at least", queries)
	}
	t.Logf("every one of the dashboard's %d panel queries returned data", queries)
}

// chartPrometheus draws what the dashboard's first panel shows over the
// run, from Prometheus (the recording rules' ConfigMap GET rates at the
// apiserver and etcd), with each phase's measured window, into
// _output/prometheus/ (prometheus.svg and .png; docs/monitoring.md).
func chartPrometheus(t *testing.T, prom promv1.API, r *results.Report) {
	t.Helper()
	start := r.Phases[0].WindowStart.Add(-30 * time.Second)
	end := r.Phases[len(r.Phases)-1].WindowEnd
	rangeOf := func(query string) []report.Point {
		result, _, err := prom.QueryRange(context.Background(), query, promv1.Range{Start: start, End: end, Step: 2 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		var points []report.Point
		if m, ok := result.(model.Matrix); ok && len(m) == 1 {
			for _, v := range m[0].Values {
				points = append(points, report.Point{X: v.Timestamp.Time().Sub(start).Seconds(), Y: float64(v.Value)})
			}
		}
		return points
	}
	c := report.Chart{
		Title:  fmt.Sprintf("deploy/prometheus's rules over a compare run: %d nodes × %d pods, S=%gs", r.Scenario.Nodes, r.Scenario.PodsPerNode, r.Scenario.SyncFrequencySeconds),
		XLabel: "seconds (every-sync measured from 30 s)", YLabel: "ConfigMap GETs per second",
		Series: []report.Series{
			{Label: "resource:apiserver_request_gets:rate5m", Colour: modes.EverySync.Colour(),
				Points: rangeOf(`resource:apiserver_request_gets:rate5m{resource="configmaps"}`)},
			{Label: "resource:etcd_request_gets:rate5m", Colour: modes.EverySync.Colour(), Style: report.Dashed,
				Points: rangeOf(`resource:etcd_request_gets:rate5m{resource="configmaps"}`)},
		},
	}
	for _, p := range r.Phases {
		// compare's own measurement: a flat line over the measured window.
		from, to := p.WindowStart.Sub(start).Seconds(), p.WindowEnd.Sub(start).Seconds()
		c.Series = append(c.Series,
			report.Series{Label: string(p.Mode) + ": compare's apiserver GET/s", Colour: p.Mode.Colour(), Style: report.Model,
				Points: []report.Point{{X: from, Y: p.APIServerGetQPS}, {X: to, Y: p.APIServerGetQPS}}},
			report.Series{Label: string(p.Mode) + ": compare's etcd get/s", Colour: p.Mode.Colour(), Style: report.Model,
				Points: []report.Point{{X: from, Y: p.EtcdGetQPS}, {X: to, Y: p.EtcdGetQPS}}})
	}
	dir := filepath.Join(repoRoot(t), "_output", "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(dir, "prometheus"); err != nil {
		t.Fatal(err)
	}
}
