package analyze

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// Options are a run's settings, with defaults from DefaultOptions.
type Options struct {
	Assume Assumptions
	// ReadConfigz reads each kubelet's /configz where allowed.
	ReadConfigz    bool
	ConfigzWorkers int
	// PageSize is how many objects each list request asks for.
	PageSize int64
	// Top is how many nodes, namespaces and objects the tables show, and
	// how many objects the immutable what-if marks.
	Top int
	// Measure, if positive, is the window over which the apiserver's
	// counters are read after the prediction.
	Measure time.Duration
	// AuditLog, if set, is an apiserver audit log to attribute per node:
	// over the measured window where Measure is set, over the whole log
	// otherwise.
	AuditLog string
	// ArrivalWindow is how far back pods' arrivals are counted for the
	// churn's estimate (WithArrivals).
	ArrivalWindow time.Duration
	// NodeSelector, a label selector, limits the analysis to the nodes it
	// selects and their pods.
	NodeSelector string
	// DriverSecrets assumes the driver's Secrets mode (Cluster.DriverSecrets).
	DriverSecrets bool
	// DriverReadsAsPods is the driver reading as the pods
	// (Cluster.DriverReadsAsPods).
	DriverReadsAsPods bool
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
}

// DefaultOptions are the kubelet's defaults where /configz cannot be
// read, and pages of 500 as kubectl asks for.
func DefaultOptions() Options {
	return Options{
		Assume:         Assumptions{Strategy: model.StrategyWatch, SyncFrequency: time.Minute},
		ReadConfigz:    true,
		ConfigzWorkers: 16,
		PageSize:       500,
		Top:            10,
		ArrivalWindow:  DefaultArrivalWindow,
	}
}

// Validate says what is wrong with o, all at once.
func (o Options) Validate() error {
	var errs []error
	if _, err := model.ParseStrategy(string(o.Assume.Strategy)); err != nil {
		errs = append(errs, fmt.Errorf("--assume-strategy: %w", err))
	}
	if o.Assume.SyncFrequency <= 0 {
		errs = append(errs, fmt.Errorf("--assume-sync-frequency must be positive, got %s", o.Assume.SyncFrequency))
	}
	if o.Top < 1 {
		errs = append(errs, fmt.Errorf("--top must be at least 1, got %d", o.Top))
	}
	if o.PageSize < 1 {
		errs = append(errs, fmt.Errorf("--page-size must be at least 1, got %d", o.PageSize))
	}
	if o.ConfigzWorkers < 1 {
		errs = append(errs, fmt.Errorf("--configz-workers must be at least 1, got %d", o.ConfigzWorkers))
	}
	if o.ArrivalWindow <= 0 {
		errs = append(errs, fmt.Errorf("--churn-window must be positive, got %s", o.ArrivalWindow))
	}
	if o.Measure < 0 {
		errs = append(errs, fmt.Errorf("--measure must not be negative, got %s", o.Measure))
	}
	return errors.Join(errs...)
}

// Run reads the cluster, predicts its load and, as asked, measures it.
func Run(ctx context.Context, client kubernetes.Interface, o Options) (Result, error) {
	progress := o.progress()
	start := time.Now()
	inv, err := inventory.List(ctx, client, o.NodeSelector, o.PageSize, progress)
	if err != nil {
		return Result{}, err
	}
	settings, warnings, err := NodeSettings(ctx, client, inv.Nodes, o)
	if err != nil {
		return Result{}, err
	}
	listed := time.Since(start)
	r := Predict(Cluster{Inventory: inv, Settings: settings, DriverSecrets: o.DriverSecrets, DriverReadsAsPods: o.DriverReadsAsPods}.WithArrivals(SightingsOf(inv), time.Now(), o.ArrivalWindow), o.Top)
	r.Warnings = append(warnings, r.Warnings...)
	o.printf("read the cluster in %s, predicted in %s\n", listed.Round(time.Millisecond), (time.Since(start) - listed).Round(time.Millisecond))
	if o.Measure > 0 {
		// The window opens after analyze's own lists, which are LISTs,
		// not the GETs and watches it counts.
		m, err := Measure(ctx, client.CoreV1().RESTClient(), o.Measure, func(left time.Duration) {
			o.printf("measuring the apiserver's counters: %s left\n", left.Round(time.Second))
		})
		if err != nil {
			return Result{}, err
		}
		r.Total.Measured = m
	}
	if o.AuditLog != "" {
		var window auditlog.Window
		if m := r.Total.Measured; m != nil {
			window = auditlog.Window{From: m.From, To: m.To}
		}
		if err := AttributeAuditLog(&r, o.AuditLog, window); err != nil {
			return Result{}, err
		}
	}
	return r, nil
}

// NodeSettings reads the settings of nodes' kubelets as o says: from
// their /configz where o.ReadConfigz and this user may, assumed otherwise.
func NodeSettings(ctx context.Context, client kubernetes.Interface, nodes []inventory.NodeInfo, o Options) (map[string]Settings, []string, error) {
	var reader configzReader
	if o.ReadConfigz {
		reader = proxyConfigz{client: client}
	}
	return ReadSettings(ctx, reader, nodes, o.Assume, o.ConfigzWorkers, o.progress())
}

func (o Options) printf(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format, args...)
	}
}

// progress prints a line per page of a long list, and one when a list
// is done.
func (o Options) progress() inventory.Progress {
	return func(resource string, listed int, done bool) {
		if done {
			o.printf("listed %d %s\n", listed, resource)
		} else {
			o.printf("listing %s: %d so far\n", resource, listed)
		}
	}
}
