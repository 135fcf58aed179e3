//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/pkg/apimetrics"
)

// createNamespace creates a namespace with a generated name, waits until
// pods can be admitted there (its ServiceAccount and kube-root-ca.crt
// exist), and deletes it when the test ends.
func createNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := clientset.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := controlplane.WaitForServiceAccount(context.Background(), clientset, ns.Name, time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = clientset.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

func scrapeAPIServer(t *testing.T) *apimetrics.Snapshot {
	t.Helper()
	s, err := apimetrics.ScrapeAPIServer(context.Background(), clientset.CoreV1().RESTClient())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func assertDelta(t *testing.T, what string, got, want float64) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

// pollInterval is how often the e2e tests check a condition they wait for
// (testutil.Eventually).
const pollInterval = 100 * time.Millisecond

// childPIDs lists processes whose command line mentions dir.
func childPIDs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		if strings.Trim(e.Name(), "0123456789") == "" {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
