//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/nodeidentity"
)

// underLoadFault is a control-plane or network fault injected while
// ConfigMaps change.
type underLoadFault struct {
	name string
	// inject starts the fault and returns what ends it.
	inject func(t *testing.T, proxy *faultProxy) (lift func())
}

const faultHold = 8 * time.Second

var underLoadFaults = []underLoadFault{
	{"apiserver restart", func(t *testing.T, _ *faultProxy) func() {
		cp.StopAPIServer()
		return func() { mustStart(t, cp.StartAPIServer) }
	}},
	{"etcd restart", func(t *testing.T, _ *faultProxy) func() {
		return func() { mustStart(t, cp.RestartEtcd) }
	}},
	{"agent cut off; etcd compacted past its watches and the apiserver restarted behind it", func(t *testing.T, p *faultProxy) func() {
		restore := p.cutOff(t)
		return func() {
			compactEtcd(t)
			mustStart(t, cp.RestartAPIServer)
			restore()
		}
	}},
	{"1 s latency each way", func(t *testing.T, p *faultProxy) func() {
		down := p.addToxic(t, `{"type":"latency","stream":"downstream","attributes":{"latency":1000,"jitter":200}}`)
		up := p.addToxic(t, `{"type":"latency","stream":"upstream","attributes":{"latency":1000,"jitter":200}}`)
		return func() { down(); up() }
	}},
	{"bandwidth 4 KB/s", func(t *testing.T, p *faultProxy) func() {
		return p.addToxic(t, `{"type":"bandwidth","stream":"downstream","attributes":{"rate":4}}`)
	}},
	{"connections stall, closed after 5 s (timeout)", func(t *testing.T, p *faultProxy) func() {
		return p.addToxic(t, `{"type":"timeout","stream":"downstream","attributes":{"timeout":5000}}`)
	}},
	{"connections reset (TCP RST)", func(t *testing.T, p *faultProxy) func() {
		return p.addToxic(t, `{"type":"reset_peer","stream":"downstream","attributes":{"timeout":0}}`)
	}},
}

func mustStart(t *testing.T, start func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := start(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFaultsUnderLoad runs the watch strategy's agent, connected through a
// toxiproxy on loopback, while four ConfigMaps mounted by eight pods change
// forty times a second, and puts it through control-plane and network
// faults one after the other: apiserver and etcd restarts, an etcd
// compaction that makes its watches resume too old, latency, a bandwidth
// limit, stalled connections and resets. For each: a reader checks every
// volume throughout, the volumes converge to the API once the fault is
// lifted, and the agent's connections and ConfigMap requests during and
// after are counted against before, so that a reconnect storm would show.
func TestFaultsUnderLoad(t *testing.T) {
	ns := createNamespace(t, "under-load")
	node := "node-under-load"
	createNode(t, node, 2)
	proxy, kubeconfig := startFaultProxy(t, node)
	const keys, size = 4, 1 << 10
	names := []string{"load-0", "load-1", "load-2", "load-3"}
	for _, name := range names {
		createConfigMap(t, ns, name, generationData(1, keys, size))
	}
	a := startAgentOpts(t, agentOptions{node: node, kubeconfig: kubeconfig, args: []string{"--configmap-strategy=Watch", "--sync-frequency=2s"}})
	dirs, volumeOf := map[string][]string{}, map[string]string{}
	for i := range 8 {
		pod := createPod(t, ns, fmt.Sprintf("app-%d", i), node, volume{name: "cfg", configMap: names[i%len(names)]})
		dir := a.volumePath(pod, "cfg", "")
		dirs[dir], volumeOf[dir] = keyNames(keys), names[i%len(names)]
	}
	for dir := range dirs {
		waitForGeneration(t, dir, 1, 30*time.Second)
	}
	user := nodeidentity.User(node)
	const window = 10 * time.Second
	for _, fault := range underLoadFaults {
		t.Run(fault.name, func(t *testing.T) {
			reader := startReader(dirs)
			storm := startStorm(t, ns, names, keys, size, 40, 4)
			baselineFrom := time.Now()
			time.Sleep(window)
			faultFrom, connectionsBefore := time.Now(), proxy.connections.n.Load()
			lift := fault.inject(t, proxy)
			time.Sleep(faultHold)
			lift()
			last := storm.stop(t)
			lifted := time.Now()
			for dir := range dirs {
				waitForGeneration(t, dir, last[volumeOf[dir]], 2*time.Minute)
			}
			recovery := time.Since(lifted)
			connectionsDuring := proxy.connections.n.Load() - connectionsBefore
			afterFrom := time.Now()
			time.Sleep(window)
			afterTo, connectionsAfter := time.Now(), proxy.connections.n.Load()-connectionsBefore-connectionsDuring
			stats := reader.stop()
			for _, p := range stats.Problems {
				t.Errorf("reader: %s", p)
			}
			counts, err := auditlog.CountWindows(cp.AuditLogPath(),
				auditlog.Window{From: baselineFrom, To: faultFrom}, auditlog.Window{From: faultFrom, To: afterFrom}, auditlog.Window{From: afterFrom, To: afterTo})
			if err != nil {
				t.Fatal(err)
			}
			before, during, after := counts[0][user], counts[1][user], counts[2][user]
			requests := func(c auditlog.Counts) int { return c.Gets() + c.QuorumLists + c.CacheLists + c.Watches }
			summary := fmt.Sprintf("ConfigMap requests: %d in %s before, %d during and recovering (%d lists, %d of them quorum, %d watches), %d in %s after; connections: %d during, %d after",
				requests(before), window, requests(during), during.QuorumLists+during.CacheLists, during.QuorumLists, during.Watches, requests(after), window, connectionsDuring, connectionsAfter)
			t.Logf("%s: recovered in %s; %s; reader: %s", fault.name, recovery.Round(time.Millisecond), summary, stats)
			// A reconnect storm is a tight loop: hundreds of requests or
			// connections a second. The agent's reflectors back off; what
			// reaches the apiserver is one list and one watch per ConfigMap
			// for each reconnect.
			if n := requests(during) + requests(after); n > 20*len(names) {
				t.Errorf("%d ConfigMap requests during and after the fault, for %d ConfigMaps: a reconnect storm", n, len(names))
			}
			// While the apiserver cannot be reached, client-go's REST
			// client retries each broken watch ten times, 1 s apart, then
			// the reflector backs off and starts again: about one
			// connection a second for each of the agent's watches (pods,
			// its node, each ConfigMap), for as long as the fault and the
			// apiserver's start take. Twice that is the bound.
			watches := 2 + len(names)
			outage := afterFrom.Sub(faultFrom).Seconds()
			if limit := int64(2 * float64(watches) * outage); connectionsDuring > limit {
				t.Errorf("%d connections in the %.1f s of the fault and its recovery, more than %d (two a second for each of %d watches): a reconnect storm",
					connectionsDuring, outage, limit, watches)
			}
			if connectionsAfter > int64(watches) {
				t.Errorf("%d connections in the %s after recovery, more than one for each of %d watches", connectionsAfter, window, watches)
			}
			recordReliability(t, reliabilityRow{Fault: fmt.Sprintf("%s, %s, during %s", fault.name, faultHold, storm),
				Strategy: "watch", Reads: stats, DataLost: stats.Lost(), Recovery: recovery, Requests: summary})
		})
	}
}
