// Package results is what a compare run measured, as report.json keeps it
// (Report, ScenarioReport, PhaseResult: stable JSON keys, which tools
// read), and its renderings: the text and Markdown tables, report.md,
// the charts, the fidelity lines beside the real kubelets, and the tables
// the docs quote from recorded runs (LatencyTable, ResourceTable).
package results

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// ScenarioReport is the scenario as report.json records it.
type ScenarioReport struct {
	Nodes                int          `json:"nodes"`
	PodsPerNode          int          `json:"pods_per_node"`
	ConfigMapsPerPod     int          `json:"configmaps_per_pod"`
	SharedConfigMaps     int          `json:"shared_configmaps"`
	SyncFrequencySeconds float64      `json:"sync_frequency_seconds"`
	TTLSeconds           float64      `json:"ttl_seconds"`
	PhaseSeconds         float64      `json:"phase_seconds"`
	Modes                []modes.Mode `json:"modes"`
	APIServer            string       `json:"apiserver"`
	APIServerVersion     string       `json:"apiserver_version,omitempty"`
	// Fleet is how the agents ran (compare's --fleet); FleetDescription,
	// where the fleet gives one, says what a reader must know of it.
	Fleet            string `json:"fleet,omitempty"`
	FleetDescription string `json:"fleet_description,omitempty"`
	// DaemonSet names the deployed agents measured; empty when the agents
	// ran in the compare process on simulated nodes.
	DaemonSet string `json:"daemonset,omitempty"`
	// AgentNodes is how many nodes run an agent of the DaemonSet; the
	// run's pods are on Nodes of them.
	AgentNodes int `json:"agent_nodes,omitempty"`
	// ServedPods counts the other pods on those nodes whose volumes read
	// ConfigMaps or Secrets, which the model includes; ServedVolumes the
	// volumes of theirs that the agents keep on disk (ConfigMap and
	// projected volumes that mount; the key keeps its older name).
	ServedPods    int `json:"served_pods,omitempty"`
	ServedVolumes int `json:"served_configmap_volumes,omitempty"`
	// ServiceAccountVolume records whether the run's pods kept the
	// kube-api-access volume; ServiceAccountVolumes counts those the
	// cluster's admission plugin actually added.
	ServiceAccountVolume  bool `json:"service_account_volume"`
	ServiceAccountVolumes int  `json:"service_account_volumes"`
	// AgentProcesses says nodeagent's agents ran as processes of their
	// own (--agent-processes), so their CPU and memory are theirs alone.
	AgentProcesses bool `json:"agent_processes,omitempty"`
	// AgentBinary is the binary those processes ran: its build decides
	// their memory (the agent-only build's is the smaller; docs/performance.md).
	AgentBinary string `json:"agent_binary,omitempty"`
	// UpdateRate is the ConfigMap updates per second during each measured
	// window (0: none), whose latency the phases report.
	UpdateRate float64 `json:"update_rate,omitempty"`
	// PodChurn is the pods a second that arrive on each node during each
	// window, each there PodLifetimeSeconds, reading ConfigMapsPerPod of
	// ChurnConfigMaps of its node's own and kube-root-ca.crt.
	PodChurn           float64 `json:"pod_churn,omitempty"`
	PodLifetimeSeconds float64 `json:"pod_lifetime_seconds,omitempty"`
	ChurnConfigMaps    int     `json:"churn_configmaps,omitempty"`
	// PodPhases is "mixed" when each phase mixed its pods' sync phases
	// before measuring, "together" when it measured right after the
	// agents started.
	PodPhases string   `json:"pod_phases"`
	Notes     []string `json:"notes,omitempty"`
}

// DescribeVolumes records how many of the run's pods carry the
// service-account volume, as the apiserver admitted them.
func (s *ScenarioReport) DescribeVolumes(nodes []model.Node) {
	s.ServiceAccountVolumes = 0
	for _, n := range nodes {
		for _, p := range n.Pods {
			for _, cm := range p.Reads {
				if cm.Name == objects.RootCAConfigMap {
					s.ServiceAccountVolumes++
				}
			}
		}
	}
}

// Report is the outcome of a comparison. The JSON keys are stable: tools
// read them, so keys may be added and never renamed.
type Report struct {
	Scenario    ScenarioReport `json:"scenario"`
	Phases      []PhaseResult  `json:"phases"`
	StartedAt   time.Time      `json:"started_at"`
	Interrupted bool           `json:"interrupted,omitempty"`
	// NotMeasured are the modes without a phase: the run had not reached
	// them when the report was written (Run writes it after every phase,
	// so that a run that dies still leaves what it measured), or it ended
	// before them.
	NotMeasured []modes.Mode `json:"not_measured,omitempty"`
}

