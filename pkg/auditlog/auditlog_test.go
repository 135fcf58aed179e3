package auditlog

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func line(stage, verb, uri, user string, code int, at string) string {
	return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"` + stage + `","requestURI":"` + uri +
		`","verb":"` + verb + `","user":{"username":"` + user + `"},"objectRef":{"resource":"configmaps","namespace":"ns","name":"cm"},` +
		`"responseStatus":{"code":` + strconv.Itoa(code) + `},"requestReceivedTimestamp":"` + at + `"}`
}

func TestCount(t *testing.T) {
	const a, b = "system:node:a", "system:node:b"
	lines := []string{
		line("ResponseComplete", "get", "/api/v1/namespaces/ns/configmaps/cm", a, 200, "2026-01-01T00:00:01.000000Z"),
		line("ResponseComplete", "get", "/api/v1/namespaces/ns/configmaps/cm?resourceVersion=0", a, 200, "2026-01-01T00:00:02.000000Z"),
		line("ResponseComplete", "get", "/api/v1/namespaces/ns/configmaps/missing", a, 404, "2026-01-01T00:00:03.000000Z"),
		// A watch: counted when it opens, not again when it ends.
		line("ResponseStarted", "watch", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dcm&watch=true", b, 200, "2026-01-01T00:00:04.000000Z"),
		line("ResponseComplete", "watch", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dcm&watch=true", b, 200, "2026-01-01T00:00:04.000000Z"),
		// A watch refused before it opened, logged with one stage or two
		// (a watch-list request refused by the node authorizer).
		line("ResponseComplete", "watch", "/api/v1/namespaces/ns/configmaps?watch=true", b, 403, "2026-01-01T00:00:05.000000Z"),
		line("ResponseStarted", "watch", "/api/v1/namespaces/ns/configmaps?sendInitialEvents=true&watch=true", b, 403, "2026-01-01T00:00:05.000000Z"),
		line("ResponseComplete", "watch", "/api/v1/namespaces/ns/configmaps?sendInitialEvents=true&watch=true", b, 403, "2026-01-01T00:00:05.000000Z"),
		line("ResponseComplete", "list", "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dcm&limit=500&resourceVersion=0", b, 200, "2026-01-01T00:00:06.000000Z"),
		line("ResponseComplete", "list", "/api/v1/namespaces/ns/configmaps", b, 200, "2026-01-01T00:00:07.000000Z"),
		// Outside the window.
		line("ResponseComplete", "get", "/api/v1/namespaces/ns/configmaps/cm", a, 200, "2026-01-01T00:00:10.000000Z"),
		// Not a ConfigMap, and a half-written last line.
		strings.Replace(line("ResponseComplete", "get", "/api/v1/nodes/a", a, 200, "2026-01-01T00:00:02.000000Z"), `"configmaps"`, `"nodes"`, 1),
		`{"kind":"Event","stage":"Resp`,
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	got, err := Count(path, from, from.Add(9*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Counts{QuorumGets: 2, CacheGets: 1, Errors: 1}); got[a] != want {
		t.Errorf("node a: got %+v, want %+v", got[a], want)
	}
	if want := (Counts{Watches: 3, QuorumLists: 1, CacheLists: 1, Errors: 2}); got[b] != want {
		t.Errorf("node b: got %+v, want %+v", got[b], want)
	}
	if len(got) != 2 {
		t.Errorf("users: got %v, want only a and b", got)
	}
	if all, _ := Count(path, from, time.Time{}); all[a].QuorumGets != 3 {
		t.Errorf("no end: node a's quorum GETs: got %d, want 3", all[a].QuorumGets)
	}
	// Two windows in one pass count what two passes count.
	both, err := CountWindows(path, Window{From: from, To: from.Add(9 * time.Second)}, Window{From: from.Add(3 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	later, _ := Count(path, from.Add(3*time.Second), time.Time{})
	if both[0][a] != got[a] || both[0][b] != got[b] || both[1][a] != later[a] || both[1][b] != later[b] {
		t.Errorf("CountWindows %v, want %v and %v", both, got, later)
	}
	if want := (Counts{QuorumGets: 2, Errors: 1}); later[a] != want {
		t.Errorf("from 3 s, node a: got %+v, want %+v", later[a], want)
	}
	gets, err := Gets(path, from, from.Add(9*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(gets) != 3 || !gets[0].Quorum || gets[1].Quorum || gets[2].Code != 404 || gets[0].User != a ||
		gets[0].Namespace != "ns" || gets[0].Name != "cm" || !gets[1].Received.Equal(from.Add(2*time.Second)) {
		t.Errorf("Gets: %+v, want node a's three GETs of the window", gets)
	}
	if _, err := Count(filepath.Join(t.TempDir(), "none"), from, time.Time{}); err == nil {
		t.Error("a missing log: no error")
	}
}

// A client that impersonates a node (Impersonate-User) is counted as that
// node: the apiserver authorized the request as the node.
func TestCountImpersonated(t *testing.T) {
	impersonated := strings.Replace(
		line("ResponseComplete", "get", "/api/v1/namespaces/ns/configmaps/cm", "admin", 200, "2026-01-01T00:00:01.000000Z"),
		`"objectRef"`, `"impersonatedUser":{"username":"system:node:a","groups":["system:nodes"]},"objectRef"`, 1)
	path := filepath.Join(t.TempDir(), "audit.log")
	lines := impersonated + "\n" + line("ResponseComplete", "get", "/api/v1/namespaces/ns/configmaps/cm", "admin", 200, "2026-01-01T00:00:02.000000Z")
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Count(path, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got["system:node:a"].QuorumGets != 1 || got["admin"].QuorumGets != 1 || len(got) != 2 {
		t.Errorf("got %+v, want one quorum GET for system:node:a and one for admin", got)
	}
	gets, err := Gets(path, time.Time{}, time.Time{})
	if err != nil || len(gets) != 2 || gets[0].User != "system:node:a" || gets[1].User != "admin" {
		t.Errorf("Gets: %+v (%v), want system:node:a's then admin's", gets, err)
	}
}

// TallyNamespace counts one namespace's requests alone, open watches
// included.
func TestTallyNamespace(t *testing.T) {
	const driver = "system:serviceaccount:nodeagent:csi"
	watch := "/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dcm&watch=true"
	other := func(l string) string { return strings.Replace(l, `"namespace":"ns"`, `"namespace":"other"`, 1) }
	lines := []string{
		line("ResponseStarted", "watch", watch, driver, 200, "2026-01-01T00:00:01.000000Z"),
		other(line("ResponseStarted", "watch", watch, driver, 200, "2026-01-01T00:00:01.000000Z")),
		other(line("ResponseStarted", "watch", watch, driver, 200, "2026-01-01T00:00:02.000000Z")),
		other(line("ResponseComplete", "get", "/api/v1/namespaces/other/configmaps/cm", driver, 200, "2026-01-01T00:00:02.000000Z")),
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	ns, err := TallyNamespace(path, Window{}, "ns", "configmaps")
	if err != nil {
		t.Fatal(err)
	}
	all, err := TallyResources(path, Window{}, "configmaps")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ns.Counts["configmaps"][driver], (Counts{Watches: 1, OpenWatches: 1}); got != want {
		t.Errorf("namespace ns: %+v, want %+v", got, want)
	}
	if got := all.Counts["configmaps"][driver]; got.OpenWatches != 3 || got.Gets() != 1 {
		t.Errorf("every namespace: %+v, want 3 watches open and a GET", got)
	}
}
