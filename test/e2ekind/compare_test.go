//go:build e2e

package e2ekind

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/compare/results"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// runCompare runs `nodeagent compare` on the kind cluster's deployed agents
// and returns its report; the output directory stays under _output/e2e-kind.
func runCompare(t *testing.T, name string, args ...string) *results.Report {
	t.Helper()
	out := filepath.Join(outputDir, name)
	e2eutil.RunCompare(t, append([]string{"--kubeconfig=" + kubeconfigPath,
		"--daemonset=nodeagent/nodeagent", "--pod-image=" + podImage, "--output-dir=" + out}, args...)...)
	return e2eutil.ReadReport(t, out)
}

// TestCompareDaemonSetBeforeAfter: `nodeagent compare --daemonset` on the
// three real nodes, the kubelet's behaviour before kubernetes#120255 and
// after, each a real rollout of the DaemonSet. The apiserver's ConfigMap
// GETs per second and etcd's reads are within 10 % of the model in both
// phases. A three-node cluster's TTL is 0, so nothing cached is ever fresh:
// after sends as many GETs as before, and the whole gain is etcd's, whose
// quorum reads go to nothing. The kind kubelets use the Watch strategy here,
// so they send no GETs of their own.
func TestCompareDaemonSetBeforeAfter(t *testing.T) {
	report := runCompare(t, "compare-daemonset", "--modes=every-sync,first-reference",
		"--pods-per-node=10", "--sync-frequency=5s", "--phase-duration=90s")
	if len(report.Phases) != 2 {
		t.Fatalf("%d phases, want 2", len(report.Phases))
	}
	for _, p := range report.Phases {
		if p.TTLSeconds != 0 {
			t.Errorf("%s: the nodes' TTL was %.0f s, want 0 on a three-node cluster", p.Mode, p.TTLSeconds)
		}
		t.Logf("%s: %.2f GET/s at the apiserver (model %.2f), %.2f at etcd (model %.2f)",
			p.Mode, p.APIServerGetQPS, p.ExpectedAPIServerQPS, p.EtcdGetQPS, p.ExpectedEtcdQPS)
		if math.Abs(p.APIServerGetQPS/p.ExpectedAPIServerQPS-1) > 0.10 {
			t.Errorf("%s: %.2f GET/s at the apiserver, more than 10 %% from the model's %.2f", p.Mode, p.APIServerGetQPS, p.ExpectedAPIServerQPS)
		}
		if p.ExpectedEtcdQPS == 0 && p.EtcdGetQPS > 0.1 || p.ExpectedEtcdQPS > 0 && math.Abs(p.EtcdGetQPS/p.ExpectedEtcdQPS-1) > 0.10 {
			t.Errorf("%s: %.2f reads/s at etcd, model %.2f", p.Mode, p.EtcdGetQPS, p.ExpectedEtcdQPS)
		}
	}
}