// table is the results, one row per phase, for the text and Markdown
// forms.
func (r *Report) table() report.Table {
	out := report.Table{Header: []string{"mode", "apiserver GET/s", "etcd get/s", "model GET/s", "measured/model", "apiserver vs first", "etcd vs first", "agent GETs", "mcores/node", "MiB/node", "warm-up"}}
	var first *PhaseResult
	for i := range r.Phases {
		p := &r.Phases[i]
		if first == nil {
			first = p
		}
		mode := string(p.Mode)
		if p.Interrupted {
			mode += " (interrupted)"
		}
		out.Rows = append(out.Rows, []string{
			mode,
			fmt.Sprintf("%.2f", p.APIServerGetQPS),
			fmt.Sprintf("%.2f", p.EtcdGetQPS),
			fmt.Sprintf("%.2f", p.ExpectedAPIServerQPS),
			report.FormatRatio(report.Ratio(p.APIServerGetQPS, p.ExpectedAPIServerQPS)),
			report.FormatRatio(report.Ratio(p.APIServerGetQPS, first.APIServerGetQPS)),
			report.FormatRatio(report.Ratio(p.EtcdGetQPS, first.EtcdGetQPS)),
			agentGets(p),
			report.FormatMeasured(p.cpuPerNode(r.Scenario.Nodes)*1000, "%.1f"),
			report.FormatMeasured(p.memoryPerNode(r.Scenario.Nodes)/(1<<20), "%.1f"),
			fmt.Sprintf("%.1fs", p.WarmupSeconds),
		})
	}
	return out
}

func agentGets(p *PhaseResult) string {
	if !p.AgentMetrics {
		return "-"
	}
	return fmt.Sprintf("%.0f", p.AgentGetTotal)
}

// WriteTable prints the results as an aligned text table, and the
// fidelity lines under it.
func (r *Report) WriteTable(w io.Writer) {
	_ = r.table().WriteText(w)
	if t, ok := r.classTable(); ok {
		fmt.Fprintln(w)
		_ = t.WriteText(w)
	}
	if lines := r.fidelity(); len(lines) > 0 {
		fmt.Fprintln(w)
		for _, line := range lines {
			fmt.Fprintln(w, line)
		}
	}
	if r.hasLatency() {
		r.writeLatencyTable(w)
	}
	if r.hasChurn() {
		r.writeChurnTable(w)
	}
}

// Markdown renders report.md: the scenario, the table, and how to read it.
func (r *Report) Markdown() string {
	var b strings.Builder
	s := r.Scenario
	fmt.Fprintf(&b, "# ConfigMap GET load: before and after kubernetes#120255\n\n")
	writeScenarioMarkdown(&b, s)
	if len(r.NotMeasured) > 0 {
		fmt.Fprintf(&b, "Not measured: %s (the run had not reached them when this report was written, or ended before them).\n\n", joinModes(r.NotMeasured))
	}
	b.WriteString(r.table().Markdown())
	if t, ok := r.classTable(); ok {
		fmt.Fprintf(&b, "\nBy object class, the nodes' GETs as the apiserver's audit log records them:\n\n%s", t.Markdown())
	}
	if lines := r.fidelity(); len(lines) > 0 {
		fmt.Fprintf(&b, "\nFidelity, nodeagent against the real kubelet of the same behaviour (nodeagent / kubelet):\n\n")
		for _, line := range lines {
			fmt.Fprintf(&b, "- %s\n", line)
		}
	}
	r.writeModesMarkdown(&b)
	fmt.Fprintf(&b, "\nGET/s is `apiserver_request_total{resource=\"configmaps\",verb=\"GET\"}` and etcd get/s is "+
		"`etcd_requests_total{resource=\"configmaps\",operation=\"get\"}`, both read from the apiserver's own /metrics over the "+
		"measured window, after warm-up (the first mount of every volume is not counted). The model is docs/model.md: get sends "+
		"one quorum read per pod sync per ConfigMap a volume reads, at a mean sync interval of 1.25·S + 0.5 s; every-sync sends one "+
		"quorum read per ConfigMap per node per 1 s tick in which a pod reading it comes due; first-reference refreshes each "+
		"ConfigMap a node caches once per TTL plus the wait for the next remount, at resourceVersion 0, which etcd never sees; "+
		"watch sends no GETs.\n\n![GET/s over time](chart.svg)\n")
	if r.hasLatency() {
		b.WriteString(r.latencyMarkdown())
	}
	if r.hasChurn() {
		b.WriteString(r.churnMarkdown())
	}
	for _, note := range s.Notes {
		fmt.Fprintf(&b, "\nNote: %s\n", note)
	}
	return b.String()
}

