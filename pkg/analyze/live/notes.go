package live

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
)

// What the analyzer could not see, in the report's warnings and as the
// labelled gauge nodeagent_analyze_notes{reason}: the report is what it
// could see, said to be so, never a crash and never an old report
// presented as current (the report says when it was computed).
const (
	// NoteSettingsAssumed counts nodes whose kubelet settings are assumed
	// (its /configz not allowed or unreadable).
	NoteSettingsAssumed = "settingsAssumed"
	// NoteSecretsUnlisted is 1 where Secrets may not be listed.
	NoteSecretsUnlisted = "secretsUnlisted"
	// NoteNamespacesUnlisted is 1 where namespaces may not be listed, and
	// notConverted is left out.
	NoteNamespacesUnlisted = "namespacesUnlisted"
	// NotePodsOnMissingNodes counts pods bound to nodes that do not exist.
	NotePodsOnMissingNodes = "podsOnMissingNodes"
	// NoteListWatchFailing counts resources whose list or watch failed in
	// the last recentFailure.
	NoteListWatchFailing = "listWatchFailing"
	// NoteSetupFailed is 1 where an informer refused its set-up after the
	// start (the Secrets', once they may be listed); /readyz fails too.
	NoteSetupFailed = "setupFailed"
)

// recentFailure is how long a failed list or watch stays in the report:
// client-go retries within seconds, and a failure older than this with
// nothing since has been recovered from.
const recentFailure = 2 * time.Minute

var (
	descNotes = prometheus.NewDesc("nodeagent_analyze_notes",
		"What the current report could not see, by reason: nodes whose settings are assumed, Secrets not listed (1), namespaces not listed (1), pods on nodes that do not exist, resources whose list or watch is failing, an informer whose set-up failed (1).",
		[]string{"reason"}, nil)
	descWatchErrors = prometheus.NewDesc("nodeagent_analyze_list_watch_errors_total",
		"Lists and watches of the informers that failed, by resource and reason (expired: 410 Gone, relisted; throttled: 429; forbidden; unavailable; other).",
		[]string{"resource", "reason"}, nil)
)

// listWatchFailures counts the informers' failed lists and watches and
// remembers the last of each resource.
type listWatchFailures struct {
	mu     sync.Mutex
	counts map[[2]string]int
	last   map[string]failure
}

type failure struct {
	reason string
	err    error
	at     time.Time
}

func newListWatchFailures() *listWatchFailures {
	return &listWatchFailures{counts: map[[2]string]int{}, last: map[string]failure{}}
}

// handler is resource's informer's watch error handler: it counts the
// failure, tells failed, and leaves the retry, and the log, to client-go.
func (f *listWatchFailures) handler(resource string, now func() time.Time, failed func()) cache.WatchErrorHandlerWithContext {
	return func(ctx context.Context, r *cache.Reflector, err error) {
		reason := failureReason(err)
		f.mu.Lock()
		f.counts[[2]string{resource, reason}]++
		f.last[resource] = failure{reason: reason, err: err, at: now()}
		f.mu.Unlock()
		cache.DefaultWatchErrorHandler(ctx, r, err)
		failed()
	}
}

func failureReason(err error) string {
	switch {
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return "expired"
	case apierrors.IsTooManyRequests(err):
		return "throttled"
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return "forbidden"
	case apierrors.IsServiceUnavailable(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err):
		return "unavailable"
	}
	return "other"
}

// recent are warnings for the resources whose last failure is within
// recentFailure of now. An expired watch is not one: the informer lists
// again at once, and nothing is missed.
func (f *listWatchFailures) recent(now time.Time) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for resource, last := range f.last {
		if last.reason == "expired" || now.Sub(last.at) > recentFailure {
			continue
		}
		out = append(out, fmt.Sprintf("listing or watching %s failed %s ago (%s: %v): client-go retries, and this report holds what was seen before",
			resource, now.Sub(last.at).Round(time.Second), last.reason, last.err))
	}
	return out
}

// collect sends the counts, copied under the lock and sent after it: the
// registry reads ch at its own pace, and the informers' error handlers
// must not wait for a scrape.
func (f *listWatchFailures) collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	counts := maps.Clone(f.counts)
	f.mu.Unlock()
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(descWatchErrors, prometheus.CounterValue, float64(n), k[0], k[1])
	}
}

// notes are the counts of nodeagent_analyze_notes for a report, every
// reason present (zeros too, so that an alert sees them); failing is how
// many resources' lists or watches fail now, which the report, computed
// on changes, may not have seen yet.
func notes(r *Report, failing int) map[string]int {
	out := map[string]int{NoteSettingsAssumed: 0, NoteSecretsUnlisted: 0, NoteNamespacesUnlisted: 0, NotePodsOnMissingNodes: r.PodsOnMissingNodes,
		NoteListWatchFailing: failing, NoteSetupFailed: 0}
	if r.SetupFailed {
		out[NoteSetupFailed] = 1
	}
	for _, n := range r.Nodes {
		if n.SettingsSource != analyze.FromConfigz {
			out[NoteSettingsAssumed]++
		}
	}
	if !r.Cluster.SecretsListed {
		out[NoteSecretsUnlisted] = 1
	}
	if !r.Cluster.NamespacesListed {
		out[NoteNamespacesUnlisted] = 1
	}
	return out
}
