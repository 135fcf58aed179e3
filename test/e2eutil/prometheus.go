package e2eutil

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
)

// PrometheusConfigHead begins a test's prometheus.yml: a scrape and an
// evaluation every 2 s, the rules of rules.yaml; scrape_configs follow.
const PrometheusConfigHead = `global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files: [rules.yaml]
scrape_configs:
`

// StartPrometheus runs the Prometheus server at bin on this machine's
// loopback, in a directory of its own holding files (prometheus.yml among
// them; paths in it are relative to that directory), until the test ends,
// and returns a client of its API once it is ready. Its log is printed
// if the test fails.
func StartPrometheus(t testing.TB, bin string, files map[string][]byte) promv1.API {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	listen := FreeLoopbackAddress(t)
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+listen, "--log.level=warn")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		log.Close()
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("prometheus.log:\n%s", out)
		}
	})
	testutil.Eventually(t, 100*time.Millisecond, 30*time.Second, func() error {
		resp, err := http.Get("http://" + listen + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("prometheus not ready: %s", resp.Status)
		}
		return nil
	})
	client, err := promapi.NewClient(promapi.Config{Address: "http://" + listen})
	if err != nil {
		t.Fatal(err)
	}
	return promv1.NewAPI(client)
}

// FreeLoopbackAddress is a loopback address whose port nothing listens on.
func FreeLoopbackAddress(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// PanelQuery is one query of a Grafana dashboard's panel.
type PanelQuery struct{ Panel, Expr string }

// DashboardQueries are the queries of the panels of the dashboard JSON at
// path (deploy/grafana/nodeagent.json).
func DashboardQueries(t testing.TB, path string) []PanelQuery {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var out []PanelQuery
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			out = append(out, PanelQuery{Panel: p.Title, Expr: target.Expr})
		}
	}
	return out
}

// ReturnsData runs expr (q's, its Grafana variables given values) on prom
// at at, and fails t, naming q's panel, where it does not parse or returns
// no series.
func (q PanelQuery) ReturnsData(t testing.TB, prom promv1.API, expr string, at time.Time) {
	t.Helper()
	result, _, err := prom.Query(context.Background(), expr, at)
	if err != nil {
		t.Errorf("panel %q: %s: %v", q.Panel, expr, err)
		return
	}
	if v, ok := result.(model.Vector); !ok || len(v) == 0 {
		t.Errorf("panel %q: %s: no data", q.Panel, expr)
	}
}