// writeScenarioMarkdown is report.md's opening: the scenario, how the pods'
// phases were placed, and the fleet.
func writeScenarioMarkdown(b *strings.Builder, s ScenarioReport) {
	fmt.Fprintf(b, "%d nodes × %d pods × %d ConfigMap volume(s)", s.Nodes, s.PodsPerNode, s.ConfigMapsPerPod)
	if s.SharedConfigMaps > 0 {
		fmt.Fprintf(b, " drawn from %d shared ConfigMaps", s.SharedConfigMaps)
	}
	if s.ServiceAccountVolumes > 0 {
		fmt.Fprintf(b, ", plus the service-account volume (%s, one per pod, shared per node and namespace)", objects.RootCAConfigMap)
	} else {
		fmt.Fprintf(b, ", no service-account volume")
	}
	fmt.Fprintf(b, "; sync frequency %gs, node TTL %gs, %gs measured per mode; apiserver %s %s.\n\n",
		s.SyncFrequencySeconds, s.TTLSeconds, s.PhaseSeconds, s.APIServer, s.APIServerVersion)
	if s.PodPhases == "together" { // compare.PhasesTogether
		b.WriteString("Pod phases: together. Each window opens right after its agents start, when every node's pods sync together, as after a kubelet restart; the model is of pods whose phases have mixed, so shared objects measure below it.\n\n")
	} else {
		b.WriteString("Pod phases: mixed. In the two sync periods before each window every pod was updated once or twice, on a schedule that leaves its syncs out of step with its node's other pods', as on a node whose pods started at different times: the steady state the model describes (docs/model.md, \"Right after a start\").\n\n")
	}
	if s.FleetDescription != "" {
		fmt.Fprintf(b, "%s\n\n", s.FleetDescription)
	}
}

// writeModesMarkdown lists each phase's mode, its TTL and its agents.
func (r *Report) writeModesMarkdown(b *strings.Builder) {
	fmt.Fprintf(b, "\nModes:\n\n")
	for _, p := range r.Phases {
		fmt.Fprintf(b, "- `%s`: %s. TTL in effect %gs", p.Mode, p.Description, p.TTLSeconds)
		if p.TTLLowestSeconds != p.TTLHighestSeconds {
			fmt.Fprintf(b, " on most nodes (%g to %gs; each node's model uses its own)", p.TTLLowestSeconds, p.TTLHighestSeconds)
		}
		fmt.Fprintf(b, "; ")
		b.WriteString(p.agentsLine())
	}
}

// WriteFiles writes report.json, report.md, chart.svg and chart.png into
// dir, creating it.
func (r *Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := report.WriteJSON(filepath.Join(dir, "report.json"), r); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	if err := writeChart(r, dir); err != nil {
		return err
	}
	if r.hasLatency() {
		return writeLatencyChart(r, dir)
	}
	return nil
}

func joinModes(list []modes.Mode) string {
	names := make([]string, len(list))
	for i, m := range list {
		names[i] = "`" + string(m) + "`"
	}
	return strings.Join(names, ", ")
}

// agentsLine is what the phase's agents said of themselves, as far as the
// fleet could measure: their counters where their metrics were read, and
// their CPU time and memory where the fleet measures them.
func (p PhaseResult) agentsLine() string {
	resources := func(what string) string {
		return fmt.Sprintf("CPU %.1fs, RSS %.0f MiB at the end of the window and %.0f MiB at its peak, %s",
			p.AgentCPUSeconds, float64(p.AgentRSSBytes)/(1<<20), float64(p.AgentPeakRSSBytes)/(1<<20), what)
	}
	var parts []string
	if p.AgentMetrics {
		parts = append(parts, fmt.Sprintf("%.0f pod syncs, %.0f GETs sent by the agents (%.0f quorum)", p.AgentPodSyncs, p.AgentGetTotal, p.AgentQuorumGetTotal))
	} else {
		parts = append(parts, "the agents' own counters were not read (the apiserver's and its audit log's count their requests)")
	}
	switch p.AgentResources {
	case ResourcesOwn:
		parts = append(parts, resources("all processes, one per node, from /proc"))
	case ResourcesShared:
		parts = append(parts, resources("this process's, shared with the run's own work (`--fleet processes` measures each agent alone)"))
	}
	return strings.Join(parts, "; ") + ".\n"
}
