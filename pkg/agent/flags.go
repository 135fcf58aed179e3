package agent

import (
	"strconv"

	"github.com/spf13/pflag"

	"github.com/nodeagent-io/nodeagent/internal/cliflag"
	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// The flags of `nodeagent run`, spelled here only: the command binds them
// to a Config (AddFlags), and whatever starts agents (compare's agent
// processes, its DaemonSet rollouts) writes them from a Config (Flags,
// Args).
const (
	FlagNodeName           = "node-name"
	FlagRootDir            = "root-dir"
	FlagSyncFrequency      = "sync-frequency"
	FlagConfigMapStrategy  = "configmap-strategy"
	FlagCacheInvalidation  = "cache-invalidation"
	FlagRemountOnChange    = "remount-on-change"
	FlagKubeAPIQPS         = "kube-api-qps"
	FlagKubeAPIBurst       = "kube-api-burst"
	FlagKubeAPIContentType = "kube-api-content-type"
	FlagEventQPS           = "event-qps"
	FlagEventBurst         = "event-burst"
	FlagHTTPAddress        = "http-address"
	FlagProfiling          = "profiling"
	FlagFeatureGates       = "feature-gates"
)

// ContentType is the wire format of the agent's API requests.
type ContentType string

const (
	// ContentTypeProtobuf is the kubelet's.
	ContentTypeProtobuf ContentType = "protobuf"
	ContentTypeJSON     ContentType = "json"
)

// ContentTypes lists the valid wire formats.
var ContentTypes = []ContentType{ContentTypeProtobuf, ContentTypeJSON}

// AddFlags binds c's fields to fs, with c's values as the defaults. The
// typed choices refuse an unknown value when the flag is parsed.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.NodeName, FlagNodeName, c.NodeName, "The node whose pods this agent serves. Default: $NODE_NAME, else the hostname.")
	fs.StringVar(&c.RootDir, FlagRootDir, c.RootDir, "Directory for pod volumes: <root-dir>/pods/<uid>/volumes/kubernetes.io~configmap/<volume>.")
	fs.DurationVar(&c.SyncFrequency, FlagSyncFrequency, c.SyncFrequency, "Period S of the periodic pod sync; each pod is resynced after S plus up to S/2 of jitter.")
	fs.Var(cliflag.NewChoice(&c.Strategy, model.Strategies), FlagConfigMapStrategy,
		"How ConfigMap changes are detected, as the kubelet's configMapAndSecretChangeDetectionStrategy (any case): Get (a quorum GET per remount), Cache (TTL cache) or Watch (one watch per ConfigMap).")
	fs.Var(cliflag.NewChoice(&c.Invalidation, configmapcache.Invalidations), FlagCacheInvalidation,
		"When the Cache strategy drops a cached ConfigMap: every-sync (the kubelet before kubernetes#120255: a quorum GET per pod sync) or first-reference (after it).")
	fs.BoolVar(&c.RemountOnChange, FlagRemountOnChange, c.RemountOnChange, "With --configmap-strategy=Watch, remount the pods that use a ConfigMap as soon as the watch sees it change, instead of at their next sync.")
	fs.Float32Var(&c.KubeAPIQPS, FlagKubeAPIQPS, c.KubeAPIQPS, "Queries per second to the apiserver, as in the kubelet.")
	fs.IntVar(&c.KubeAPIBurst, FlagKubeAPIBurst, c.KubeAPIBurst, "Burst of queries to the apiserver, as in the kubelet.")
	fs.Float32Var(&c.EventQPS, FlagEventQPS, c.EventQPS, "Events posted per second, on a client of their own, as the kubelet's --event-qps; 0 is no limit.")
	fs.IntVar(&c.EventBurst, FlagEventBurst, c.EventBurst, "Burst of events posted, as the kubelet's --event-burst.")
	fs.Var(cliflag.NewChoice(&c.ContentType, ContentTypes), FlagKubeAPIContentType, "Wire format of API requests: protobuf or json.")
	fs.StringVar(&c.HTTPAddress, FlagHTTPAddress, c.HTTPAddress, "Address serving /metrics, /healthz, /readyz and /debug/volumes. Empty: none.")
	fs.Var(featureGates{c}, FlagFeatureGates, "Feature gates as the kubelet's, NAME=true|false separated by commas: "+GateVolumeUserFields+
		" (default false, as the kubelet v1.37's) sets the files' owner from a volume's defaultUser and its items' user.")
	fs.BoolVar(&c.Profiling, FlagProfiling, c.Profiling, "Also serve Go's CPU, heap and goroutine profiles at /debug/pprof/ on --http-address (plain HTTP, unauthenticated: keep the address local); without it the agent does not sample its heap.")
}

// Flag is one flag of `nodeagent run` and its value.
type Flag struct{ Name, Value string }

// Arg is the flag as one argument, --name=value.
func (f Flag) Arg() string { return "--" + f.Name + "=" + f.Value }

// Flags returns every field of c as the flag that sets it: the mode's
// settings first, then the rest.
func (c Config) Flags() []Flag {
	return []Flag{
		{FlagNodeName, c.NodeName},
		{FlagRootDir, c.RootDir},
		{FlagConfigMapStrategy, string(c.Strategy)},
		{FlagCacheInvalidation, string(c.Invalidation)},
		{FlagRemountOnChange, strconv.FormatBool(c.RemountOnChange)},
		{FlagSyncFrequency, c.SyncFrequency.String()},
		{FlagKubeAPIQPS, strconv.FormatFloat(float64(c.KubeAPIQPS), 'f', -1, 32)},
		{FlagKubeAPIBurst, strconv.Itoa(c.KubeAPIBurst)},
		{FlagEventQPS, strconv.FormatFloat(float64(c.EventQPS), 'f', -1, 32)},
		{FlagEventBurst, strconv.Itoa(c.EventBurst)},
		{FlagKubeAPIContentType, string(c.ContentType)},
		{FlagHTTPAddress, c.HTTPAddress},
		{FlagProfiling, strconv.FormatBool(c.Profiling)},
		{FlagFeatureGates, featureGates{&c}.String()},
	}
}

// Command is the command line of `nodeagent run` with c and the
// kubeconfig (not part of a Config), after the binary's name: what compare
// runs as an agent process and the e2e tests run as an agent.
func (c Config) Command(kubeconfig string) []string {
	return append([]string{"run", "--kubeconfig=" + kubeconfig}, c.Args()...)
}

// Args is c as the arguments of `nodeagent run` (without "run" and
// --kubeconfig, which are not part of a Config).
func (c Config) Args() []string {
	var args []string
	for _, f := range c.Flags() {
		args = append(args, f.Arg())
	}
	return args
}
