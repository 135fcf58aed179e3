//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// shutdownGrace is what each daemon gets to exit after SIGTERM: the
// terminationGracePeriodSeconds of the chart's and the overlays' pods.
const shutdownGrace = 10 * time.Second

// Every daemon exits within its pod's grace period when SIGTERM comes while
// the apiserver hangs: accepted connections, no answer, as an apiserver
// behind a dead load balancer. The agent has a volume's GET in flight
// (strategy Get, a sync a second), the driver a watch, analyze --serve its
// informers and the webhook its certificate checks; none may wait for the
// apiserver's answer (a GET's own bound is 30 s).
func TestShutdownWithAHungAPIServer(t *testing.T) {
	const node = "node-shutdown"
	createNode(t, node, 0)
	ns := createNamespace(t, "shutdown")
	createConfigMap(t, ns, "cfg", map[string]string{"a": "1"})
	createConfigMap(t, ns, "cm-0", map[string]string{"a": "1"}) // the driver's volume (publishAsKubelet)
	pod := createPod(t, ns, "p", node, volume{name: "v", configMap: "cfg"})
	proxy, nodeKubeconfig := startFaultProxy(t, node)
	adminKubeconfig := proxiedAdminKubeconfig(t, proxy)

	a := startAgentOpts(t, agentOptions{node: node, kubeconfig: nodeKubeconfig,
		args: []string{"--" + agent.FlagConfigMapStrategy + "=Get", "--" + agent.FlagSyncFrequency + "=1s"}})
	a.waitForFile(a.volumePath(pod, "v", "a"), "1", 30*time.Second)
	daemons := map[string]*controlplane.Process{
		"csi":             startDriverWithAVolume(t, adminKubeconfig, ns),
		"analyze --serve": startAnalyzeServe(t, adminKubeconfig),
		"webhook":         startSelfSignedWebhook(t, adminKubeconfig, ns),
	}

	gets := func() float64 { return a.metrics().Sum(agent.MetricConfigMapGets, nil) }
	proxy.addToxic(t, `{"type": "timeout", "stream": "upstream", "attributes": {"timeout": 0}}`)
	before := gets()
	testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
		if gets() == before {
			return fmt.Errorf("no GET sent since the apiserver hung")
		}
		return nil
	})

	daemons["agent"] = a.proc
	for name, proc := range daemons {
		if err := proc.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var waits sync.WaitGroup
	for name, proc := range daemons {
		waits.Go(func() {
			if !proc.WaitExit(shutdownGrace) {
				t.Errorf("%s still runs %s after SIGTERM, with the apiserver hung", name, shutdownGrace)
			}
		})
	}
	waits.Wait()
}

// proxiedAdminKubeconfig is a kubeconfig of the control plane's admin that
// goes through proxy.
func proxiedAdminKubeconfig(t *testing.T, proxy *faultProxy) string {
	t.Helper()
	cfg := rest.CopyConfig(cp.RESTConfig())
	cfg.Host = "https://" + proxy.proxy.Listen
	path := filepath.Join(t.TempDir(), "admin-proxied.kubeconfig")
	if err := controlplane.WriteKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

// startDriverWithAVolume runs `nodeagent csi` and publishes a volume of the
// ConfigMap cfg, so that it holds a watch.
func startDriverWithAVolume(t *testing.T, kubeconfig, ns string) *controlplane.Process {
	t.Helper()
	dir, err := os.MkdirTemp("", "csi") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "csi.sock")
	proc := startBare(t, "nodeagent csi", e2eutil.NodeagentBinary(t), []string{"csi", "--kubeconfig=" + kubeconfig,
		"--node-name=node-shutdown", "--endpoint=" + socket, "--state-dir=" + filepath.Join(dir, "state"), "--register=false",
		"--http-address=", "--read-as=driver"}, filepath.Join(dir, "csi.log"))
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
		_, err := os.Stat(socket)
		return err
	})
	publishAsKubelet(t, csi.NewNodeClient(conn), dir, ns, 0)
	return proc
}

// startAnalyzeServe runs analyze --serve and waits for its first report.
func startAnalyzeServe(t *testing.T, kubeconfig string) *controlplane.Process {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	proc := startBare(t, "analyze --serve", e2eutil.NodeagentBinary(t),
		[]string{"analyze", "--kubeconfig=" + kubeconfig, "--read-configz=false", "--serve=" + addr}, filepath.Join(t.TempDir(), "analyze.log"))
	waitReady(t, addr, 60*time.Second)
	return proc
}

// startSelfSignedWebhook runs the webhook keeping its own certificate in
// ns, for a configuration of no webhooks, checked every 3 s, and waits for
// its Secret.
func startSelfSignedWebhook(t *testing.T, kubeconfig, ns string) *controlplane.Process {
	t.Helper()
	configurations := clientset.AdmissionregistrationV1().MutatingWebhookConfigurations()
	config, err := configurations.Create(context.Background(), &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "shutdown-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = configurations.Delete(context.Background(), config.Name, metav1.DeleteOptions{}) })
	proc := startBare(t, "webhook", e2eutil.NodeagentBinary(t), []string{"webhook", "--kubeconfig=" + kubeconfig,
		"--namespace=" + ns, "--webhook-configuration=" + config.Name, "--cert-lifetime=30s",
		"--address=127.0.0.1:" + strconv.Itoa(freePort(t))}, filepath.Join(t.TempDir(), "webhook.log"))
	testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
		_, err := clientset.CoreV1().Secrets(ns).Get(context.Background(), "nodeagent-webhook-tls", metav1.GetOptions{})
		return err
	})
	return proc
}
