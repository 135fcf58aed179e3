//go:build e2e

package e2ekind

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// analyze always on, installed by the chart alone (no agents) in a
// namespace of its own.
const (
	analyzeRelease   = "nodeagent-analyze"
	analyzeNamespace = "nodeagent-analyze"
	analyzePort      = "10357"
)

// installAnalyzer installs the chart with analyze alone, posting events, as
// an operator would, with the image make image built, and returns its
// ready pod's name. It is uninstalled when the test ends.
func installAnalyzer(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() {
		_ = exec.Command(os.Getenv("NODEAGENT_HELM_BIN"), "uninstall", analyzeRelease, "-n", analyzeNamespace, "--wait",
			"--kubeconfig", kubeconfigPath).Run()
		_ = clientset.CoreV1().Namespaces().Delete(ctx, analyzeNamespace, metav1.DeleteOptions{})
	})
	colon := strings.LastIndex(agentImage, ":")
	helm(t, "install", analyzeRelease, "deploy/helm/nodeagent", "-n", analyzeNamespace, "--create-namespace",
		"--set", "agents.enabled=false", "--set", "analyze.enabled=true", "--set", "analyze.events=true",
		"--set", "image.repository="+agentImage[:colon], "--set", "image.tag="+agentImage[colon+1:],
		"--set", "image.pullPolicy=Never", "--wait", "--timeout", "3m")
	pods, err := clientset.CoreV1().Pods(analyzeNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nodeagent-analyze"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d analyzer pods, want 1", len(pods.Items))
	}
	return pods.Items[0].Name
}

// analyzerFindings are the series of nodeagent_analyze_finding that the
// analyzer pod serves for namespace ns, as "pod object" by finding type,
// read through the apiserver's pod proxy.
func analyzerFindings(ctx context.Context, pod, ns string) (map[string][]string, error) {
	raw, err := clientset.CoreV1().Pods(analyzeNamespace).ProxyGet("http", pod, analyzePort, "/metrics", nil).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("the analyzer's /metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	found := map[string][]string{}
	if family := families["nodeagent_analyze_finding"]; family != nil {
		for _, m := range family.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && m.GetGauge().GetValue() == 1 {
				found[labels["type"]] = append(found[labels["type"]], labels["pod"]+" "+labels["object"])
			}
		}
	}
	for _, list := range found {
		sort.Strings(list)
	}
	return found, nil
}

// startPrometheus runs the pinned Prometheus (make prometheus) on this
// machine's loopback, scraping the analyzer pod every 2 s through the
// apiserver's pod proxy as the kind cluster's admin, with
// deploy/prometheus's rules, every alert's `for` cut to 4 s; it returns a
// client of its API once it is ready.
func startPrometheus(t *testing.T, pod string) promv1.API {
	t.Helper()
	bin := os.Getenv("NODEAGENT_PROMETHEUS_BIN")
	if bin == "" {
		t.Fatal("NODEAGENT_PROMETHEUS_BIN is not set; run through `make e2e-kind`, which builds Prometheus")
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "nodeagent-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rules := regexp.MustCompile(`(?m)^(\s+for: )\d+m$`).ReplaceAllString(string(raw), "${1}4s")
	apiserver, err := url.Parse(adminConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	config := e2eutil.PrometheusConfigHead + fmt.Sprintf(`- job_name: nodeagent-analyze
  honor_labels: true
  scheme: https
  metrics_path: /api/v1/namespaces/%s/pods/%s:%s/proxy/metrics
  tls_config: {ca_file: ca.crt, cert_file: admin.crt, key_file: admin.key}
  static_configs: [{targets: [%q]}]
`, analyzeNamespace, pod, analyzePort, apiserver.Host)
	return e2eutil.StartPrometheus(t, bin, map[string][]byte{"prometheus.yml": []byte(config), "rules.yaml": []byte(rules),
		"ca.crt": adminConfig.CAData, "admin.crt": adminConfig.CertData, "admin.key": adminConfig.KeyData})
}

// firingAlerts are the alerts firing now for namespace ns, as
// "alertname pod object" (one for the containers of a pod alike).
func firingAlerts(ctx context.Context, prom promv1.API, ns string) ([]string, error) {
	result, _, err := prom.Query(ctx, fmt.Sprintf(`ALERTS{alertstate="firing",namespace=%q}`, ns), time.Now())
	if err != nil {
		return nil, err
	}
	var firing []string
	for _, s := range result.(model.Vector) {
		firing = append(firing, fmt.Sprintf("%s %s %s", s.Metric["alertname"], s.Metric["pod"], s.Metric["object"]))
	}
	sort.Strings(firing)
	return slices.Compact(firing), nil
}

// checkAnalyzeDashboard runs the queries of deploy/grafana/nodeagent.json's
// panels that read analyze always on's metrics against prom, with Grafana's
// "All" for $node: each must parse and return data.
func checkAnalyzeDashboard(t *testing.T, prom promv1.API) {
	t.Helper()
	queries := 0
	for _, q := range e2eutil.DashboardQueries(t, filepath.Join("..", "..", "deploy", "grafana", "nodeagent.json")) {
		if strings.Contains(q.Expr, "nodeagent_analyze_") {
			q.ReturnsData(t, prom, strings.ReplaceAll(q.Expr, "$node", ".*"), time.Now())
			queries++
		}
	}
	if queries < 7 {
		t.Errorf("the dashboard reads analyze always on in %d queries; want its 4 panels' 7", queries)
	}
}

// analyzerEvents are the events analyze always on posted in namespace ns,
// as "pod reason".
func analyzerEvents(ctx context.Context, ns string) ([]string, error) {
	events, err := clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "source=nodeagent-analyze"})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range events.Items {
		out = append(out, e.InvolvedObject.Name+" "+e.Reason)
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}
