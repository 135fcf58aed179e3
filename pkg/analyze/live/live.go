package live

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// Options configure New.
type Options struct {
	// Analyze are analyze's options; Measure and AuditLog do not apply.
	Analyze analyze.Options
	// Quiet is how long events must pause before a recomputation;
	// MaxDelay the longest a change waits for one. Defaults 100 ms and 2 s:
	// a computation recomputes the nodes a change touched, tens of
	// milliseconds on a large cluster, and under a stream of changes one
	// every 2 s keeps its CPU low.
	Quiet, MaxDelay time.Duration
	// SettingsInterval is how often every kubelet's settings are read
	// again; default 10 minutes.
	SettingsInterval time.Duration
	// SecretsRecheck is how often a user who may not list Secrets is
	// asked again whether it may; default 1 minute.
	SecretsRecheck time.Duration
	// MaxFindingSeries caps nodeagent_analyze_finding's series; default
	// 1,000.
	MaxFindingSeries int
	// Events, where not nil, posts an event on the pod of each finding
	// that appears while the analyzer runs.
	Events *Events
	// Clock is nil for the real clock.
	Clock clock.WithTicker
}

// Report is one computation's result and when it was made.
type Report struct {
	analyze.Result
	// ComputedAt is when the result was computed; Seconds how long that
	// took.
	ComputedAt time.Time `json:"computedAt"`
	Seconds    float64   `json:"computationSeconds"`
	// Objects are the objects the informers held, by resource.
	Objects map[string]int `json:"objects"`
	// PodsOnMissingNodes counts pods bound to nodes that do not exist
	// (left out); ListWatchFailing, resources whose list or watch failed
	// lately. The warnings say which.
	PodsOnMissingNodes int `json:"podsOnMissingNodes"`
	ListWatchFailing   int `json:"listWatchFailing"`
	// SetupFailed: an informer refused its set-up after the start.
	SetupFailed bool `json:"setupFailed,omitempty"`
}

// arrivalsRecheck is how often the churn is estimated again while pods
// come and go and nothing else changes: its arrivals age out of the
// window meanwhile.
const arrivalsRecheck = time.Minute

// releaseAfter is how long the analyzer waits, after a computation with
// no change since, before it returns the computation's garbage to the
// system.
const releaseAfter = 3 * time.Second

// Analyzer keeps the analysis of one cluster current.
type Analyzer struct {
	client  kubernetes.Interface
	opts    Options
	clock   clock.WithTicker
	watcher *watcher

	// dirty is signalled by every event; nodesChanged collects the nodes
	// whose settings to read again, changes what the next computation
	// reads again.
	dirty        chan struct{}
	mu           sync.Mutex
	nodesChanged sets.Set[string]
	changes      pending
	// held is what the computations keep from one to the next; only the
	// loop of Run touches it.
	held         held
	settings     map[string]analyze.Settings
	warnings     []string
	settingsRead time.Time

	// readSettings reads kubelets' settings: analyze.NodeSettings through
	// client.
	readSettings settingsReader

	report       atomic.Pointer[Report]
	computations atomic.Int64
	// partsComputed counts the nodes' parts computed.
	partsComputed atomic.Int64
	failures      *listWatchFailures
	// setupFailed: an informer started after Run's (the Secrets') refused
	// its set-up; the report says so, NoteSetupFailed counts it and
	// /readyz fails until the process restarts.
	setupFailed atomic.Bool
	firstReport chan struct{}
	reports     *reportGatherer
}

