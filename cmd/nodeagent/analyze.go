//go:build !agentonly

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/internal/cliflag"
	"github.com/nodeagent-io/nodeagent/internal/daemon"
	"github.com/nodeagent-io/nodeagent/internal/profiling"
	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/analyze/live"
	"github.com/nodeagent-io/nodeagent/pkg/csidriver"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// outputFormat is how analyze prints its result on stdout.
type outputFormat string

const (
	outputTable    outputFormat = "table"
	outputJSON     outputFormat = "json"
	outputMarkdown outputFormat = "markdown"
)

var outputFormats = []outputFormat{outputTable, outputJSON, outputMarkdown}

// analyzeFlags are analyze's flags: the options of one analysis, and
// those of --serve.
type analyzeFlags struct {
	o                           analyze.Options
	kubeconfig, kubeContext     string
	outputDir, serve            string
	failOn                      []string
	qps                         float32
	burst                       int
	output                      outputFormat
	settingsInterval            time.Duration
	maxFindingSeries, maxEvents int
	profile, events             bool
	driverReadAs                csidriver.ReadAs
}

func runAnalyze(args []string, stdout io.Writer) error {
	fs := newFlagSet("analyze", "Predict, read-only, the ConfigMap and Secret GETs and watches that a live cluster's kubelets send to the apiserver and etcd, per node, namespace and object, and what each fix would save.", stdout)
	f := newAnalyzeFlags(fs)
	// -v: at 2, --serve logs each computation (its time, the nodes' parts
	// it computed).
	logging := daemon.AddLoggingFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	failTypes, err := f.validate(fs)
	if err != nil {
		return err
	}
	if err := logging.SetUp(); err != nil {
		return err
	}
	defer klog.Flush()
	client, err := analyzeClient(f.kubeconfig, f.kubeContext, f.qps, f.burst)
	if err != nil {
		return err
	}
	ctx, stop := daemon.SignalContext()
	defer stop()
	if f.serve != "" {
		lo := live.Options{SettingsInterval: f.settingsInterval, MaxFindingSeries: f.maxFindingSeries}
		if f.events {
			recorder, stopEvents := live.NewRecorder(ctx, client)
			defer stopEvents()
			lo.Events = live.NewEvents(recorder, f.maxEvents)
		}
		return serveAnalysis(ctx, client, f.o, f.serve, lo, f.profile)
	}
	result, err := analyze.Run(ctx, client, f.o)
	if err != nil {
		return err
	}
	if err := writeAnalysis(stdout, result, f.output, f.outputDir, f.o.Top); err != nil {
		return err
	}
	return failOnFindings(result, failTypes)
}

