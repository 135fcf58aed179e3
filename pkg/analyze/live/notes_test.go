package live

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	nodeagenttest "github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/analyze"
)

// What the analyzer cannot see is in the report and in a labelled metric:
// a list the apiserver throttles (429), which client-go retries, and a pod
// bound to a node that does not exist, which is left out.
func TestNotesSayWhatTheReportCannotSee(t *testing.T) {
	client := fake.NewClientset(node("n1"), podReading("web", "n1", "cfg", "env"), podReading("ghost", "deleted-node", "cfg", "env"))
	var lists atomic.Int32
	client.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if lists.Add(1) == 1 {
			return true, nil, apierrors.NewTooManyRequests("the apiserver is busy", 1)
		}
		return false, nil, nil
	})
	a := startAnalyzer(t, client)
	r := a.Report()
	warnings := strings.Join(r.Warnings, "\n")
	if r.PodsOnMissingNodes != 1 || !strings.Contains(warnings, "1 pods are bound to nodes that do not exist") ||
		!strings.Contains(warnings, "shop/ghost on deleted-node") {
		t.Errorf("pods on missing nodes: %d, warnings %q; want shop/ghost named", r.PodsOnMissingNodes, r.Warnings)
	}
	if r.ListWatchFailing != 1 || !strings.Contains(warnings, "listing or watching configmaps failed") || !strings.Contains(warnings, "throttled") {
		t.Errorf("list/watch failing: %d, warnings %q; want the throttled configmaps list", r.ListWatchFailing, r.Warnings)
	}
	if r.Cluster.Pods != 1 {
		t.Errorf("%d pods analyzed; want web alone", r.Cluster.Pods)
	}
	want := `
# HELP nodeagent_analyze_list_watch_errors_total Lists and watches of the informers that failed, by resource and reason (expired: 410 Gone, relisted; throttled: 429; forbidden; unavailable; other).
# TYPE nodeagent_analyze_list_watch_errors_total counter
nodeagent_analyze_list_watch_errors_total{reason="throttled",resource="configmaps"} 1
# HELP nodeagent_analyze_notes What the current report could not see, by reason: nodes whose settings are assumed, Secrets not listed (1), namespaces not listed (1), pods on nodes that do not exist, resources whose list or watch is failing, an informer whose set-up failed (1).
# TYPE nodeagent_analyze_notes gauge
nodeagent_analyze_notes{reason="listWatchFailing"} 1
nodeagent_analyze_notes{reason="namespacesUnlisted"} 0
nodeagent_analyze_notes{reason="podsOnMissingNodes"} 1
nodeagent_analyze_notes{reason="secretsUnlisted"} 0
nodeagent_analyze_notes{reason="settingsAssumed"} 1
nodeagent_analyze_notes{reason="setupFailed"} 0
`
	if err := testutil.CollectAndCompare(a.Collector(), strings.NewReader(want), "nodeagent_analyze_notes", "nodeagent_analyze_list_watch_errors_total"); err != nil {
		t.Error(err)
	}
}

// An informer that refuses its set-up (an index, a handler: client-go
// refuses them once it runs) is an error newWatcher returns, and Run with
// it, never a report silently missing what the informer would have told.
func TestInformerSetUpFailuresAreReturned(t *testing.T) {
	client := fake.NewClientset(node("n1"))
	w, err := newWatcher(client, "", analyze.DefaultArrivalWindow, listable{}, nopEvents{}, newListWatchFailures(), time.Now)
	if err != nil {
		t.Fatalf("a new watcher: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.run(ctx)
	w.setUp() // again, on running informers
	err = errors.Join(w.setupErrs...)
	if err == nil || !strings.Contains(err.Error(), "pods index by node") {
		t.Errorf("setting up running informers: %v, want the pods' index refused", err)
	}
}

// A set-up failure after the start (the Secrets' informer, once they may
// be listed) is loud: a warning in the report, the note setupFailed at 1
// and /readyz failing.
func TestASetUpFailureAfterTheStartIsLoud(t *testing.T) {
	a := startAnalyzer(t, fake.NewClientset(node("n1")))
	a.setupFailed.Store(true)
	a.note(func(*pending) {})
	nodeagenttest.WaitFor(t, "a report that says so", func() bool { r := a.Report(); return r != nil && r.SetupFailed })
	if !strings.Contains(strings.Join(a.Report().Warnings, "\n"), "setting up the Secrets' informer failed") {
		t.Errorf("warnings %q", a.Report().Warnings)
	}
	rec := httptest.NewRecorder()
	a.Handler(prometheus.NewRegistry()).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz: %d, want 503", rec.Code)
	}
	if n := notes(a.Report(), 0)[NoteSetupFailed]; n != 1 {
		t.Errorf("note setupFailed %d, want 1", n)
	}
}

type nopEvents struct{}

func (nopEvents) nodeChanged(string)       {}
func (nopEvents) podsChanged(...string)    {}
func (nopEvents) objectChanged(objectName) {}
func (nopEvents) namespaceChanged(string)  {}
func (nopEvents) driverNodeChanged(string) {}
func (nopEvents) failed()                  {}

// A scrape that reads its metrics slowly never holds up an informer's
// error handler: the counts are sent outside their lock.
func TestASlowScrapeDoesNotBlockTheInformers(t *testing.T) {
	f := newListWatchFailures()
	record := func(resource string) {
		f.mu.Lock()
		f.counts[[2]string{resource, "other"}]++
		f.mu.Unlock()
	}
	record("pods")
	record("nodes")
	scrape := make(chan prometheus.Metric)
	go f.collect(scrape)
	<-scrape // the scrape is under way, its second metric not yet read
	recorded := make(chan struct{})
	go func() { record("configmaps"); close(recorded) }()
	nodeagenttest.WaitFor(t, "a failure recorded during the scrape", func() bool {
		select {
		case <-recorded:
			return true
		default:
			return false
		}
	})
	<-scrape
}
