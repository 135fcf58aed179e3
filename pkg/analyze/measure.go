package analyze

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/nodeagent-io/nodeagent/pkg/apimetrics"
	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/nodeidentity"
)

// Measured is what the apiserver counted over a window, by kind.
type Measured struct {
	Kinds
	// WindowSeconds is the window's length, From and To its ends.
	WindowSeconds float64   `json:"windowSeconds"`
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
	// Caveat says what the figures include beyond the kubelets.
	Caveat string `json:"caveat"`
}

// measuredCaveat is the plain truth about the apiserver's counters.
const measuredCaveat = "the apiserver's own counters: every client's requests count, not only the kubelets'; " +
	"quorumGetsPerSecond is etcd's reads, each quorum GET being one; with several apiservers these are one instance's figures"

// resources are the API resources behind each kind, as the apiserver's
// metrics and audit log name them.
var resources = [...]string{"configmaps", "secrets"}

// Measure reads the apiserver's /metrics at the start and end of a window
// of d and returns the ConfigMap and Secret request rates over it. tick,
// if set, is called every ten seconds with the time left.
func Measure(ctx context.Context, client rest.Interface, d time.Duration, tick func(left time.Duration)) (*Measured, error) {
	before, err := apimetrics.ScrapeAPIServer(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's /metrics (needs get on the /metrics non-resource URL): %w", err)
	}
	end := time.Now().Add(d)
	for left := d; left > 0; left = time.Until(end) {
		if tick != nil {
			tick(left)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(left, 10*time.Second)):
		}
	}
	after, err := apimetrics.ScrapeAPIServer(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's /metrics: %w", err)
	}
	return measured(before, after), nil
}

// measured is the rates between two snapshots.
func measured(before, after *apimetrics.Snapshot) *Measured {
	secs := after.Time.Sub(before.Time).Seconds()
	rate := func(name string, match map[string]string) float64 {
		return (after.Sum(name, match) - before.Sum(name, match)) / secs
	}
	rates := func(resource string) Rates {
		etcd := (after.EtcdGets(resource) - before.EtcdGets(resource)) / secs
		return Rates{
			APIServerGets: rate(apimetrics.APIServerRequests, map[string]string{"resource": resource, "verb": "GET"}),
			QuorumGets:    etcd,
			EtcdReads:     etcd,
			Watches:       int(after.Sum("apiserver_longrunning_requests", map[string]string{"resource": resource, "verb": "WATCH"})),
			WatchRequests: rate(apimetrics.APIServerRequests, map[string]string{"resource": resource, "verb": "WATCH"}),
		}
	}
	return &Measured{Kinds: Kinds{ConfigMaps: rates(resources[0]), Secrets: rates(resources[1])},
		WindowSeconds: secs, From: before.Time, To: after.Time, Caveat: measuredCaveat}
}

// AttributeAuditLog reads the audit log at path and sets on each node of
// r what the log attributes to its kubelet, as rates over window (the
// measured window, where analyze measured; otherwise open: the span of
// the log's requests). Open watches are those the log saw open and not
// end by the window's end.
func AttributeAuditLog(r *Result, path string, window auditlog.Window) error {
	tally, err := auditlog.TallyResources(path, window, resources[:]...)
	if err != nil {
		return err
	}
	secs := tally.Seconds()
	if secs <= 0 {
		return fmt.Errorf("the audit log %s holds no ConfigMap or Secret request, or all in one instant: record get, list and watch of configmaps and secrets at Metadata level", path)
	}
	perNode := map[string]*Kinds{}
	for i, resource := range resources {
		for user, c := range tally.Counts[resource] {
			node, ok := nodeidentity.Node(user)
			if !ok {
				continue
			}
			k := perNode[node]
			if k == nil {
				k = &Kinds{}
				perNode[node] = k
			}
			rates := Rates{APIServerGets: float64(c.Gets()) / secs, QuorumGets: float64(c.QuorumGets) / secs,
				EtcdReads: float64(c.QuorumGets) / secs, Watches: c.OpenWatches, WatchRequests: float64(c.Watches) / secs}
			if i == 0 {
				k.ConfigMaps = rates
			} else {
				k.Secrets = rates
			}
		}
	}
	var total Kinds
	for i := range r.Nodes {
		if k := perNode[r.Nodes[i].Name]; k != nil {
			r.Nodes[i].Measured = k
			total = total.plus(*k)
		} else {
			r.Nodes[i].Measured = &Kinds{}
		}
	}
	r.Total.Audited = &Audited{Kinds: total, WindowSeconds: secs, From: tally.From, To: tally.To}
	return nil
}

// Audited is what an audit log attributes to the cluster's kubelets.
type Audited struct {
	Kinds
	WindowSeconds float64   `json:"windowSeconds"`
	From          time.Time `json:"from"`
	To            time.Time `json:"to"`
}