// newAnalyzeFlags registers analyze's flags on fs, with their defaults.
func newAnalyzeFlags(fs *pflag.FlagSet) *analyzeFlags {
	// client-go's default of 5 requests a second would hold a 5,000-node
	// cluster's 462 pages of lists to 90 s; kubectl asks for 50.
	f := &analyzeFlags{o: analyze.DefaultOptions(), qps: 50, burst: 100, output: outputTable, driverReadAs: csidriver.ReadAsPod}
	f.o.Progress = os.Stderr
	o := &f.o
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Kubeconfig of the cluster to analyze. Empty: $KUBECONFIG, else ~/.kube/config, else the pod's service account, as kubectl finds the cluster.")
	fs.StringVarP(&o.NodeSelector, "node-selector", "l", "", "A label selector (e.g. node.kubernetes.io/instance-type=m5.large): analyze only the nodes it selects and their pods. Empty: every node.")
	fs.StringVar(&f.kubeContext, "context", "", "The kubeconfig context to use. Empty: its current context.")
	fs.Var(cliflag.NewChoice(&o.Assume.Strategy, []model.Strategy{model.StrategyWatch, model.StrategyCache, model.StrategyGet}), "assume-strategy",
		"The kubelets' configMapAndSecretChangeDetectionStrategy where their /configz cannot be read: Watch (the kubelet's default), Cache or Get.")
	fs.DurationVar(&o.Assume.SyncFrequency, "assume-sync-frequency", o.Assume.SyncFrequency, "The kubelets' syncFrequency where their /configz cannot be read (the kubelet's default is 1m).")
	fs.BoolVar(&o.ReadConfigz, "read-configz", o.ReadConfigz, "Read each kubelet's /configz through the apiserver's node proxy where this user may get nodes/proxy (never required: that permission is close to exec on the node). false: assume for every node.")
	fs.IntVar(&o.ConfigzWorkers, "configz-workers", o.ConfigzWorkers, "How many /configz reads run at once.")
	fs.Int64Var(&o.PageSize, "page-size", o.PageSize, "Objects per list request: lists go in pages so as not to load the apiserver being studied.")
	fs.IntVar(&o.Top, "top", o.Top, "How many nodes, namespaces and objects the tables show (and namespaces and workloads in move-to-driver's, and its metrics), and how many objects the immutable what-if marks.")
	fs.BoolVar(&o.DriverSecrets, "driver-secrets", false, "The CSI driver runs, or would run, in its Secrets mode (nodeagent csi --secrets, the chart's csi.secrets.enabled): move-to-driver moves secret volumes and projected volumes of ConfigMap and Secret sources too, as its webhook does, and notConverted counts them. false: configMap volumes alone, as the driver's default mode serves.")
	fs.Var(cliflag.NewChoice(&f.driverReadAs, []csidriver.ReadAs{csidriver.ReadAsPod, csidriver.ReadAsDriver}), "driver-read-as",
		"Whose permission the CSI driver reads with, or would (nodeagent csi --read-as, the chart's csi.readAs). pod: each of its volumes reads its objects with a quorum GET when published and at each renewal of its pod's token (every 48 min), "+
			"which its load and move-to-driver count. driver: its watches alone.")
	fs.DurationVar(&o.ArrivalWindow, "churn-window", o.ArrivalWindow, "How far back pods that come and go (Jobs', CronJobs' runs) are counted: their arrivals in this window, over it, are the churn's rate (a CronJob's from its runs' spacing).")
	fs.DurationVar(&o.Measure, "measure", 0, "After predicting, read the apiserver's own ConfigMap and Secret counters over this window (e.g. 5m) and show them beside the prediction. Needs get on /metrics. 0: do not measure.")
	fs.StringVar(&o.AuditLog, "audit-log", "", "An apiserver audit log (JSON lines, configmaps and secrets get/list/watch at Metadata level) to attribute per node (user system:node:NAME) beside each node's prediction: over the --measure window where one is given (the log of this cluster's apiserver, read as it is written), otherwise over the whole log.")
	fs.VarP(cliflag.NewChoice(&f.output, outputFormats), "output", "o", "Output on stdout: table, json or markdown.")
	fs.StringVar(&f.outputDir, "output-dir", "", "Also write report.json, report.md and chart.svg/png (now, each what-if, measured) into this directory.")
	fs.Float32Var(&f.qps, "kube-api-qps", f.qps, "Requests a second analyze may send to the apiserver (its list pages and /configz reads).")
	fs.IntVar(&f.burst, "kube-api-burst", f.burst, "Requests analyze may send at once, above --kube-api-qps.")
	fs.StringVar(&f.serve, "serve", "", "Keep running (analyze always on, docs/analyze.md): watch the cluster, recompute the report within seconds of each change, and serve /report (the JSON of -o json, with computedAt), /metrics, /healthz and /readyz on this address (e.g. :8080). Empty: analyze once and exit.")
	fs.DurationVar(&f.settingsInterval, "settings-interval", 10*time.Minute, "With --serve: how often every kubelet's /configz is read again (a node's is read again at once when its Node changes).")
	fs.IntVar(&f.maxFindingSeries, "max-finding-series", 1000, "With --serve: at most this many series of nodeagent_analyze_finding (one per finding's pod, container and object; the most pressing first); the counts by type and namespace stay exact.")
	fs.BoolVar(&f.profile, "profiling", false, "With --serve: also serve Go's CPU, heap and goroutine profiles at /debug/pprof/ (plain HTTP, unauthenticated: keep the address local).")
	fs.BoolVar(&f.events, "events", false, "With --serve: post a Warning event on the pod of each finding that appears while it runs (the findings at its start are the baseline). Its one write: needs create and patch on events.")
	fs.IntVar(&f.maxEvents, "max-events-per-report", 50, "With --events: at most this many events after one report; the rest are counted in nodeagent_analyze_events_dropped_total.")
	fs.StringSliceVar(&f.failOn, "fail-on", nil, fmt.Sprintf("Finding types (comma-separated, of %v) that make analyze exit with code %d after printing its report, when it finds any: a check for CI or a cron job. Empty: findings never change the exit code.", analyze.FindingTypes, exitFindings))
	return f
}

// validate checks the parsed flags together, and returns the finding
// types of --fail-on.
func (f *analyzeFlags) validate(fs *pflag.FlagSet) ([]analyze.FindingType, error) {
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	failTypes, err := parseFindingTypes(f.failOn)
	if err != nil {
		return nil, err
	}
	if f.qps <= 0 || f.burst < 1 {
		return nil, fmt.Errorf("--kube-api-qps must be positive and --kube-api-burst at least 1, got %g and %d", f.qps, f.burst)
	}
	f.o.DriverReadsAsPods = f.driverReadAs == csidriver.ReadAsPod
	if err := f.o.Validate(); err != nil {
		return nil, err
	}
	if f.serve != "" {
		if err := serveConflicts(fs); err != nil {
			return nil, err
		}
	} else if f.events || f.profile {
		return nil, fmt.Errorf("--events and --profiling apply to --serve, which keeps running")
	}
	if f.maxEvents < 1 {
		return nil, fmt.Errorf("--max-events-per-report must be at least 1, got %d", f.maxEvents)
	}
	return failTypes, nil
}

