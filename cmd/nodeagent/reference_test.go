package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/nodeagent-io/nodeagent/pkg/agent"
	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podconfig"
	"github.com/nodeagent-io/nodeagent/pkg/podworkers"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

var updateReference = flag.Bool("update-reference", false, "rewrite docs/reference.md from the code")

const referencePath = "../../docs/reference.md"

// TestReferenceIsCurrent holds docs/reference.md to the code: every
// command's flags as its --help prints them, and every metric the agent
// serves with its type, labels and help. `make reference` rewrites it;
// `make verify` and the unit tests fail when a flag or metric changed and
// the page did not.
func TestReferenceIsCurrent(t *testing.T) {
	got := reference(t)
	if *updateReference {
		if err := os.WriteFile(referencePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/reference.md is not what the code says: run `make reference` and commit it")
	}
}

func reference(t *testing.T) []byte {
	t.Helper()
	// The default node name is the machine's: the page says so instead.
	t.Setenv("NODE_NAME", "")
	host := defaultNodeName()
	var b bytes.Buffer
	b.WriteString(`# Reference

For users and operators: every command's flags and every metric an agent serves, as the code defines them. Generated
by ` + "`make reference`" + ` (cmd/nodeagent/reference_test.go); ` + "`make verify`" + ` fails when a flag or a metric changes
and this page does not.

`)
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var out bytes.Buffer
		if code := dispatch([]string{name, "--help"}, &out, &out); code != 0 {
			t.Fatalf("%s --help: exit %d\n%s", name, code, out.String())
		}
		help := strings.ReplaceAll(out.String(), `(default "`+host+`")`, `(default: the machine's hostname)`)
		fmt.Fprintf(&b, "## nodeagent %s\n\n%s.\n\n```\n%s```\n\n", name, commands[name].summary, help)
	}
	b.WriteString("## Metrics\n\n`nodeagent run` serves them at `/metrics` on `--http-address`. No label holds a pod or " +
		"ConfigMap name. The rules of deploy/prometheus read a `node` label that the scrape adds (the chart's PodMonitor, or a scrape configuration, [monitoring.md](monitoring.md)). " +
		"`nodeagent run` also serves the Go runtime's and the process's own `go_*` and `process_*` metrics.\n\n" +
		"| metric | type | labels | what it counts |\n|---|---|---|---|\n")
	for _, f := range agentMetricFamilies(t) {
		var labels []string
		if len(f.Metric) > 0 {
			for _, l := range f.Metric[0].Label {
				labels = append(labels, "`"+l.GetName()+"`")
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.GetName(), strings.ToLower(f.GetType().String()),
			strings.Join(labels, ", "), strings.ReplaceAll(f.GetHelp(), "|", `\|`))
	}
	fmt.Fprintf(&b, "\n`nodeagent csi` serves the volumes' metrics of these (the volume operations, their duration, the volumes "+
		"mounted and their writes) and `nodeagent_info` with its `version` alone: it sends no GET per sync (reading as the pods, one per volume published and per token renewed), syncs no pod and always watches. "+
		"And one of its own:\n\n"+
		"| metric | type | labels | what it counts |\n|---|---|---|---|\n| `%s` | gauge |  | %s |\n", csiWatchesOpts.Name, csiWatchesOpts.Help)
	return b.Bytes()
}

// agentMetricFamilies is every metric an agent registers, each with one
// series so that its labels show.
func agentMetricFamilies(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	m := agent.NewMetrics(model.StrategyCache, configmapcache.InvalidateFirstReference, "reference")
	m.GetSent(model.StrategyCache, "0")
	m.Lookup(configmapcache.LookupFresh)
	m.WorkDone(podworkers.KindSync, nil, time.Millisecond)
	m.OperationDone(reconciler.Mount, nil, time.Millisecond)
	m.PodUpdate(podconfig.Sync)
	m.VolumeWritten()
	m.VolumesMounted(1)
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families
}
