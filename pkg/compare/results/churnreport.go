package results

import (
	"fmt"
	"io"
	"strings"

	"github.com/nodeagent-io/nodeagent/pkg/compare/objects"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// hasChurn says whether any phase had pods coming and going.
func (r *Report) hasChurn() bool {
	for _, p := range r.Phases {
		if p.Churn != nil {
			return true
		}
	}
	return false
}

// ChurnTable is each phase's arrivals and what they cost beside the
// model's churn term, for the text and Markdown forms (and the docs'
// quotes of recorded runs). The measured GETs are the phase's all, the
// steady pods' included: the model's total is its steady and churn terms.
func (r *Report) ChurnTable() report.Table {
	out := report.Table{Header: []string{"mode", "arrivals/s", "apiserver GET/s", "model GET/s", "of which churn", "measured/model", "etcd get/s", "model etcd", "watch opens/s", "model opens/s"}}
	for _, p := range r.Phases {
		c := p.Churn
		if c == nil {
			continue
		}
		opens := "-"
		if c.WatchOpenQPS != nil {
			opens = fmt.Sprintf("%.2f", *c.WatchOpenQPS)
		}
		out.Rows = append(out.Rows, []string{
			string(p.Mode), fmt.Sprintf("%.2f", c.ArrivalQPS),
			fmt.Sprintf("%.2f", p.APIServerGetQPS), fmt.Sprintf("%.2f", p.ExpectedAPIServerQPS), fmt.Sprintf("%.2f", c.ExpectedAPIServerQPS),
			report.FormatRatio(report.Ratio(p.APIServerGetQPS, p.ExpectedAPIServerQPS)),
			fmt.Sprintf("%.2f", p.EtcdGetQPS), fmt.Sprintf("%.2f", p.ExpectedEtcdQPS),
			opens, fmt.Sprintf("%.2f", c.ExpectedWatchOpenQPS),
		})
	}
	return out
}

// writeChurnTable prints the churn table as aligned text.
func (r *Report) writeChurnTable(w io.Writer) {
	fmt.Fprintf(w, "\nPods that come and go, in each window (arrivals of all nodes; the model's churn term for the arrivals that happened):\n\n")
	_ = r.ChurnTable().WriteText(w)
	for _, p := range r.Phases {
		if p.Churn != nil && p.Churn.Failed > 0 {
			fmt.Fprintf(w, "%s: the apiserver refused %d of the arriving pods' creations or deletions (the agents' log says why)\n", p.Mode, p.Churn.Failed)
		}
	}
}

// churnMarkdown is report.md's churn section.
func (r *Report) churnMarkdown() string {
	var b strings.Builder
	s := r.Scenario
	fmt.Fprintf(&b, "\n## Pods that come and go\n\n%g pods a second arrived on each node during each window, at random times (a Poisson "+
		"stream that started one lifetime before it), each deleted %gs after its creation, before its first periodic sync; each read "+
		"%d of %d ConfigMaps of its node that no pod that stays reads, drawn at random, and %s, which every pod reads. The model's "+
		"churn term (docs/model.md, \"Pods that come and go\") is for the arrivals that happened in the window; *model GET/s* is "+
		"its steady term and the churn's together. Watch opens are the nodes' ConfigMap watches opened in the window, from "+
		"the apiserver's audit log.\n\n", s.PodChurn, s.PodLifetimeSeconds, s.ConfigMapsPerPod, s.ChurnConfigMaps, objects.RootCAConfigMap)
	b.WriteString(r.ChurnTable().Markdown())
	return b.String()
}