// New returns an Analyzer; nothing runs until Run.
func New(client kubernetes.Interface, opts Options) *Analyzer {
	if opts.Quiet <= 0 {
		opts.Quiet = 100 * time.Millisecond
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = 2 * time.Second
	}
	if opts.SettingsInterval <= 0 {
		opts.SettingsInterval = 10 * time.Minute
	}
	if opts.SecretsRecheck <= 0 {
		opts.SecretsRecheck = time.Minute
	}
	if opts.MaxFindingSeries <= 0 {
		opts.MaxFindingSeries = 1000
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Analyze.ArrivalWindow <= 0 {
		opts.Analyze.ArrivalWindow = analyze.DefaultArrivalWindow
	}
	a := &Analyzer{client: client, opts: opts, clock: opts.Clock, dirty: make(chan struct{}, 1), nodesChanged: sets.New[string](),
		changes: newPending(), failures: newListWatchFailures(), firstReport: make(chan struct{})}
	a.changes.everything = true
	a.readSettings = func(ctx context.Context, nodes []inventory.NodeInfo) (map[string]analyze.Settings, []string, error) {
		return analyze.NodeSettings(ctx, client, nodes, opts.Analyze)
	}
	a.reports = newReportGatherer(a)
	return a
}

// FirstReport is closed once the first report is computed: the command
// tunes the process for the start (a GOGC of its own) until then.
func (a *Analyzer) FirstReport() <-chan struct{} { return a.firstReport }

// Report is the current report, nil before the first computation.
func (a *Analyzer) Report() *Report { return a.report.Load() }

// Run watches the cluster and recomputes the analysis as it changes, until
// ctx ends. It fails only if the cluster cannot be read at all at start.
func (a *Analyzer) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	may, err := mayList(ctx, a.client)
	if err != nil {
		return err
	}
	a.watcher, err = newWatcher(a.client, a.opts.Analyze.NodeSelector, a.opts.Analyze.ArrivalWindow, may, a, a.failures, a.clock.Now)
	if err != nil {
		return err
	}
	a.watcher.run(ctx)
	logger.Info("Watching the cluster", "secrets", may.secrets, "optedInNamespaces", may.namespaces, "csiNodes", may.csiNodes, "nodeSelector", a.opts.Analyze.NodeSelector)
	for !a.watcher.synced() {
		select {
		case <-ctx.Done():
			return nil
		case <-a.clock.After(100 * time.Millisecond):
		}
	}
	logger.Info("Listed the cluster", "objects", a.watcher.counts())
	a.compute(ctx)
	close(a.firstReport)
	for a.waitForChanges(ctx) {
		a.compute(ctx)
	}
	return nil
}

// changed marks the analysis dirty, and node, where not empty, as
// needing its settings read again and its part recomputed.
func (a *Analyzer) changed(node string) {
	a.note(func(p *pending) {
		if node != "" {
			a.nodesChanged.Insert(node)
			p.nodes.Insert(node)
			p.nodesChanged = true
		}
	})
}

// note records a change and marks the analysis dirty.
func (a *Analyzer) note(change func(*pending)) {
	a.mu.Lock()
	change(&a.changes)
	a.mu.Unlock()
	select {
	case a.dirty <- struct{}{}:
	default:
	}
}

// The watcher's events (events).
func (a *Analyzer) nodeChanged(name string) { a.changed(name) }
func (a *Analyzer) podsChanged(nodes ...string) {
	a.note(func(p *pending) { p.nodes.Insert(nodes...) })
}
func (a *Analyzer) objectChanged(o objectName) {
	a.note(func(p *pending) { p.objects.Insert(o) })
}
func (a *Analyzer) namespaceChanged(name string) {
	a.note(func(p *pending) { p.namespaces.Insert(name) })
}
func (a *Analyzer) driverNodeChanged(name string) {
	a.note(func(p *pending) {
		p.nodes.Insert(name)
		p.driverNodes = true
	})
}
func (a *Analyzer) failed() { a.note(func(*pending) {}) }

// rechecks are when to ask again whether Secrets may be listed (nil while
// they are watched) and when to estimate the churn again (nil where no pod
// came and went): its rates change as its arrivals leave the window, with
// no event to say so.
func (a *Analyzer) rechecks() (secrets, arrivals <-chan time.Time) {
	if a.watcher.secrets == nil {
		secrets = a.clock.After(a.opts.SecretsRecheck)
	}
	if r := a.report.Load(); r != nil && r.Churn != nil {
		arrivals = a.clock.After(arrivalsRecheck)
	}
	return secrets, arrivals
}

// waitForChanges waits for a change, then until changes have paused for
// Quiet or MaxDelay has passed since the first; or until the settings are
// due again. It says false when ctx ends.
func (a *Analyzer) waitForChanges(ctx context.Context) bool {
	// The settings come due SettingsInterval after they were last read
	// whole, however many computations came between.
	a.mu.Lock()
	untilSettings := a.settingsRead.Add(a.opts.SettingsInterval).Sub(a.clock.Now())
	a.mu.Unlock()
	settingsDue := a.clock.After(max(untilSettings, 0))
	// A computation's garbage is as large as the inventory: once nothing
	// has changed for a while, hand it back, so that the process's
	// resident memory is what it holds between computations, not its
	// peak. Not at once: under a stream of changes, the full collection
	// that returns it would take the CPU the next computation needs.
	release := a.clock.After(releaseAfter)
	recheck, arrivalsAge := a.rechecks()
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			return false
		case <-recheck:
			if a.watchSecretsNow(ctx) {
				return true
			}
			recheck = a.clock.After(a.opts.SecretsRecheck)
		case <-settingsDue:
			a.mu.Lock()
			a.settingsRead = time.Time{} // read every node again
			a.mu.Unlock()
			return true
		case <-release:
			debug.FreeOSMemory()
		case <-arrivalsAge:
			return true
		case <-a.dirty:
			waiting = false
		}
	}
	deadline := a.clock.After(a.opts.MaxDelay)
	for {
		quiet := a.clock.NewTimer(a.opts.Quiet)
		select {
		case <-ctx.Done():
			quiet.Stop()
			return false
		case <-deadline:
			quiet.Stop()
			return true
		case <-quiet.C():
			return true
		case <-a.dirty:
			quiet.Stop()
		}
	}
}

