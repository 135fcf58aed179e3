//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// A short comparison with the real binary against the test control plane.
// The bounds are loose: this guards against regressions, `make demo` and
// the scale run hold the figures.
func TestCompareShortRun(t *testing.T) {
	out := t.TempDir()
	output := runCompare(t, "compare-short", out,
		"--nodes=4", "--pods-per-node=5", "--sync-frequency=2s", "--ttl=6s",
		"--phase-duration=24s", "--sample-interval=3s", "--modes=every-sync,first-reference,watch")
	for _, name := range []string{"report.json", "report.md", "chart.svg", "chart.png"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("missing %s: %v", name, err)
		}
	}
	if !strings.Contains(output, "measured/model") {
		t.Error("no results table on stdout")
	}
	report := e2eutil.ReadReport(t, out)
	if len(report.Phases) != 3 {
		t.Fatalf("%d phases, want 3", len(report.Phases))
	}
	before, after, watch := report.Phases[0], report.Phases[1], report.Phases[2]

	for _, p := range report.Phases {
		if err := agentCountsAgree(p, 0.05); err != nil {
			t.Error(err)
		}
		if p.ExpectedAPIServerQPS > 0 {
			if r := p.APIServerGetQPS / p.ExpectedAPIServerQPS; r < 0.6 || r > 1.4 {
				t.Errorf("%s: measured %.2f GET/s, model %.2f (ratio %.2f)", p.Mode, p.APIServerGetQPS, p.ExpectedAPIServerQPS, r)
			}
		}
	}
	// Before the fix every GET reaches etcd.
	if math.Abs(before.EtcdGetTotal-before.APIServerGetTotal) > 3+0.05*before.APIServerGetTotal {
		t.Errorf("every-sync: %v etcd reads for %v GETs, want one each", before.EtcdGetTotal, before.APIServerGetTotal)
	}
	// After it, etcd sees (almost) nothing and the apiserver much less.
	if after.EtcdGetQPS > 0.1 || after.APIServerGetQPS > 0.7*before.APIServerGetQPS {
		t.Errorf("first-reference: %.2f GET/s, %.2f etcd/s; every-sync %.2f GET/s", after.APIServerGetQPS, after.EtcdGetQPS, before.APIServerGetQPS)
	}
	if watch.AgentGetTotal != 0 || watch.EtcdGetQPS > 0.1 {
		t.Errorf("watch: %v agent GETs, %.2f etcd/s; want none", watch.AgentGetTotal, watch.EtcdGetQPS)
	}
}

func TestCompareRejectsImpossibleScenarios(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes=0"},
		{"--phase-duration=-1s"},
		{"--modes=every-sync,poll"},
		// 50,000 pods: more than one process can run agents for.
		{"--nodes=1000", "--pods-per-node=50"},
	} {
		cmd := exec.Command(e2eutil.NodeagentBinary(t), append([]string{"compare", "--kubeconfig=/nonexistent"}, args...)...)
		output, err := cmd.CombinedOutput()
		if err == nil || strings.Contains(string(output), "kubeconfig") {
			t.Errorf("%v: want a failure about the scenario before any connection, got %v: %s", args, err, output)
		}
	}
}

// Ctrl-C in the middle of a phase stops the run, writes what was measured,
// marks it interrupted, removes the objects and exits non-zero.
func TestCompareInterrupted(t *testing.T) {
	out := t.TempDir()
	cmd := compareOnSharedControlPlane(t, "compare-interrupted", out,
		"--nodes=2", "--pods-per-node=3", "--sync-frequency=1s", "--ttl=3s",
		"--phase-duration=5m", "--sample-interval=1s", "--modes=every-sync,watch")
	interruptWhileMeasuring(t, cmd, func() { time.Sleep(3 * time.Second) })
	report := e2eutil.ReadReport(t, out)
	if !report.Interrupted || len(report.Phases) != 1 || !report.Phases[0].Interrupted || report.Phases[0].MeasuredSeconds < 2 || report.Phases[0].APIServerGetTotal == 0 {
		t.Errorf("report after Ctrl-C: interrupted %v, phases %+v", report.Interrupted, report.Phases)
	}
	pods, err := clientset.CoreV1().Pods("compare-interrupted").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("after Ctrl-C %d pods are left (%v)", len(pods.Items), err)
	}
}

