//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/pkg/report"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// agentOnlyBinary is the image's build beside the binary under test
// (make build writes both), whose memory the image's agents have.
func agentOnlyBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(e2eutil.NodeagentBinary(t)), "nodeagent-agent")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v; run `make build`", bin, err)
	}
	return bin
}

// TestCSIDriverIdleCost measures what the CSI driver costs a node that
// changes nothing: the image's build (`nodeagent-agent csi`) against the
// local apiserver, with 110 volumes published as the kubelet publishes
// them (one per pod, the kubelet's maximum of pods, each reading a
// ConfigMap of its own), then 30 s of nothing: its CPU, resident memory
// and peak, written to _output/tables/csi-idle.json for docs/csi.md. The
// bounds only catch a regression by an order of magnitude; the figures are
// the record's. A measurement, not a check: it runs in `make idle`
// (NODEAGENT_MEASURE_IDLE=1), not in make test.
func TestCSIDriverIdleCost(t *testing.T) {
	if os.Getenv("NODEAGENT_MEASURE_IDLE") == "" {
		t.Skip("skipped: a measurement of 30 s idle; make idle runs it (NODEAGENT_MEASURE_IDLE=1)")
	}
	const volumes = 110
	ns := createNamespace(t, "csi-cost")
	dir, err := os.MkdirTemp("", "csi") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "csi.sock")
	args := []string{"csi", "--kubeconfig=" + cp.KubeconfigPath, "--node-name=node-csi", "--endpoint=" + socket,
		"--state-dir=" + filepath.Join(dir, "state"), "--register=false", "--http-address=", "--read-as=driver", "-v=2"}
	proc := startBare(t, "nodeagent-csi", agentOnlyBinary(t), args, filepath.Join(dir, "csi.log"))
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	node := csi.NewNodeClient(conn)

	for i := range volumes {
		createConfigMap(t, ns, fmt.Sprintf("cm-%d", i), map[string]string{"config.yaml": strings.Repeat("x", 1024)})
	}
	start := time.Now()
	for i := range volumes {
		publishAsKubelet(t, node, dir, ns, i)
	}
	t.Logf("%d volumes published in %s", volumes, time.Since(start).Round(100*time.Millisecond))

	const window = 30 * time.Second
	cpu0, _, _ := procStats(t, proc.Pid())
	time.Sleep(window)
	cpu1, rss, peak := procStats(t, proc.Pid())
	cores := (cpu1 - cpu0).Seconds() / window.Seconds()
	t.Logf("idle driver with %d volumes: CPU %.4f cores, RSS %.1f MiB, peak RSS %.1f MiB", volumes, cores, float64(rss)/(1<<20), float64(peak)/(1<<20))
	if cores > 0.25 || rss > 256<<20 {
		t.Errorf("idle cost regressed: %.3f cores, %.0f MiB", cores, float64(rss)/(1<<20))
	}
	writeDocTable(t, "csi-idle", report.Table{
		Header: []string{"volumes", "ConfigMaps watched", "window", "CPU", "resident memory", "peak"},
		Rows: [][]string{{strconv.Itoa(volumes), strconv.Itoa(volumes), window.String(), fmt.Sprintf("%.1f millicores", 1000*cores),
			fmt.Sprintf("%.1f MiB", float64(rss)/(1<<20)), fmt.Sprintf("%.1f MiB", float64(peak)/(1<<20))}},
	})
}

// publishAsKubelet publishes volume i of its own pod as the kubelet does:
// the target's parent made first, the pod named in the volume context.
func publishAsKubelet(t *testing.T, node csi.NodeClient, dir, ns string, i int) {
	t.Helper()
	if err := publishVolume(node, dir, ns, i, "default", nil); err != nil {
		t.Fatalf("publishing volume %d: %v", i, err)
	}
}

// publishVolume publishes volume i (ConfigMap cm-<i>) of pod pod-<i>,
// whose service account is serviceAccount, with extra in its volume
// context (the pod's tokens).
func publishVolume(node csi.NodeClient, dir, ns string, i int, serviceAccount string, extra map[string]string) error {
	_, err := publishAttrs(node, dir, ns, i, serviceAccount, map[string]string{"configMap": fmt.Sprintf("cm-%d", i)}, extra)
	return err
}

// publishAttrs publishes the volume of pod pod-<i> (uid uid-<i>), whose
// service account is serviceAccount, with attrs, the pod's attributes and
// extra in its volume context, as the kubelet does: the target's parent
// made first. It returns the target path.
func publishAttrs(node csi.NodeClient, dir, ns string, i int, serviceAccount string, attrs, extra map[string]string) (string, error) {
	uid := fmt.Sprintf("uid-%d", i)
	parent := filepath.Join(dir, "pods", uid, "volumes", "kubernetes.io~csi", "cfg")
	if err := os.MkdirAll(parent, 0o750); err != nil {
		return "", err
	}
	volumeContext := map[string]string{
		"csi.storage.k8s.io/pod.name": "pod-" + strconv.Itoa(i), "csi.storage.k8s.io/pod.namespace": ns,
		"csi.storage.k8s.io/pod.uid": uid, "csi.storage.k8s.io/serviceAccount.name": serviceAccount, "csi.storage.k8s.io/ephemeral": "true"}
	maps.Copy(volumeContext, attrs)
	maps.Copy(volumeContext, extra)
	target := filepath.Join(parent, "mount")
	_, err := node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: "csi-" + uid, TargetPath: target, Readonly: true,
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY},
		},
		VolumeContext: volumeContext,
	})
	return target, err
}

// startBare runs binary with args as a process of its own, logging to
// logPath, until the test ends: then SIGTERM, 20 s to exit, and the end of
// its log if the test failed.
func startBare(t *testing.T, name, binary string, args []string, logPath string) *controlplane.Process {
	t.Helper()
	proc, err := controlplane.StartProcess(name, binary, args, logPath, controlplane.ProcessOptions{Bare: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = proc.Signal(syscall.SIGTERM)
		if !proc.WaitExit(20 * time.Second) {
			t.Errorf("%s did not exit 20 s after SIGTERM", name)
		}
		proc.Stop(0)
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", name, lastLines(data, 40))
		}
	})
	return proc
}
