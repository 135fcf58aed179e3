// Command dashboard writes deploy/grafana/nodeagent.json, nodeagent's
// Grafana dashboard, built as code with the Apache-licensed Grafana
// Foundation SDK on the recording rules of deploy/prometheus and the
// metrics of analyze always on. Its own module
// keeps the SDK out of the agent's dependencies. `make dashboard` runs it;
// `make verify` fails when the committed file differs from what it writes.
//
//	go run . -o ../../deploy/grafana/nodeagent.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// datasource is the dashboard's Prometheus, chosen by its variable.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// query is one panel query; legend uses Grafana's {{label}} form.
func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource).Expr(expr).LegendFormat(legend).Range()
}

// panel is a time series panel, width w of 24, at (x, y), 8 rows high.
func panel(title, description, unit string, x, y, w uint32, queries ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(description).Unit(unit).Min(0).
		Datasource(datasource).GridPos(dashboard.GridPos{X: x, Y: y, W: w, H: 8})
	for _, q := range queries {
		p = p.WithTarget(q)
	}
	return p
}

// build writes the classic dashboard JSON model, which the SDK now marks
// deprecated in favour of v2: v2 dashboards import only into Grafana 12 and
// later, and the classic model into every Grafana in use.
//
//lint:ignore SA1019 the classic model, on purpose (above)
func build() (dashboard.Dashboard, error) {
	nodes := dashboard.StringOrMap{String: cog.ToPtr("label_values(node:nodeagent_volumes_mounted:sum, node)")}
	//lint:ignore SA1019 the classic model, on purpose (build's comment)
	b := dashboard.NewDashboardBuilder("nodeagent: ConfigMap reads at the apiserver and etcd").
		Uid("nodeagent-configmap-reads").
		Description("The ConfigMap and Secret reads kubelets and nodeagent's agents send, before and after kubernetes#120255, "+
			"from deploy/prometheus's recording rules, and what nodeagent analyze --serve finds: stale configuration, "+
			"update delays and the kubelets' predicted load (docs/monitoring.md).").
		Tags([]string{"nodeagent", "kubelet", "apiserver", "etcd"}).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Prometheus").Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("node").Label("Node").Datasource(datasource).Query(nodes).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).Multi(true).IncludeAll(true).AllValue(".*"))
	b = withClusterRow(b)
	b = withAgentsRow(b)
	return withAnalyzeRow(b).Build()
}

// withClusterRow adds the row of the apiserver's and etcd's reads, from every client.
//
//lint:ignore SA1019 the classic model, on purpose (build's comment)
func withClusterRow(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return b.
		WithRow(dashboard.NewRowBuilder("The apiserver and etcd (every client)")).
		WithPanel(panel("ConfigMap GETs at the apiserver and at etcd",
			"Single-object ConfigMap GETs the apiserver answered per second, and those that reached etcd (quorum reads). "+
				"Before the fix (kubelets up to v1.28) the two lines meet; after it etcd's falls to about zero.",
			"reqps", 0, 1, 12,
			query(`resource:apiserver_request_gets:rate5m{resource="configmaps"}`, "apiserver"),
			query(`resource:etcd_request_gets:rate5m{resource="configmaps"}`, "etcd"))).
		WithPanel(panel("Secret GETs at the apiserver and at etcd",
			"The same for Secrets, which the kubelet reads the same way.", "reqps", 12, 1, 12,
			query(`resource:apiserver_request_gets:rate5m{resource="secrets"}`, "apiserver"),
			query(`resource:etcd_request_gets:rate5m{resource="secrets"}`, "etcd"))).
		WithPanel(panel("Share of GETs that reach etcd",
			"etcd reads per apiserver GET: near 1 when every pod sync sends a quorum GET, near 0 after the fix. "+
				"The ConfigMapQuorumGetRateHigh alert fires above 0.5 with more than 5 etcd reads a second.",
			"percentunit", 0, 9, 24,
			query(`resource:etcd_request_gets_per_apiserver_get:ratio5m`, "{{resource}}")))
}

