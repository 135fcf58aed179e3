package analyze

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// section is one titled table of a rendered result.
type section struct {
	title string
	table report.Table
}

// sections lays the result out as the tables text and Markdown share:
// totals, what-ifs, top nodes, namespaces and objects.
func (r Result) sections(top int) []section {
	out := []section{{"Predicted load, steady state", r.totalsTable()}, {"What if", r.whatIfTable()}}
	nodes := r.Nodes[:min(top, len(r.Nodes))]
	out = append(out, section{fmt.Sprintf("Busiest nodes (%d of %d)", len(nodes), len(r.Nodes)), nodeTable(nodes)})
	out = append(out, section{fmt.Sprintf("Busiest namespaces (top %d)", len(r.Namespaces)), namespaceTable(r.Namespaces)})
	out = append(out, section{fmt.Sprintf("Busiest objects (top %d)", len(r.Objects)), objectTable(r.Objects)})
	if r.Churn != nil {
		out = append(out, section{fmt.Sprintf("Pods that come and go, in the last %s (top %d workloads)", formatWindow(r.Churn.WindowSeconds), len(r.Churn.Workloads)), r.Churn.table()})
	}
	out = append(out, r.moveSections()...)
	if r.Driver != nil {
		out = append(out, section{"nodeagent's CSI driver (" + podrefs.DriverName + "), apart from the kubelets", r.Driver.table()})
	}
	return append(out, r.findingSections(top)...)
}

var ratesHeader = []string{"apiserver GET/s", "quorum GET/s", "etcd reads/s", "watches", "re-watches/s"}

func rateCells(r Rates) []string {
	return []string{fmt.Sprintf("%.2f", r.APIServerGets), fmt.Sprintf("%.2f", r.QuorumGets), fmt.Sprintf("%.2f", r.EtcdReads),
		fmt.Sprint(r.Watches), fmt.Sprintf("%.3f", r.WatchRequests)}
}

func (r Result) totalsTable() report.Table {
	t := report.Table{Header: append([]string{"", "kind"}, ratesHeader...)}
	add := func(what string, k Kinds) {
		t.Rows = append(t.Rows,
			append([]string{what, "ConfigMaps"}, rateCells(k.ConfigMaps)...),
			append([]string{what, "Secrets"}, rateCells(k.Secrets)...),
			append([]string{what, "both"}, rateCells(k.Sum())...))
	}
	add("predicted", r.Total.Predicted)
	if m := r.Total.Measured; m != nil {
		add(fmt.Sprintf("measured (%.0f s)", m.WindowSeconds), m.Kinds)
	}
	if a := r.Total.Audited; a != nil {
		add(fmt.Sprintf("audit log (%.0f s)", a.WindowSeconds), a.Kinds)
	}
	return t
}

func (r Result) whatIfTable() report.Table {
	t := report.Table{Header: []string{"what if", "nodes changed", "apiserver GET/s", "change", "etcd reads/s", "change", "watches", "change", "update delay (median / longest)"}}
	now := r.Total.Predicted.Sum()
	t.Rows = append(t.Rows, []string{"now", "-", fmt.Sprintf("%.2f", now.APIServerGets), "-", fmt.Sprintf("%.2f", now.EtcdReads), "-", fmt.Sprint(now.Watches), "-",
		delayCell(r.Total.UpdateDelay)})
	for _, w := range r.WhatIfs {
		p, base, name, delay := w.Predicted.Sum(), now, w.Name, delayCell(w.UpdateDelay)
		if w.Baseline != nil {
			// Compared with its own baseline, which the name says.
			base = w.Baseline.Sum()
			name += fmt.Sprintf(" (against %.2f GET/s, %d watches with the driver's now)", base.APIServerGets, base.Watches)
		}
		if w.DriverUpdateDelay != nil {
			delay += "; moved volumes " + delayCell(w.DriverUpdateDelay)
		}
		t.Rows = append(t.Rows, []string{name, fmt.Sprint(w.Nodes),
			fmt.Sprintf("%.2f", p.APIServerGets), saving(base.APIServerGets, p.APIServerGets),
			fmt.Sprintf("%.2f", p.EtcdReads), saving(base.EtcdReads, p.EtcdReads),
			fmt.Sprint(p.Watches), saving(float64(base.Watches), float64(p.Watches)), delay})
	}
	if r.Churn != nil {
		// Each row's share of pods that come and go.
		t.Header = append(t.Header, "of which churn GET/s", "churn watch opens/s")
		rows := append([]Rates{now}, make([]Rates, 0, len(r.WhatIfs))...)
		for _, w := range r.WhatIfs {
			rows = append(rows, w.Predicted.Sum())
		}
		for i, p := range rows {
			t.Rows[i] = append(t.Rows[i], fmt.Sprintf("%.2f", p.Churn.APIServerGets), fmt.Sprintf("%.2f", p.Churn.WatchOpens))
		}
	}
	return t
}

