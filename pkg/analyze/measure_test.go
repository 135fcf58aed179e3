package analyze

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/apimetrics"
)

// analyze --measure reads the etcd reads of the apiservers beside v1.28
// kubelets (v1.28 to v1.33 label etcd_requests_total by type) as it reads
// today's (resource): the scrapes of real apiservers around 5 quorum GETs
// and 3 at resourceVersion 0 (pkg/apimetrics/testdata, make
// etcd-metrics-fixture), 10 s apart.
func TestMeasuredEtcdReadsOfEitherLabel(t *testing.T) {
	for _, version := range []string{"v1.31.14", "v1.37.2"} {
		t.Run(version, func(t *testing.T) {
			start := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
			read := func(when string, at time.Time) *apimetrics.Snapshot {
				f, err := os.Open(filepath.Join("..", "apimetrics", "testdata", version+"-"+when+".txt"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				s, err := apimetrics.Parse(f, at)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			m := measured(read("before", start), read("after", start.Add(10*time.Second)))
			if got := m.Kinds.ConfigMaps; got.EtcdReads != 0.5 || got.QuorumGets != 0.5 || got.APIServerGets != 0.8 {
				t.Errorf("ConfigMaps: %+v, want 0.5 etcd reads and quorum GETs a second of 0.8 GETs", got)
			}
		})
	}
}
