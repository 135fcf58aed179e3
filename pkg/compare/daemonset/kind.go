package daemonset

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/nodeagent-io/nodeagent/pkg/compare"
)

// DefaultTarget is the DaemonSet the chart and deploy/ install.
const DefaultTarget = "nodeagent/nodeagent"

// Kind is the DaemonSet fleet as `compare --fleet daemonset` offers it
// (`--daemonset NS/NAME` alone is its older spelling): nodeagent's agents
// deployed on the cluster's own nodes, switched between the modes by
// rollouts and restored at the end.
func Kind() compare.FleetKind {
	opts := Options{}
	fs := pflag.NewFlagSet("daemonset", pflag.ContinueOnError)
	fs.StringVar(&opts.DaemonSet, "daemonset", "", "namespace/name of nodeagent deployed as a DaemonSet, whose agents the run measures on the real nodes of the cluster kubectl would use (or --kubeconfig's), switching it between the modes by rollouts and restoring it at the end. Given alone, it chooses --fleet daemonset. Default with --fleet daemonset: "+DefaultTarget+".")
	fs.StringVar(&opts.NodeSelector, "node-selector", "", "A label selector (e.g. pool=general) that limits the run's pods to the matching nodes among the DaemonSet's.")
	fs.StringVar(&opts.PodImage, "pod-image", compare.DefaultPodImage, "Image of the run's pods, which the nodes' kubelets start; use one the nodes already have.")
	fs.DurationVar(&opts.RolloutTimeout, "rollout-timeout", 5*time.Minute, "How long each rollout of the DaemonSet may take.")
	return compare.FleetKind{
		Name:         "daemonset",
		Summary:      "the agents of nodeagent deployed as a DaemonSet, on the cluster's own nodes, switched between the modes by rollouts",
		Capabilities: compare.Capabilities{OwnCluster: true},
		Flags:        fs,
		Selected:     func() bool { return opts.DaemonSet != "" },
		// watch needs deploy/overlays/watch's RBAC.
		DefaultModes: "every-sync,first-reference",
		Adjust: func(flags *pflag.FlagSet, s *compare.Scenario) error {
			if opts.DaemonSet == "" {
				opts.DaemonSet = DefaultTarget
			}
			if !flags.Changed("nodes") {
				s.Nodes = 0 // all of the DaemonSet's nodes
			}
			if !flags.Changed("phase-duration") {
				s.PhaseDuration = 0 // four mean sync intervals, at least a minute
			}
			if flags.Changed("sync-frequency") {
				opts.SyncFrequency = s.SyncFrequency
			}
			return nil
		},
		New: func(compare.FleetEnv) (compare.Fleet, error) { return New(opts) },
	}
}
