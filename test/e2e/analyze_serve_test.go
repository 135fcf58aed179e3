//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/analyze/live"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// TestAnalyzeServeFollowsTheCluster runs `nodeagent analyze --serve` on the
// local apiserver: a pod's missing ConfigMap is a finding; the ConfigMap
// created, the finding goes within seconds; the apiserver restarted (its
// watches end, the informers watch again or relist), the ConfigMap deleted,
// the finding comes back: nothing is lost across the restart.
func TestAnalyzeServeFollowsTheCluster(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, "serve")
	createNode(t, "node-serve", 0)
	createPod(t, ns, "web", "node-serve", volume{name: "cfg", configMap: "cfg"})

	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	logPath := filepath.Join(t.TempDir(), "analyze.log")
	startBare(t, "analyze --serve", e2eutil.NodeagentBinary(t),
		[]string{"analyze", "--kubeconfig=" + cp.KubeconfigPath, "--read-configz=false", "--serve=" + addr}, logPath)
	missing := func() (bool, error) {
		resp, err := http.Get("http://" + addr + "/report")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("/report: %s", resp.Status)
		}
		var r live.Report
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return false, err
		}
		for _, f := range r.Findings {
			if f.Type == "missing" && f.Object.Namespace == ns && f.Object.Name == "cfg" {
				return true, nil
			}
		}
		return false, nil
	}
	waitMissing := func(what string, want bool, within time.Duration) {
		t.Helper()
		start := time.Now()
		testutil.Eventually(t, pollInterval, within, func() error {
			got, err := missing()
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("the report says missing=%v", got)
			}
			return nil
		})
		t.Logf("%s: in the report %s later", what, time.Since(start).Round(10*time.Millisecond))
	}
	waitMissing("the missing ConfigMap", true, time.Minute)
	createConfigMap(t, ns, "cfg", map[string]string{"k": "v"})
	waitMissing("the ConfigMap created", false, 15*time.Second)

	if err := cp.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if err := clientset.CoreV1().ConfigMaps(ns).Delete(ctx, "cfg", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMissing("the ConfigMap deleted after an apiserver restart", true, time.Minute)
}
