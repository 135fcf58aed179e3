//go:build agentonly

package main

// The agent-only build, which the image ships (make image) and compare's
// --agent-processes runs: run, csi, webhook, uninstall-check and version, without analyze,
// compare and convert (commands_full.go's). Leaving them out leaves out
// client-go's clientset and the scheme of every
// API group with them, and the agent's resident memory drops by about a
// third (docs/performance.md, "Where the memory is").
func init() {
	leftOut = []string{"analyze", "compare", "convert"}
}