// serveConflicts refuses the flags that mean one run, beside --serve.
func serveConflicts(fs *pflag.FlagSet) error {
	var set []string
	for _, name := range []string{"output", "output-dir", "measure", "audit-log", "fail-on"} {
		if fs.Changed(name) {
			set = append(set, "--"+name)
		}
	}
	if len(set) > 0 {
		return fmt.Errorf("%s apply to one run, not to --serve: its report is at /report and its findings in /metrics", strings.Join(set, ", "))
	}
	return nil
}

// serveAnalysis runs analyze always on (pkg/analyze/live) and serves its
// endpoints on address until ctx ends.
func serveAnalysis(ctx context.Context, client kubernetes.Interface, o analyze.Options, address string, lo live.Options, profile bool) error {
	o.Progress = nil
	lo.Analyze = o
	softMemoryLimit(ctx)
	a := live.New(client, lo)
	restoreGC := collectMoreOften()
	go func() {
		select {
		case <-a.FirstReport():
		case <-ctx.Done():
		}
		restoreGC()
	}()
	registry := prometheus.NewRegistry()
	registry.MustRegister(a.Collector(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if lo.Events != nil {
		registry.MustRegister(lo.Events.Collectors()...)
	}
	listener, err := net.Listen("tcp", address)
	if err != nil {
		return fmt.Errorf("listening on --serve %s: %w", address, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", a.Handler(registry))
	if profile {
		profiling.Handle(mux)
	}
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "analyze always on: serving /report, /metrics, /healthz and /readyz on %s\n", listener.Addr())
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return daemon.Serve(ctx, server, listener) })
	g.Go(func() error { return a.Run(ctx) })
	return g.Wait()
}

// softMemoryLimit sets Go's soft memory limit to nine tenths of the
// container's, where it has one and GOMEMLIMIT does not say otherwise:
// the collector then works harder as the heap nears the limit, instead of
// letting it grow to twice what is live between two collections and the
// container be killed (docs/analyze.md, "Sizing"). And, unless GOGC says
// otherwise, a collection when the heap has grown by half, not doubled:
// what the analyzer holds is long-lived and what it allocates per
// computation small, so the collections cost it little and its peak stays
// nearer what it holds.
func softMemoryLimit(ctx context.Context) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(50)
	}
	limit, err := memlimit.Set(memlimit.WithRatio(0.9), memlimit.WithProvider(memlimit.FromCgroup))
	switch {
	case err != nil:
		klog.FromContext(ctx).Info("No soft memory limit: the container's limit could not be read", "err", err)
	case limit > 0 && limit < math.MaxInt64:
		klog.FromContext(ctx).Info("Soft memory limit set", "bytes", limit)
	}
}

// analyzeClient is analyze's client of the cluster kubectl would use (or
// --kubeconfig's), at analyze's own rate limits, once the cluster answers.
func analyzeClient(kubeconfig, kubeContext string, qps float32, burst int) (kubernetes.Interface, error) {
	config, err := daemon.RESTConfig(kubeconfig, kubeContext)
	if err != nil {
		return nil, err
	}
	config.UserAgent = "nodeagent-analyze"
	config.QPS, config.Burst = qps, burst
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("cannot reach the cluster at %s: %w", config.Host, err)
	}
	return client, nil
}

// writeAnalysis writes the report files into outputDir, when set, and the
// report on stdout in the chosen format.
func writeAnalysis(stdout io.Writer, result analyze.Result, output outputFormat, outputDir string, top int) error {
	if outputDir != "" {
		if err := result.WriteDir(outputDir, top); err != nil {
			return fmt.Errorf("writing %s: %w", outputDir, err)
		}
		fmt.Fprintf(os.Stderr, "wrote report.json, report.md and chart.svg/png to %s\n", outputDir)
	}
	switch output {
	case outputJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(result)
	case outputMarkdown:
		_, err := io.WriteString(stdout, result.Markdown(top))
		return err
	default:
		return result.WriteText(stdout, top)
	}
}

// exitFindings is analyze's exit code when --fail-on's findings are found.
const exitFindings = 3

func parseFindingTypes(names []string) ([]analyze.FindingType, error) {
	var types []analyze.FindingType
	for _, name := range names {
		t, err := analyze.ParseFindingType(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("--fail-on: %w", err)
		}
		types = append(types, t)
	}
	return types, nil
}

// failOnFindings is an exitError when the result holds findings of types.
func failOnFindings(r analyze.Result, types []analyze.FindingType) error {
	var found []string
	for _, t := range types {
		if n := r.Summary.Findings[t]; n > 0 {
			found = append(found, fmt.Sprintf("%d %s", n, t))
		}
	}
	if len(found) == 0 {
		return nil
	}
	return exitError{code: exitFindings, msg: "found " + strings.Join(found, ", ") + " (--fail-on)"}
}
