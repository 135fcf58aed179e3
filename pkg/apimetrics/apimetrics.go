// Package apimetrics scrapes Prometheus text-format metrics (the
// kube-apiserver's /metrics, or a nodeagent's) and reads counters by name and
// labels.
//
// It parses with the Prometheus text parser, so label order, escaping,
// HELP/TYPE lines and histogram series are handled as Prometheus itself
// handles them. A Snapshot is immutable; compare two snapshots taken at
// different times to get a rate.
package apimetrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// Names of the apiserver metrics nodeagent measures.
const (
	// APIServerRequests counts every request the apiserver served, by verb,
	// resource, code and more.
	APIServerRequests = "apiserver_request_total"
	// EtcdRequests counts the apiserver's requests to etcd, by operation
	// and resource: labelled operation and type (the group/resource, which
	// is the resource alone for the core group) from v1.28, where it was
	// added, to v1.33; operation, group and resource from v1.34. A GET
	// served from the watch cache is not counted. EtcdGets reads both.
	EtcdRequests = "etcd_requests_total"
)

// Snapshot is the set of metric families read at one instant.
type Snapshot struct {
	// Time is when the read began. Read is when the answer had arrived,
	// where the read went over the network (zero otherwise): the server
	// took its values at some instant between the two, which on a loaded
	// machine can be a second or more after Time.
	Time, Read time.Time
	families   map[string]*dto.MetricFamily
}

// Parse reads Prometheus text exposition format.
func Parse(r io.Reader, at time.Time) (*Snapshot, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return &Snapshot{Time: at, families: families}, nil
}

// ScrapeAPIServer reads the apiserver's /metrics through client, which
// must be authorized for the non-resource URL /metrics (cluster-admin is).
func ScrapeAPIServer(ctx context.Context, client rest.Interface) (*Snapshot, error) {
	at := time.Now()
	data, err := client.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's /metrics: %w", err)
	}
	read := time.Now()
	s, err := Parse(strings.NewReader(string(data)), at)
	if err != nil {
		return nil, err
	}
	s.Read = read
	return s, nil
}

// ScrapeURL reads metrics from a plain HTTP endpoint, such as an agent's.
func ScrapeURL(ctx context.Context, client *http.Client, url string) (*Snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	at := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading %s: HTTP %d", url, resp.StatusCode)
	}
	return Parse(resp.Body, at)
}

// Sum adds the values of every series of the named counter, gauge or
// untyped metric whose labels include all of match. A missing metric sums
// to 0: the apiserver registers a series only when it first counts.
func (s *Snapshot) Sum(name string, match map[string]string) float64 {
	family, ok := s.families[name]
	if !ok {
		return 0
	}
	var total float64
	for _, m := range family.GetMetric() {
		if !labelsMatch(m.GetLabel(), match) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Untyped != nil:
			total += m.Untyped.GetValue()
		}
	}
	return total
}

// Has reports whether the snapshot holds a metric family of that name.
func (s *Snapshot) Has(name string) bool {
	_, ok := s.families[name]
	return ok
}

// APIServerConfigMapGets is apiserver_request_total{resource="configmaps",
// verb="GET"}, over all codes: every single-object ConfigMap GET the
// apiserver answered, whether from its watch cache or from etcd.
func (s *Snapshot) APIServerConfigMapGets() float64 {
	return s.Sum(APIServerRequests, map[string]string{"resource": "configmaps", "verb": "GET"})
}

// EtcdConfigMapGets is EtcdGets("configmaps"): ConfigMap reads that
// reached etcd.
func (s *Snapshot) EtcdConfigMapGets() float64 { return s.EtcdGets("configmaps") }

// EtcdGets is etcd_requests_total{operation="get"} of a core resource,
// whichever label the apiserver names it by: resource (v1.34 on) or type
// (v1.28 to v1.33). A series carries one or the other, so the sum counts
// each read once.
func (s *Snapshot) EtcdGets(resource string) float64 {
	return s.Sum(EtcdRequests, map[string]string{"resource": resource, "operation": "get"}) +
		s.Sum(EtcdRequests, map[string]string{"type": resource, "operation": "get"})
}

func labelsMatch(labels []*dto.LabelPair, match map[string]string) bool {
	for key, want := range match {
		found := false
		for _, l := range labels {
			if l.GetName() == key {
				found = l.GetValue() == want
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Gather snapshots an in-process Prometheus registry, such as one agent's
// when many agents run in one process.
func Gather(g prometheus.Gatherer) (*Snapshot, error) {
	at := time.Now()
	families, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("gathering metrics: %w", err)
	}
	byName := make(map[string]*dto.MetricFamily, len(families))
	for _, f := range families {
		byName[f.GetName()] = f
	}
	return &Snapshot{Time: at, families: byName}, nil
}
