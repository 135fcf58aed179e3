//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/faulttable"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
)

// The fault suite records one row per fault or storm; TestMain writes them
// as the table in docs/reliability.md, to _output/reliability/table.md
// (or $NODEAGENT_RELIABILITY_TABLE).

type reliabilityRow struct {
	Fault    string
	Strategy string
	Reads    readStats
	// DataLost is "none", or what a workload lost.
	DataLost string
	// Recovery is from the fault's end until the API's content was on
	// disk for every volume; zero when the row has none to measure.
	Recovery time.Duration
	// Requests says what the agent sent during and after the fault,
	// against before it.
	Requests string
	// Test is the test that measured it, for `go test -run`.
	Test string
}

var reliability struct {
	mu   sync.Mutex
	rows []reliabilityRow
}

func recordReliability(t *testing.T, row reliabilityRow) {
	t.Helper()
	row.Test = t.Name()
	t.Logf("reliability: %s (%s): reads %s; data lost: %s; recovery %s; requests: %s",
		row.Fault, row.Strategy, row.Reads, row.DataLost, row.Recovery.Round(time.Millisecond), row.Requests)
	reliability.mu.Lock()
	defer reliability.mu.Unlock()
	reliability.rows = append(reliability.rows, row)
}

// writeReliabilityTable writes the rows recorded, if any, as the Markdown
// table of docs/reliability.md and as rows.json beside it, which
// `go run ./hack/docruns record -kind reliability` keeps for the docs.
func writeReliabilityTable() error {
	reliability.mu.Lock()
	defer reliability.mu.Unlock()
	if len(reliability.rows) == 0 {
		return nil
	}
	path := os.Getenv("NODEAGENT_RELIABILITY_TABLE")
	if path == "" {
		path = filepath.Join("..", "..", "_output", "reliability", "table.md")
	}
	rows := make([]faulttable.Row, 0, len(reliability.rows))
	for _, r := range reliability.rows {
		rows = append(rows, faulttable.Row{Fault: r.Fault, Strategy: r.Strategy, Reads: r.Reads.Reads, BadReads: r.Reads.Bad(),
			DataLost: r.DataLost, RecoverySeconds: r.Recovery.Seconds(), Requests: r.Requests, Test: r.Test})
	}
	data, err := json.MarshalIndent(map[string][]faulttable.Row{"rows": rows}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(faulttable.Markdown(rows)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "rows.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Printf("reliability table (%d rows) written to %s and rows.json beside it\n", len(reliability.rows), path)
	return nil
}

// requireRoot skips a test that needs root, saying why.
func requireRoot(t *testing.T, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("skipped: %s needs root (uid 0); run `make e2e` as root to include it", why)
	}
}

// daemonSetCapabilities runs the agent with the capabilities the
// DaemonSet gives it (deploy/base/daemonset.yaml: CHOWN and FSETID, all
// others dropped), so that file permissions bind it as they do in a
// cluster. It needs root and setpriv (util-linux).
func daemonSetCapabilities(t *testing.T) []string {
	t.Helper()
	path, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skipf("skipped: setpriv (util-linux) is not installed, so the agent cannot run with the DaemonSet's capabilities")
	}
	return []string{path, "--bounding-set=-all,+chown,+fsetid", "--inh-caps=-all", "--"}
}

// mountTmpfs mounts a tmpfs of size bytes on a new directory, unmounted at
// the end of the test.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("skipped: mounting a tmpfs failed (%v: %s); the disk faults need a machine that allows mounts", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// podEvents returns the messages of the events of reason on a pod.
func podEvents(t *testing.T, ns, pod, reason string) []string {
	t.Helper()
	events, err := clientset.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events.Items {
		if e.Reason == reason && e.InvolvedObject.Name == pod {
			out = append(out, e.Message)
		}
	}
	return out
}

// debugVolumes reads the agent's /debug/volumes.
func (a *agentProcess) debugVolumes() ([]core.VolumeStatus, error) {
	resp, err := http.Get("http://" + a.httpAddr + "/debug/volumes")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Volumes []core.VolumeStatus `json:"volumes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	return body.Volumes, nil
}