// withAgentsRow adds the row of nodeagent's agents: their GETs, volumes and operations.
//
//lint:ignore SA1019 the classic model, on purpose (build's comment)
func withAgentsRow(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return b.
		WithRow(dashboard.NewRowBuilder("nodeagent's agents")).
		WithPanel(panel("Agents' GETs per node",
			"Each node's agent's ConfigMap GETs per second.", "reqps", 0, 18, 12,
			query(`sum by (node) (node_resource_version:nodeagent_configmap_get_requests:rate5m{node=~"$node"})`, "{{node}}"))).
		WithPanel(panel("Agents' GETs: quorum against resourceVersion=0",
			`"unset": quorum reads that reach etcd; "0": reads the apiserver's watch cache serves.`, "reqps", 12, 18, 12,
			query(`sum by (resource_version) (node_resource_version:nodeagent_configmap_get_requests:rate5m{node=~"$node"})`,
				"resourceVersion={{resource_version}}"))).
		WithPanel(panel("Volumes mounted",
			"ConfigMap and projected volumes each node's agent keeps on disk.", "none", 0, 26, 8,
			query(`node:nodeagent_volumes_mounted:sum{node=~"$node"}`, "{{node}}"))).
		WithPanel(panel("Volume operation errors",
			"Failed mounts, remounts and unmounts per second: a missing ConfigMap or key, an invalid path, a full disk.",
			"ops", 8, 26, 8,
			query(`sum by (operation) (node_operation:nodeagent_volume_operation_errors:rate5m{node=~"$node"})`, "{{operation}}"))).
		WithPanel(panel("Volume operation time, p99",
			"How long a mount or a remount takes, ConfigMap reads included: the agent's part of an update's way to disk.",
			"s", 16, 26, 8,
			query(`histogram_quantile(0.99, sum by (le, operation) (rate(nodeagent_volume_operation_duration_seconds_bucket{node=~"$node"}[$__rate_interval])))`,
				"{{operation}}")))
}

// withAnalyzeRow adds the row of analyze always on: findings, update delays and the kubelets' predicted load.
//
//lint:ignore SA1019 the classic model, on purpose (build's comment)
func withAnalyzeRow(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return b.
		WithRow(dashboard.NewRowBuilder("analyze always on: stale configuration and the kubelets' load")).
		WithPanel(panel("Findings by type",
			"What nodeagent analyze --serve finds now: containers that hold older content than their object (staleSinceStart, "+
				"immutableRecreated), missing objects and keys, and reads that never update (subPath, environment). "+
				"The alerts of docs/monitoring.md name each one.",
			"none", 0, 35, 12,
			query(`sum by (type) (nodeagent_analyze_findings)`, "{{type}}"))).
		WithPanel(panel("Containers holding old configuration, by namespace",
			"staleSinceStart and immutableRecreated findings per namespace: restart those pods (a rollout) to give them the current content.",
			"none", 12, 35, 12,
			query(`sum by (namespace) (nodeagent_analyze_findings{type=~"staleSinceStart|immutableRecreated"}) > 0`, "{{namespace}}"))).
		WithPanel(panel("Update delay",
			"How long a ConfigMap or Secret update takes to reach the pods' volumes, predicted from the kubelets' settings: "+
				"the cluster's median and longest, and the longest per node.",
			"s", 0, 43, 12,
			query(`nodeagent_analyze_update_delay_seconds`, "cluster {{stat}}"),
			query(`nodeagent_analyze_node_update_delay_seconds{stat="max", node=~"$node"}`, "{{node}} longest"))).
		WithPanel(panel("The kubelets' predicted GETs, and after each what-if",
			"The ConfigMap and Secret GETs the kubelets are predicted to send (all, and those that reach etcd), and what each "+
				"what-if of analyze (an upgrade, another strategy, immutable objects) would leave.",
			"reqps", 12, 43, 12,
			query(`nodeagent_analyze_predicted_apiserver_gets_per_second`, "{{kind}} GETs"),
			query(`nodeagent_analyze_predicted_quorum_gets_per_second`, "{{kind}} quorum GETs"),
			query(`nodeagent_analyze_whatif_apiserver_gets_per_second`, "what-if {{whatif}}")))
}

func main() {
	out := flag.String("o", "", "Write the dashboard's JSON here (default: standard output).")
	flag.Parse()
	d, err := build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
	data = append(data, '\n')
	if *out == "" {
		_, _ = os.Stdout.Write(data)
		return
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}