// watchSecretsNow asks whether this user, who could not list Secrets,
// may now; if it may, it starts watching them and, once they are listed,
// says so: the next computation reads the whole cluster again, every
// Secret now known.
func (a *Analyzer) watchSecretsNow(ctx context.Context) bool {
	if _, err := a.client.CoreV1().Secrets("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		if !apierrors.IsForbidden(err) {
			klog.FromContext(ctx).Info("Asking whether Secrets may be listed failed", "err", err)
		}
		return false
	}
	if err := a.watcher.addSecrets(); err != nil {
		klog.FromContext(ctx).Error(err, "Watching Secrets failed: the report goes on without them")
		a.setupFailed.Store(true)
		a.note(func(*pending) {})
		return false
	}
	go a.watcher.secrets.RunWithContext(ctx)
	for !a.watcher.secretsSynced() {
		select {
		case <-ctx.Done():
			return false
		case <-a.clock.After(100 * time.Millisecond):
		}
	}
	klog.FromContext(ctx).Info("Secrets may be listed now: watching them")
	a.note(func(p *pending) { p.everything = true })
	return true
}

// compute makes a report from the informers' current state: it reads
// again what changed since the last one, recomputes the parts of the
// nodes the changes touched and sums the analysis.
func (a *Analyzer) compute(ctx context.Context) {
	start := a.clock.Now()
	a.mu.Lock()
	changes, nodesChanged := a.changes, a.nodesChanged
	a.changes, a.nodesChanged = newPending(), sets.New[string]()
	a.mu.Unlock()
	dirty := a.held.apply(a.watcher, changes, a.opts.Analyze.Top)
	inv := a.held.inv
	settings, warnings := a.nodeSettings(ctx, inv, nodesChanged)
	c := analyze.Cluster{Inventory: inv, Settings: settings, DriverSecrets: a.opts.Analyze.DriverSecrets, DriverReadsAsPods: a.opts.Analyze.DriverReadsAsPods}.WithArrivals(a.watcher.sightings.current(), start, a.opts.Analyze.ArrivalWindow)
	recomputed := a.held.analysis.Update(c, a.watcher.podsOn, func(node string) bool { return dirty == nil || dirty.Has(node) })
	r := a.held.analysis.Result(c)
	orphans := a.watcher.orphans(inv.Nodes)
	failing := a.failures.recent(start)
	if len(orphans) > 0 {
		warnings = append(warnings, fmt.Sprintf("%d pods are bound to nodes that do not exist, and are left out until they are deleted (%s)",
			len(orphans), strings.Join(orphans[:min(3, len(orphans))], ", ")))
	}
	if a.setupFailed.Load() {
		warnings = append(warnings, "setting up the Secrets' informer failed (the log says why): Secrets are left out as if they could not be listed; restart the analyzer")
	}
	r.Warnings = append(append(append([]string(nil), warnings...), failing...), r.Warnings...)
	end := a.clock.Now()
	a.report.Store(&Report{Result: r, ComputedAt: end, Seconds: end.Sub(start).Seconds(), Objects: a.watcher.counts(),
		PodsOnMissingNodes: len(orphans), ListWatchFailing: len(failing), SetupFailed: a.setupFailed.Load()})
	a.computations.Add(1)
	a.partsComputed.Add(int64(recomputed))
	if a.opts.Events != nil {
		a.opts.Events.observe(ctx, r.Findings)
	}
	klog.FromContext(ctx).V(2).Info("Analysis computed", "seconds", end.Sub(start).Seconds(), "nodesRecomputed", recomputed,
		"pods", r.Cluster.Pods, "findings", len(r.Findings))
}