// agentCountsAgree holds the agents' own count of a phase's GETs to the
// apiserver's. Requests in flight at the window's edges may land on either
// side: 3 and a fraction of the total. And the agents' counters are read
// just outside the apiserver's window, for the phase's margin
// (AgentWindowMarginSeconds, seconds on a loaded machine): what they sent
// then, at the phase's rate, only the agents count.
func agentCountsAgree(p results.PhaseResult, fraction float64) error {
	edges := 3 + fraction*p.APIServerGetTotal
	margin := p.APIServerGetQPS * p.AgentWindowMarginSeconds
	if d := p.AgentGetTotal - p.APIServerGetTotal; d < -edges || d > edges+margin {
		return fmt.Errorf("%s: agents counted %.0f GETs, apiserver %.0f: want from %.0f fewer (in flight at the edges) to %.0f more (and %.1f GET/s for the %.2f s the agents' counters were read beyond the apiserver's window)",
			p.Mode, p.AgentGetTotal, p.APIServerGetTotal, edges, edges+margin, p.APIServerGetQPS, p.AgentWindowMarginSeconds)
	}
	return nil
}

// compareOnSharedControlPlane is `nodeagent compare` with args on the
// package's control plane, its objects in namespace, its report in out.
func compareOnSharedControlPlane(t *testing.T, namespace, out string, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(e2eutil.NodeagentBinary(t), append([]string{"compare",
		"--kubeconfig=" + cp.KubeconfigPath, "--namespace=" + namespace, "--output-dir=" + out}, args...)...)
}

// runCompare runs `nodeagent compare` with args on the package's control
// plane to the end (e2eutil.RunCompare), its objects in namespace, its
// report in out; it returns the output.
func runCompare(t *testing.T, namespace, out string, args ...string) string {
	t.Helper()
	return e2eutil.RunCompare(t, append([]string{"--kubeconfig=" + cp.KubeconfigPath, "--namespace=" + namespace, "--output-dir=" + out}, args...)...)
}

// interruptWhileMeasuring starts a compare command, waits until it
// measures, calls during, sends Ctrl-C, and checks that the command exits
// non-zero saying it was interrupted.
func interruptWhileMeasuring(t *testing.T, cmd *exec.Cmd, during func()) {
	t.Helper()
	var output syncBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, pollInterval, 2*time.Minute, func() error {
		if !strings.Contains(output.String(), "measure") {
			return fmt.Errorf("not measuring yet")
		}
		return nil
	})
	during()
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	t.Logf("nodeagent compare:\n%s", output.String())
	if err == nil || !strings.Contains(output.String(), "interrupted") {
		t.Fatalf("exit %v; want a non-zero exit that says it was interrupted", err)
	}
}

// syncBuffer is a strings.Builder safe for a process's writers and a
// reading test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Pods of a node that share a ConfigMap share its GETs in every-sync mode:
// ten pods per node reading one ConfigMap and kube-root-ca.crt send about
// 0.80 GET/s per ConfigMap per node at S = 5 s, where counting pods would
// say 1.48. The model says the former, and the real agents agree.
func TestCompareSharedConfigMaps(t *testing.T) {
	out := t.TempDir()
	runCompare(t, "compare-shared", out,
		"--nodes=4", "--pods-per-node=10", "--shared-configmaps=1", "--sync-frequency=5s",
		"--phase-duration=45s", "--sample-interval=5s", "--modes=every-sync")
	p := e2eutil.ReadReport(t, out).Phases[0]
	// Counting pods: 4 nodes × 10 pods × 2 ConfigMaps / 6.75 s.
	perPod := 80 / 6.75
	if p.ExpectedAPIServerQPS > 0.6*perPod || p.ExpectedAPIServerQPS < 0.45*perPod {
		t.Errorf("model %.2f GET/s; want about 8 × 0.80 = 6.4, not the %.2f that counting pods gives", p.ExpectedAPIServerQPS, perPod)
	}
	// The model is the steady state, which compare's mixing of the pods'
	// phases reaches before the window (docs/model.md, "Right after a
	// start"): sharing (ratio 1) is far from counting pods (ratio 1.9).
	if r := p.APIServerGetQPS / p.ExpectedAPIServerQPS; r < 0.9 || r > 1.1 {
		t.Errorf("measured %.2f GET/s, model %.2f (ratio %.2f), want 0.9 to 1.1", p.APIServerGetQPS, p.ExpectedAPIServerQPS, r)
	}
}
