package attribution

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// get is one audit event: user's GET of namespace ns's ConfigMap name at
// second s of 2026-01-01, quorum or from the watch cache.
func get(user, name string, s int, quorum bool) string {
	uri := "/api/v1/namespaces/ns/configmaps/" + name
	if !quorum {
		uri += "?resourceVersion=0"
	}
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","requestURI":%q,`+
		`"verb":"get","user":{"username":%q},"objectRef":{"resource":"configmaps","namespace":"ns","name":%q},`+
		`"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:%02d.000000Z"}`, uri, user, name, s)
}

// The run's nodes' GETs in the window, split into the run's ConfigMaps and
// kube-root-ca.crt beside the model's; other users' and those outside the
// window left out.
func TestAttributeSplitsByClass(t *testing.T) {
	lines := []string{
		get("system:node:n1", "cm-1", 1, true),
		get("system:node:n1", "kube-root-ca.crt", 2, false),
		get("system:node:n2", "cm-2", 3, false),
		get("system:node:n2", "kube-root-ca.crt", 4, false),
		get("system:node:n2", "kube-root-ca.crt", 5, false),
		get("system:node:other", "cm-1", 6, true), // not the run's node
		get("system:node:n1", "cm-1", 15, true),   // after the window
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := []model.Node{{Name: "n1"}, {Name: "n2"}}
	expected := map[ObjectClass]float64{ClassConfigMaps: 0.25, ClassRootCA: 0.25}
	r, err := Attribute(path, nodes, Window{PhaseStart: start, From: start, To: start.Add(10 * time.Second)}, expected)
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(r.QuorumGetQPS, 0.1) || !near(r.CacheGetQPS, 0.4) {
		t.Errorf("quorum %.3f, cached %.3f GET/s; want 0.1 and 0.4", r.QuorumGetQPS, r.CacheGetQPS)
	}
	if len(r.Classes) != 2 {
		t.Fatalf("classes %+v, want two", r.Classes)
	}
	own, rootCA := r.Classes[0], r.Classes[1]
	if own.Class != ClassConfigMaps || !near(own.GetQPS, 0.2) || !near(own.QuorumGetQPS, 0.1) || own.ExpectedQPS != 0.25 {
		t.Errorf("run's ConfigMaps: %+v; want 0.2 GET/s, 0.1 quorum, 0.25 expected", own)
	}
	if rootCA.Class != ClassRootCA || !near(rootCA.GetQPS, 0.3) || rootCA.QuorumGetQPS != 0 {
		t.Errorf("kube-root-ca.crt: %+v; want 0.3 GET/s, none quorum", rootCA)
	}
}

// A class's interval between reads: the intervals with both reads in the
// window, each weighted by 1/(W − x) for the window's smaller chance of
// holding a longer one; the model's interval is the class's pairs over its
// GET/s.
func TestAttributeMeasuresIntervalsBetweenReads(t *testing.T) {
	lines := []string{
		get("system:node:n1", "kube-root-ca.crt", 2, false),  // before the window: no interval
		get("system:node:n1", "kube-root-ca.crt", 14, false), // ends the interval from 2 s: not taken
		get("system:node:n1", "kube-root-ca.crt", 22, false), // 8 s, weight 1/10
		get("system:node:n2", "kube-root-ca.crt", 12, false),
		get("system:node:n2", "kube-root-ca.crt", 25, false), // 13 s, weight 1/5
		get("system:node:n1", "cm-1", 5, false),
		get("system:node:n1", "cm-1", 13, false),
		get("system:node:n1", "cm-1", 19, false), // 6 s, weight 1/12
		get("system:node:n2", "cm-2", 14, false),
		get("system:node:n2", "cm-2", 26, false), // 12 s, weight 1/6
		get("system:node:n2", "cm-2", 31, false), // after the window
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := []model.Node{{Name: "n1"}, {Name: "n2"}}
	expected := map[ObjectClass]float64{ClassConfigMaps: 0.2, ClassRootCA: 0.25}
	r, err := Attribute(path, nodes, Window{PhaseStart: start, From: start.Add(12 * time.Second), To: start.Add(30 * time.Second)}, expected)
	if err != nil {
		t.Fatal(err)
	}
	own, rootCA := r.Classes[0], r.Classes[1]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(rootCA.IntervalSeconds, 34.0/3) || !near(rootCA.ExpectedIntervalSeconds, 8) {
		t.Errorf("kube-root-ca.crt: every %.3f s, model %.3f; want 11.333 ((8/10 + 13/5) / (1/10 + 1/5)) and 8 (2 pairs at 0.25 GET/s)",
			rootCA.IntervalSeconds, rootCA.ExpectedIntervalSeconds)
	}
	if !near(own.IntervalSeconds, 10) || !near(own.ExpectedIntervalSeconds, 10) {
		t.Errorf("run's ConfigMaps: every %.3f s, model %.3f; want 10 ((6/12 + 12/6) / (1/12 + 1/6)) and 10", own.IntervalSeconds, own.ExpectedIntervalSeconds)
	}
	if !near(rootCA.GetQPS, 4.0/18) {
		t.Errorf("kube-root-ca.crt: %.3f GET/s, want the window's 4 reads over 18 s", rootCA.GetQPS)
	}
}
