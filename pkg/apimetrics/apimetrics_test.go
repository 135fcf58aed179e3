package apimetrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A trimmed copy of what kube-apiserver v1.36 exposes, with label orders and
// series that a regular expression would get wrong.
const apiserverSample = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 7
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 5
apiserver_request_total{verb="GET",resource="secrets",code="200",component="apiserver",dry_run="",group="",scope="resource",subresource="",version="v1"} 11
# HELP etcd_requests_total [ALPHA] Etcd request counts for each operation and object type.
# TYPE etcd_requests_total counter
etcd_requests_total{group="",operation="get",resource="configmaps"} 3
etcd_requests_total{group="",operation="listWithCount",resource="configmaps"} 4
etcd_requests_total{group="",operation="get",resource="pods"} 8
# HELP etcd_request_duration_seconds [ALPHA] Etcd request latency in seconds for each operation and object type.
# TYPE etcd_request_duration_seconds histogram
etcd_request_duration_seconds_bucket{group="",operation="get",resource="configmaps",le="0.005"} 3
etcd_request_duration_seconds_bucket{group="",operation="get",resource="configmaps",le="+Inf"} 3
etcd_request_duration_seconds_sum{group="",operation="get",resource="configmaps"} 0.004
etcd_request_duration_seconds_count{group="",operation="get",resource="configmaps"} 3
`

func TestSnapshotReaders(t *testing.T) {
	s, err := Parse(strings.NewReader(apiserverSample), time.Unix(100, 0))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"configmap GETs over all codes", s.APIServerConfigMapGets(), 9},
		{"etcd configmap gets", s.EtcdConfigMapGets(), 3},
		{"GETs of any resource", s.Sum(APIServerRequests, map[string]string{"verb": "GET"}), 20},
		{"one code only", s.Sum(APIServerRequests, map[string]string{"resource": "configmaps", "verb": "GET", "code": "404"}), 2},
		{"label absent from every series", s.Sum(APIServerRequests, map[string]string{"nosuchlabel": "x"}), 0},
		{"missing metric", s.Sum("no_such_metric_total", nil), 0},
		{"histogram is not a counter", s.Sum("etcd_request_duration_seconds", nil), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
	if !s.Has(EtcdRequests) || s.Has("no_such_metric_total") {
		t.Errorf("Has: got %v/%v, want true/false", s.Has(EtcdRequests), s.Has("no_such_metric_total"))
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	if _, err := Parse(strings.NewReader("this is { not metrics\n"), time.Now()); err == nil {
		t.Fatal("Parse accepted malformed input")
	}
}

// The etcd reads of real apiservers, scraped by make etcd-metrics-fixture
// around 5 quorum GETs of a ConfigMap and 3 at resourceVersion 0: v1.31
// labels etcd_requests_total by type, v1.37 by group and resource, and the
// reads are counted on both. Only the quorum GETs reach etcd; the
// apiserver answered all 8.
func TestEtcdGetsOfRealAPIServers(t *testing.T) {
	for _, version := range []string{"v1.31.14", "v1.37.2"} {
		t.Run(version, func(t *testing.T) {
			read := func(when string) *Snapshot {
				f, err := os.Open(filepath.Join("testdata", version+"-"+when+".txt"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				s, err := Parse(f, time.Time{})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			before, after := read("before"), read("after")
			if got := after.EtcdConfigMapGets() - before.EtcdConfigMapGets(); got != 5 {
				t.Errorf("etcd gets: %v, want the 5 quorum GETs", got)
			}
			if got := after.APIServerConfigMapGets() - before.APIServerConfigMapGets(); got != 8 {
				t.Errorf("apiserver GETs: %v, want 8", got)
			}
		})
	}
}
