package inprocess

import (
	"github.com/spf13/pflag"

	"github.com/nodeagent-io/nodeagent/pkg/compare"
)

// Kind is the in-process fleet as `compare --fleet in-process` offers
// it: the default, on simulated nodes of the local control plane, or of
// the cluster --kubeconfig names.
func Kind() compare.FleetKind {
	var metricsAddress string
	fs := pflag.NewFlagSet("in-process", pflag.ContinueOnError)
	fs.StringVar(&metricsAddress, "metrics-address", "", "Serve the metrics of the agents this process runs at http://<address>/metrics, each series labelled with its node (node=\"<name>\"), for a Prometheus to scrape with deploy/prometheus's rules (docs/monitoring.md). Empty: not served.")
	return compare.FleetKind{
		Name:         "in-process",
		Summary:      "one agent per simulated node, all in this process, so that a thousand nodes fit on one machine (the default)",
		Capabilities: compare.Capabilities{OnThisMachine: true, CreatesNodes: true},
		Flags:        fs,
		New: func(env compare.FleetEnv) (compare.Fleet, error) {
			// On the local control plane each agent acts as its node,
			// so that the audit log attributes its requests to it.
			return New(Options{RESTConfig: env.RESTConfig, ActAsNodes: env.NodeIdentity != nil, MetricsAddress: metricsAddress})
		},
	}
}
