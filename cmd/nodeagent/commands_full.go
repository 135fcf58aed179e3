//go:build !agentonly

package main

// The full build: the agent and the tools that measure and predict.
func init() {
	commands["analyze"] = command{summary: "Predict, read-only, a live cluster's kubelet ConfigMap and Secret load, and what each fix saves", run: runAnalyze}
	commands["convert"] = command{summary: "Rewrite manifests so the CSI driver serves their pods' ConfigMap volumes, subPath mounts included", run: runConvert}
	commands["compare"] = command{summary: "Measure ConfigMap GET load before and after kubernetes#120255", run: runCompare}
}
