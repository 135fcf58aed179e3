//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/report"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// The load of TestCSIDriverUnderLoad: loadVolumes volumes on one node,
// half of them secret volumes, each reading an object of its own, whose
// updates come at loadUpdateRate a second in all over loadWindow.
const (
	loadVolumes    = 1000
	loadUpdateRate = 100.0
	loadWindow     = 60 * time.Second
	// loadPoll is how often every file is read besides the reads inotify
	// prompts: coarse, so that the measurement takes little of the CPU
	// the driver is measured on.
	loadPoll = 500 * time.Millisecond
	// loadProfileAddress serves the driver's metrics, and its profiles
	// where $NODEAGENT_CSI_LOAD_PROFILES names a directory for them.
	loadProfileAddress = "127.0.0.1:10399"
)

// TestCSIDriverUnderLoad measures one node's driver in its Secrets mode
// (the image's build, `nodeagent-agent csi --read-as=pod --secrets`)
// serving loadVolumes volumes, published through its CSI socket as the
// kubelet publishes them (each with its pod's token), half of them secret
// volumes on their tmpfs, under loadUpdateRate updates a second: the delay
// from each update's sending to its content in the volume's file (median,
// p99, longest, by kind of volume), the apiserver's update requests, the
// driver's share (its own histogram of the changes its volumes read, from
// the watch's delivery to the files), and the driver's CPU and resident
// memory over the window, written to _output/tables/csi-load.json for
// docs/csi.md. A measurement, not a check: `make csi-load` runs it
// (NODEAGENT_MEASURE_CSI_LOAD=1, as root, for the tmpfs mounts), with the
// driver's CPU and heap profiles where $NODEAGENT_CSI_LOAD_PROFILES names
// a directory for them.
func TestCSIDriverUnderLoad(t *testing.T) {
	if os.Getenv("NODEAGENT_MEASURE_CSI_LOAD") == "" {
		t.Skip("skipped: a measurement of a minute under load; make csi-load runs it (NODEAGENT_MEASURE_CSI_LOAD=1)")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: the Secrets mode mounts a tmpfs per secret volume, which needs root")
	}
	ns := createNamespace(t, "csi-load")
	client := loadClient(t)
	names := loadObjects(t, client, ns)
	profiles := os.Getenv("NODEAGENT_CSI_LOAD_PROFILES")
	args := []string{"--secrets", "-v=1", "--http-address=" + loadProfileAddress}
	if profiles != "" {
		args = append(args, "--profiling")
	}
	driver := startReadAsPodDriver(t, ns, "node-load", args...)
	proc, node, dir := driver.proc, driver.node, driver.dir
	files := publishLoad(t, node, dir, ns, names)

	cpu0, _, _ := procStats(t, proc.Pid())
	changes0 := driverChangeReads(t, loadProfileAddress)
	start := time.Now()
	runs := loadRuns(client, ns, names)
	if profiles != "" {
		go profileLoad(t, profiles)
	}
	var measured, writes [2][]float64
	var g errgroup.Group
	for i, run := range runs {
		g.Go(func() error {
			m, err := run.MeasureMeter(context.Background(), files[i])
			if err == nil {
				measured[i], writes[i] = m.Result()[kindOf(run)], m.Writes()
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	cpu1, rss, peak := procStats(t, proc.Pid())
	share := changeReadCell(t, driverChangeReads(t, loadProfileAddress).since(changes0))
	cores := (cpu1 - cpu0).Seconds() / elapsed.Seconds()
	sent := runs[0].Sent(t) + runs[1].Sent(t)
	t.Logf("%d updates over %s (%.1f a second), all in their volumes %s after the start; the driver over that time: CPU %.1f millicores, RSS %.1f MiB, peak %.1f MiB",
		sent, loadWindow, float64(sent)/loadWindow.Seconds(), elapsed.Round(100*time.Millisecond), 1000*cores, float64(rss)/(1<<20), float64(peak)/(1<<20))
	table := report.Table{Header: []string{"volumes", "updates a second", "delays measured", "median", "p99", "longest",
		"the apiserver's update request: median", "p99", "the driver's share: median / p99", "driver CPU", "resident memory", "peak"}}
	for i, run := range runs {
		row := loadRow(t, run, measured[i], writes[i], cores, rss, peak)
		table.Rows = append(table.Rows, slices.Insert(row, 8, share))
	}
	writeDocTable(t, "csi-load", table)
}

// kindOf is the kind of volume a run's updates reach, its files' group.
func kindOf(run e2eutil.DelayRun) string {
	if run.Secrets {
		return "secret"
	}
	return "configMap"
}

// loadObjects makes loadVolumes/2 ConfigMaps and as many Secrets, each
// holding DelayValueKey "0", the service account "reader" that may read
// them all and "driver" that may read none, and returns the objects'
// names: load-<i>, a ConfigMap and a Secret of each.
func loadObjects(t *testing.T, client kubernetes.Interface, ns string) []string {
	t.Helper()
	ctx := context.Background()
	for _, sa := range []string{"driver", "reader"} {
		if _, err := clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e2eutil.GrantReads(t, clientset, ns, "reader", "configmaps")
	e2eutil.GrantReads(t, clientset, ns, "reader", "secrets")
	names := make([]string, loadVolumes/2)
	for i := range names {
		names[i] = fmt.Sprintf("load-%d", i)
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: names[i]},
			Data: map[string]string{e2eutil.DelayValueKey: "0"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: names[i]},
			Data: map[string][]byte{e2eutil.DelayValueKey: []byte("0")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// publishLoad publishes a configMap volume and a secret volume of each
// name, each of a pod of its own with the reader's token, and returns
// each kind's files: the ConfigMaps' first, then the Secrets'. Every
// volume is unpublished when the test ends, which unmounts its tmpfs.
func publishLoad(t *testing.T, node csi.NodeClient, dir, ns string, names []string) [2][]e2eutil.DelayFile {
	t.Helper()
	tokens := podTokens(t, ns, "reader")
	var files [2][]e2eutil.DelayFile
	start := time.Now()
	// As the kubelet's operation executor, which publishes the volumes of
	// different pods at once.
	var g errgroup.Group
	g.SetLimit(8)
	for k, attr := range []string{"configMap", "secret"} {
		files[k] = make([]e2eutil.DelayFile, len(names))
		for i, name := range names {
			pod := k*len(names) + i
			target := filepath.Join(dir, "pods", "uid-"+strconv.Itoa(pod), "volumes", "kubernetes.io~csi", "cfg", "mount")
			files[k][i] = e2eutil.DelayFile{Group: attr, Object: i, Path: filepath.Join(target, e2eutil.DelayValueKey)}
			t.Cleanup(func() {
				if _, err := node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{
					VolumeId: "csi-uid-" + strconv.Itoa(pod), TargetPath: target}); err != nil {
					t.Errorf("unpublishing %s: %v", target, err)
				}
			})
			g.Go(func() error {
				if _, err := publishAttrs(node, dir, ns, pod, "reader", map[string]string{attr: name}, tokens); err != nil {
					return fmt.Errorf("publishing %s volume %d: %w", attr, i, err)
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d volumes published in %s, eight at a time", 2*len(names), time.Since(start).Round(100*time.Millisecond))
	return files
}

// loadClient is an admin client whose rate limit is above what the
// benchmark sends (the objects' creation, the updates).
func loadClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	config := cp.RESTConfig()
	config.QPS, config.Burst = 4*loadUpdateRate, 4*loadUpdateRate
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// loadRuns are the update runs of the ConfigMaps and of the Secrets,
// together loadUpdateRate updates a second.
func loadRuns(client kubernetes.Interface, ns string, names []string) [2]e2eutil.DelayRun {
	// Each object's updates come at loadUpdateRate/loadVolumes a second.
	gap := time.Duration(float64(loadVolumes) / loadUpdateRate * float64(time.Second))
	configMaps := e2eutil.DelayRun{Client: client, Namespace: ns, Objects: names, Window: loadWindow, MeanGap: gap, Poll: loadPoll, Longest: 10 * time.Second}
	secrets := configMaps
	secrets.Secrets = true
	return [2]e2eutil.DelayRun{configMaps, secrets}
}

// loadRow logs and returns one kind's row of the table: its delays, and
// its update requests' durations to the apiserver's response (writes),
// the part of a delay that is the apiserver's and etcd's on this machine.
func loadRow(t *testing.T, run e2eutil.DelayRun, delays, writes []float64, cores float64, rss, peak int64) []string {
	t.Helper()
	kind := kindOf(run)
	slices.Sort(delays)
	slices.Sort(writes)
	if len(delays) == 0 || len(writes) == 0 {
		t.Fatalf("%s volumes: %d delays and %d update requests measured", kind, len(delays), len(writes))
	}
	median, p99, longest := model.Quantile(delays, 0.5), model.Quantile(delays, 0.99), delays[len(delays)-1]
	writeMedian, writeP99 := model.Quantile(writes, 0.5), model.Quantile(writes, 0.99)
	t.Logf("%s volumes: %d delays, median %.1f ms, p99 %.1f ms, longest %.1f ms; the update requests: median %.1f ms, p99 %.1f ms",
		kind, len(delays), 1000*median, 1000*p99, 1000*longest, 1000*writeMedian, 1000*writeP99)
	ms := func(v float64) string { return fmt.Sprintf("%.1f ms", 1000*v) }
	return []string{fmt.Sprintf("%d %s volumes (of %d)", loadVolumes/2, kind, loadVolumes), fmt.Sprintf("%.1f", float64(run.Sent(t))/loadWindow.Seconds()),
		strconv.Itoa(len(delays)), ms(median), ms(p99), ms(longest), ms(writeMedian), ms(writeP99), fmt.Sprintf("%.0f millicores", 1000*cores),
		fmt.Sprintf("%.1f MiB", float64(rss)/(1<<20)), fmt.Sprintf("%.1f MiB", float64(peak)/(1<<20))}
}

// profileLoad writes the driver's CPU profile of the load's window, less
// its first and last five seconds, what it allocated over the same time,
// and its heap at the end, into dir: cpu.pprof, allocs.pprof and
// heap.pprof, for go tool pprof.
func profileLoad(t *testing.T, dir string) {
	fetch := func(name, query string) {
		resp, err := http.Get("http://" + loadProfileAddress + "/debug/pprof/" + query)
		if err != nil {
			t.Logf("profile %s: %v", name, err)
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), data, 0o644)
		}
		if err != nil {
			t.Logf("profile %s: %v", name, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("profiles: %v", err)
		return
	}
	time.Sleep(5 * time.Second)
	seconds := int((loadWindow - 10*time.Second).Seconds())
	done := make(chan struct{})
	go func() {
		defer close(done)
		fetch("allocs.pprof", fmt.Sprintf("allocs?seconds=%d", seconds))
	}()
	fetch("cpu.pprof", fmt.Sprintf("profile?seconds=%d", seconds))
	<-done
	fetch("heap.pprof", "heap")
}
