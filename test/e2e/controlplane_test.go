//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/internal/testutil"
)

func TestControlPlaneIsTheRealOne(t *testing.T) {
	// The written kubeconfig is what users and the agent get: use it, not
	// the in-memory config.
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != controlplane.KubernetesVersion || v.Major != "1" || v.Minor != "37" {
		t.Errorf("server version: got %s (major %q minor %q), want %s", v.GitVersion, v.Major, v.Minor, controlplane.KubernetesVersion)
	}
	// RBAC is on: an unknown identity is refused, and the authorizer says so.
	anon := cp.RESTConfig()
	anon.CertFile, anon.KeyFile = "", ""
	anonClient := kubernetes.NewForConfigOrDie(anon)
	_, err = anonClient.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		t.Errorf("anonymous list of configmaps: got %v, want Forbidden or Unauthorized", err)
	}
}

// The fact nodeagent is built on: a GET without resourceVersion is a quorum
// read that reaches etcd; a GET with resourceVersion "0" is served from the
// apiserver's watch cache. Both count in apiserver_request_total.
func TestConfigMapGetQuorumVersusWatchCache(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, "quorum")
	cms := clientset.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "probe"},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The watch cache may lag the create by a moment; wait for it with
	// GETs at resourceVersion 0 before measuring anything.
	testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
		_, err := cms.Get(ctx, "probe", metav1.GetOptions{ResourceVersion: "0"})
		return err
	})

	// The apiserver's own controllers read a ConfigMap now and then; such a
	// read can only add to a count. Measure again if one did, up to 3 times.
	var quorum, cached [2]float64 // apiserver, etcd deltas
	for attempt := 1; attempt <= 3; attempt++ {
		before := scrapeAPIServer(t)
		if _, err := cms.Get(ctx, "probe", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		afterQuorum := scrapeAPIServer(t)
		if _, err := cms.Get(ctx, "probe", metav1.GetOptions{ResourceVersion: "0"}); err != nil {
			t.Fatal(err)
		}
		afterCached := scrapeAPIServer(t)
		quorum = [2]float64{afterQuorum.APIServerConfigMapGets() - before.APIServerConfigMapGets(), afterQuorum.EtcdConfigMapGets() - before.EtcdConfigMapGets()}
		cached = [2]float64{afterCached.APIServerConfigMapGets() - afterQuorum.APIServerConfigMapGets(), afterCached.EtcdConfigMapGets() - afterQuorum.EtcdConfigMapGets()}
		if quorum == [2]float64{1, 1} && cached == [2]float64{1, 0} {
			break
		}
		t.Logf("attempt %d: quorum read counted %v, cached read %v; measuring again", attempt, quorum, cached)
	}
	assertDelta(t, "apiserver GETs for the quorum read", quorum[0], 1)
	assertDelta(t, "etcd gets for the quorum read", quorum[1], 1)
	assertDelta(t, "apiserver GETs for the resourceVersion=0 read", cached[0], 1)
	assertDelta(t, "etcd gets for the resourceVersion=0 read", cached[1], 0)
}

func TestControlPlaneSurvivesRestarts(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, "restart")
	cms := clientset.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if err := cp.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver restarted in %s", time.Since(start).Round(time.Millisecond))
	if _, err := cms.Get(ctx, "before", metav1.GetOptions{}); err != nil {
		t.Fatalf("after apiserver restart: %v", err)
	}

	start = time.Now()
	if err := cp.RestartEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd restarted in %s", time.Since(start).Round(time.Millisecond))
	// The apiserver reports ready a moment before its etcd client has
	// reconnected everywhere; the data must come back within seconds.
	testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
		_, err := cms.Get(ctx, "before", metav1.GetOptions{})
		return err
	})
	testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	// kube-root-ca.crt is root-ca-cert-publisher's, in every namespace.
	if got, want := strings.Join(names, ","), "after,before,"+controlplane.RootCAConfigMap; got != want {
		t.Errorf("configmaps after restarts: got %q, want %q", got, want)
	}
}

func TestStartWithoutBinariesSaysWhatToDo(t *testing.T) {
	_, err := controlplane.Start(context.Background(), controlplane.Options{BinDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "make controlplane") {
		t.Fatalf("got %v, want an error that says to run make controlplane", err)
	}
}

func TestStopLeavesNothingBehind(t *testing.T) {
	ctx := context.Background()
	second, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second control plane ready in %s", second.StartupDuration.Round(time.Millisecond))
	pids := childPIDs(t, second.Dir)
	if len(pids) != 3 {
		t.Fatalf("found %d processes using %s, want 3 (etcd, kube-apiserver and kube-controller-manager)", len(pids), second.Dir)
	}
	second.Stop()
	second.Stop() // twice is fine
	for _, pid := range pids {
		if _, err := os.Stat(filepath.Join("/proc", pid)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("process %s still exists after Stop", pid)
		}
	}
	if _, err := os.Stat(second.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s still exists after Stop", second.Dir)
	}
}
