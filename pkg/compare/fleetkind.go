package compare

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

// FleetKind is one way of running the agents, chosen by name with
// `compare --fleet`. Each fleet package offers one (inprocess.Kind,
// processes.Kind, daemonset.Kind): its name, what it can do, its own
// flags, and how it is built once the run is connected. The command knows
// the kinds only as this list; the checks that hold for every kind
// (CheckFleet) read their capabilities, never their names.
type FleetKind struct {
	// Name is what --fleet takes.
	Name string
	// Summary says in a sentence what it runs, for --help.
	Summary string
	Capabilities
	// Flags are the kind's own flags. A flag of one kind used with
	// another is refused, naming the kind it belongs to.
	Flags *pflag.FlagSet
	// Selected, optional, says whether the kind's own flags ask for it
	// (the older spellings `--daemonset NS/NAME` and `--agent-processes`),
	// when --fleet is not given.
	Selected func() bool
	// DefaultModes, when set, replaces --modes' default for this kind.
	DefaultModes string
	// Adjust, optional, gives the scenario the kind's defaults for the
	// flags the user left unset (fs says which) and refuses what it
	// cannot do beyond its capabilities. It runs before the scenario is
	// validated.
	Adjust func(fs *pflag.FlagSet, s *Scenario) error
	// New builds the fleet once the run is connected.
	New func(env FleetEnv) (Fleet, error)
}

// Capabilities are what a kind of fleet can do.
type Capabilities struct {
	// OnThisMachine: its agents run on this machine and write their volumes
	// to its disk, where the run can watch updates arrive (--update-rate),
	// and the scenario must fit the machine.
	OnThisMachine bool
	// CreatesNodes: it runs on Nodes the run creates and annotates with
	// the scenario's TTL (--ttl), beside which the reference kubelets can
	// run; otherwise on the cluster's own nodes, whose TTL is the
	// cluster's.
	CreatesNodes bool
	// NodeIdentities: its agents act as their nodes with identities that
	// only the local control plane issues: not with --kubeconfig.
	NodeIdentities bool
	// OwnCluster: it measures the cluster kubectl would use when no
	// --kubeconfig is given, instead of starting a local control plane.
	OwnCluster bool
}

// FleetEnv is what a fleet kind is built with.
type FleetEnv struct {
	// RESTConfig reaches the apiserver as the run's setup identity.
	RESTConfig *rest.Config
	// NodeIdentity issues node identities; nil unless the run started
	// the local control plane.
	NodeIdentity func(node string) (*rest.Config, error)
}

// ChooseFleet is the kind --fleet names, or, when it is empty, the kind
// whose own flags ask for it, or the first of kinds (the default).
func ChooseFleet(kinds []FleetKind, name string) (*FleetKind, error) {
	var names []string
	for i := range kinds {
		names = append(names, kinds[i].Name)
		if name != "" && strings.EqualFold(kinds[i].Name, name) {
			return &kinds[i], nil
		}
	}
	if name != "" {
		return nil, fmt.Errorf("--fleet %q: choose one of %s", name, strings.Join(names, ", "))
	}
	var asked []*FleetKind
	for i := range kinds {
		if kinds[i].Selected != nil && kinds[i].Selected() {
			asked = append(asked, &kinds[i])
		}
	}
	switch len(asked) {
	case 0:
		return &kinds[0], nil
	case 1:
		return asked[0], nil
	}
	return nil, fmt.Errorf("the flags ask for the %s and the %s fleets: choose one", asked[0].Name, asked[1].Name)
}

// CheckFleet refuses what the chosen kind cannot do with the flags fs
// parsed and the scenario they give, saying which flag to change: another
// kind's flags, and the scenario's demands on its capabilities. Every
// kind's refusals are these, written once.
func CheckFleet(kind *FleetKind, kinds []FleetKind, fs *pflag.FlagSet, s Scenario, kubeconfigGiven bool) error {
	var errs []error
	for _, other := range kinds {
		if other.Name == kind.Name || other.Flags == nil {
			continue
		}
		other.Flags.VisitAll(func(f *pflag.Flag) {
			if fs.Changed(f.Name) && (kind.Flags == nil || kind.Flags.Lookup(f.Name) == nil) {
				errs = append(errs, fmt.Errorf("--%s belongs to --fleet %s, not %s", f.Name, other.Name, kind.Name))
			}
		})
	}
	if s.UpdateRate > 0 && !kind.OnThisMachine {
		errs = append(errs, fmt.Errorf("--update-rate measures updates arriving on this machine's disk: not with --fleet %s, whose agents write elsewhere", kind.Name))
	}
	if s.PodChurn > 0 && !kind.CreatesNodes {
		errs = append(errs, fmt.Errorf("--pod-churn creates and deletes pods on the Nodes the run creates: not with --fleet %s, on the cluster's own nodes, whose kubelets would start every one", kind.Name))
	}
	if fs.Changed("ttl") && !kind.CreatesNodes {
		errs = append(errs, fmt.Errorf("--ttl is written on the Nodes the run creates: --fleet %s runs on the cluster's own nodes, whose TTL the cluster's TTL controller owns (the run reads and reports it)", kind.Name))
	}
	if kubeconfigGiven && kind.NodeIdentities {
		errs = append(errs, fmt.Errorf("--fleet %s runs its agents as simulated nodes of a local control plane, which issues their node identities: leave out --kubeconfig and --context, or choose another fleet", kind.Name))
	}
	if slices.ContainsFunc(s.Modes, modes.Mode.IsReferenceKubelet) {
		switch {
		case !kind.CreatesNodes:
			errs = append(errs, fmt.Errorf("the kubelet-* modes run reference kubelets on simulated nodes beside the agents: not with --fleet %s, on the cluster's own nodes", kind.Name))
		case kubeconfigGiven:
			errs = append(errs, errors.New("the kubelet-* modes run reference kubelets as simulated nodes of a local control plane, which issues their node identities: leave out --kubeconfig, or those modes"))
		}
	}
	return errors.Join(errs...)
}

// FleetNames lists kinds' names, for --help.
func FleetNames(kinds []FleetKind) string {
	var b strings.Builder
	for i, k := range kinds {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", k.Name, k.Summary)
	}
	return b.String()
}