// saving shows how much of now a change removes, or adds.
func saving(now, then float64) string {
	switch {
	case now == then:
		return "0"
	case now == 0:
		return fmt.Sprintf("+%.2f", then)
	}
	change := 100 * (then - now) / now
	if math.Abs(change) < 0.5 {
		return "0"
	}
	return fmt.Sprintf("%+.0f%%", change)
}

func nodeTable(nodes []NodeResult) report.Table {
	t := report.Table{Header: []string{"node", "kubelet", "strategy", "S", "T", "settings", "behaviour", "pods",
		"ConfigMap GET/s", "Secret GET/s", "etcd reads/s", "watches", "update delay"}}
	audited := len(nodes) > 0 && nodes[0].Measured != nil
	if audited {
		t.Header = append(t.Header, "audited GET/s", "audited quorum/s", "audited watches")
	}
	for _, n := range nodes {
		sum := n.Predicted.Sum()
		row := []string{n.Name, n.KubeletVersion, string(n.Strategy), fmt.Sprintf("%gs", n.SyncFrequencySeconds),
			fmt.Sprintf("%gs", n.TTLSeconds), string(n.SettingsSource), string(n.Behaviour), fmt.Sprint(n.Pods),
			fmt.Sprintf("%.3f", n.Predicted.ConfigMaps.APIServerGets), fmt.Sprintf("%.3f", n.Predicted.Secrets.APIServerGets),
			fmt.Sprintf("%.3f", sum.EtcdReads), fmt.Sprint(sum.Watches), delayCell(n.UpdateDelay)}
		if audited {
			m := n.Measured.Sum()
			row = append(row, fmt.Sprintf("%.3f", m.APIServerGets), fmt.Sprintf("%.3f", m.QuorumGets), fmt.Sprint(m.Watches))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func namespaceTable(namespaces []NamespaceResult) report.Table {
	t := report.Table{Header: []string{"namespace", "ConfigMap GET/s", "Secret GET/s", "etcd reads/s", "watches"}}
	for _, n := range namespaces {
		sum := n.Predicted.Sum()
		t.Rows = append(t.Rows, []string{n.Namespace, fmt.Sprintf("%.3f", n.Predicted.ConfigMaps.APIServerGets),
			fmt.Sprintf("%.3f", n.Predicted.Secrets.APIServerGets), fmt.Sprintf("%.3f", sum.EtcdReads), fmt.Sprint(sum.Watches)})
	}
	return t
}

func objectTable(objects []ObjectResult) report.Table {
	t := report.Table{Header: []string{"object", "nodes", "apiserver GET/s", "etcd reads/s", "watches", "update delay", "note"}}
	for _, o := range objects {
		var note []string
		if o.Immutable {
			note = append(note, "immutable")
		}
		if o.Missing {
			note = append(note, "missing")
		}
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%s %s/%s", o.Kind, o.Namespace, o.Name), fmt.Sprint(o.Nodes),
			fmt.Sprintf("%.3f", o.Predicted.APIServerGets), fmt.Sprintf("%.3f", o.Predicted.EtcdReads),
			fmt.Sprint(o.Predicted.Watches), delayCell(o.UpdateDelay), strings.Join(note, ", ")})
	}
	return t
}

// summaryLines describe the cluster, the rotation and what was assumed:
// first, where some node's settings were assumed, that they were.
func (r Result) summaryLines() []string {
	c := r.Cluster
	secrets := "Secrets listed"
	if !c.SecretsListed {
		secrets = "Secrets not listed"
	}
	var behaviours []string
	for _, b := range model.Behaviours {
		if n := c.Behaviours[b]; n > 0 {
			behaviours = append(behaviours, fmt.Sprintf("%s %d", b, n))
		}
	}
	var lines []string
	if assumed := c.Nodes - c.NodesFromConfigz; assumed > 0 {
		// First, where nobody misses it: on a cluster that runs the Cache
		// strategy, the default assumption (Watch) predicts no quorum GET.
		lines = append(lines, fmt.Sprintf("ASSUMED: the kubelet strategy and sync frequency of %d of the %s (their /configz was not read; the notes say why). "+
			"What follows holds if they run as assumed: a cluster on the Cache strategy looks unaffected under the Watch assumption. "+
			"Say what they run (--assume-strategy, --assume-sync-frequency), or let analyze get nodes/proxy.", assumed, count(c.Nodes, "node")))
	}
	return append(lines,
		fmt.Sprintf("%s, %s in %s; settings from /configz on %d, assumed on %d; %s.",
			count(c.Nodes, "node"), count(c.Pods, "running pod"), count(c.Namespaces, "namespace"), c.NodesFromConfigz, c.Nodes-c.NodesFromConfigz, secrets),
		"Kubelet behaviours: "+strings.Join(behaviours, ", ")+". "+strategiesLine(c.Behaviours),
		r.delayLine(),
	)
}

// strategiesLine says where the before and after of kubernetes#120255
// applies (the Cache strategy's nodes) and what the others cost instead:
// the question an operator asks first is whether the issue is theirs.
func strategiesLine(b map[model.Behaviour]int) string {
	cache, watch, get := b[model.EverySync]+b[model.FirstReference], b[model.Watch], b[model.Get]
	var parts []string
	if cache > 0 {
		parts = append(parts, fmt.Sprintf("the before and after of kubernetes#120255 applies to the %s on the Cache strategy (%d before v1.29, every sync a quorum GET)",
			count(cache, "node"), b[model.EverySync]))
	} else {
		parts = append(parts, "no node runs the Cache strategy, so the before and after of kubernetes#120255 applies to none")
	}
	if watch > 0 {
		parts = append(parts, fmt.Sprintf("the %s on Watch, the kubelet's default, %s one watch per object their pods read instead", count(watch, "node"), plural(watch, "pays", "pay")))
	}
	if get > 0 {
		parts = append(parts, fmt.Sprintf("the %s on Get %s a quorum GET at every pod sync", count(get, "node"), plural(get, "sends", "send")))
	}
	s := strings.Join(parts, "; ") + "."
	return strings.ToUpper(s[:1]) + s[1:]
}

func (r Result) rotationLine() string {
	rot := r.RootCARotation
	return fmt.Sprintf("A rotation of the root CA updates %s in %s: %s at once, %s rewritten, "+
		"%s within one TTL; the last volume has it within %.0f s.",
		rootCA, count(rot.Namespaces, "namespace"), count(rot.WatchEvents, "watch event"), count(rot.Volumes, "volume"),
		count(rot.CacheRefreshes, "Cache refresh"), rot.SpreadSeconds)
}

// plural is one where n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// count is n things, in the plural where n is not one.
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	if strings.HasSuffix(thing, "sh") {
		return fmt.Sprintf("%d %ses", n, thing)
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// notes are the per-node notes, grouped so that 5,000 nodes with the same
// note print one line.
func (r Result) notes() []string {
	byNote := map[string][]string{}
	for _, n := range r.Nodes {
		for _, note := range n.Notes {
			byNote[note] = append(byNote[note], n.Name)
		}
	}
	var out []string
	for note, nodes := range byNote {
		sort.Strings(nodes)
		names := strings.Join(nodes[:min(3, len(nodes))], ", ")
		if len(nodes) > 3 {
			names += fmt.Sprintf(" and %d more", len(nodes)-3)
		}
		out = append(out, fmt.Sprintf("%s: %s", names, note))
	}
	sort.Strings(out)
	return append(append([]string(nil), r.Warnings...), out...)
}

// WriteText prints the result as text tables, top rows of each list.
func (r Result) WriteText(w io.Writer, top int) error {
	for _, line := range r.summaryLines() {
		fmt.Fprintln(w, line)
	}
	for _, s := range r.sections(top) {
		fmt.Fprintf(w, "\n%s\n", s.title)
		if err := s.table.WriteText(w); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\n%s\n", r.rotationLine())
	if notes := r.notes(); len(notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	return nil
}

// Markdown renders the result as a Markdown report.
func (r Result) Markdown(top int) string {
	var b strings.Builder
	b.WriteString("# nodeagent analyze\n\n")
	for _, line := range r.summaryLines() {
		b.WriteString(line + "\n")
	}
	for _, s := range r.sections(top) {
		fmt.Fprintf(&b, "\n## %s\n\n%s", s.title, s.table.Markdown())
	}
	fmt.Fprintf(&b, "\n%s\n", r.rotationLine())
	if notes := r.notes(); len(notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	for _, w := range r.WhatIfs {
		if w.Caveat != "" {
			fmt.Fprintf(&b, "\n**%s**: %s. Caveat: %s.\n", w.Name, w.Description, w.Caveat)
		}
	}
	return b.String()
}

// WriteDir writes report.json, report.md and chart.svg/png to dir.
func (r Result) WriteDir(dir string, top int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := report.WriteJSON(filepath.Join(dir, "report.json"), r); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.Markdown(top)), 0o644); err != nil {
		return err
	}
	return r.chart().Save(dir, "chart")
}

// chart sets now, each what-if and what was measured side by side.
func (r Result) chart() report.Bars {
	categories := []string{"now"}
	apiserver := []float64{r.Total.Predicted.Sum().APIServerGets}
	etcd := []float64{r.Total.Predicted.Sum().EtcdReads}
	for _, w := range r.WhatIfs {
		categories = append(categories, w.Name)
		apiserver = append(apiserver, w.Predicted.Sum().APIServerGets)
		etcd = append(etcd, w.Predicted.Sum().EtcdReads)
	}
	if m := r.Total.Measured; m != nil {
		categories = append(categories, "measured")
		apiserver = append(apiserver, m.Sum().APIServerGets)
		etcd = append(etcd, m.Sum().EtcdReads)
	}
	return report.Bars{
		Title:      "ConfigMap and Secret reads: now, each what-if, and measured",
		YLabel:     "per second",
		Categories: categories,
		Groups: []report.BarGroup{
			{Label: "apiserver GET/s", Colour: color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, Values: apiserver},
			{Label: "etcd reads/s", Colour: color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, Values: etcd},
		},
	}
}
