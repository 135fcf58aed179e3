package processes

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/nodeagent-io/nodeagent/pkg/compare"
)

// Kind is the fleet of agent processes as `compare --fleet processes`
// offers it (`--agent-processes` is its older spelling): each simulated
// node's agent its own `nodeagent run`, as on a real node, so that the CPU
// time and memory reported are each agent's alone.
func Kind() compare.FleetKind {
	var selected bool
	var binary string
	fs := pflag.NewFlagSet("processes", pflag.ContinueOnError)
	fs.BoolVar(&selected, "agent-processes", false, "The same as --fleet processes.")
	fs.StringVar(&binary, "agent-binary", "", "The nodeagent binary each node runs. Empty: the agent-only build beside this binary (nodeagent-agent, which make build writes and the image ships), else this binary.")
	return compare.FleetKind{
		Name:         "processes",
		Summary:      "each simulated node's agent its own 'nodeagent run' process, whose CPU and memory are read from /proc (local control plane only)",
		Capabilities: compare.Capabilities{OnThisMachine: true, CreatesNodes: true, NodeIdentities: true},
		Flags:        fs,
		Selected:     func() bool { return selected },
		New: func(env compare.FleetEnv) (compare.Fleet, error) {
			path, err := findAgentBinary(binary)
			if err != nil {
				return nil, err
			}
			return Agents(path, env.NodeIdentity)
		},
	}
}

// findAgentBinary is the binary the agents' processes run: flagValue if
// set, else the agent-only build beside this binary (what the image ships,
// so that the memory measured is a deployed agent's), else this binary.
func findAgentBinary(flagValue string) (string, error) {
	if flagValue != "" {
		if _, err := os.Stat(flagValue); err != nil {
			return "", fmt.Errorf("--agent-binary: %w", err)
		}
		return flagValue, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this binary: %w", err)
	}
	agentOnly := filepath.Join(filepath.Dir(self), "nodeagent-agent")
	if info, err := os.Stat(agentOnly); err == nil && !info.IsDir() {
		return agentOnly, nil
	}
	return self, nil
}
