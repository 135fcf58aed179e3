package analyze

import (
	"fmt"
	"strings"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// findingMeanings say in a few words what each type of finding means, for
// the summary table.
var findingMeanings = map[FindingType]string{
	StaleSinceStart:     "the container holds old content now: its object changed after it started",
	ImmutableRecreated:  "the node keeps an old copy of a recreated immutable object (Watch), for every pod there",
	Missing:             "a required object does not exist: the pod cannot start",
	MissingKey:          "a key a volume or variable names is not in its object",
	SubPathNeverUpdated: "mounted through subPath: never updated while the container runs",
	EnvNeverUpdated:     "read into the environment: never updated while the container runs",
	NotConverted:        "served by the kubelet in a namespace that opted in to the driver's webhook",
	DriverVolumeFailing: "a volume of nodeagent's CSI driver keeps its pod from starting",
	OwnerIgnored:        "a volume asks for its files' owner, which its node's kubelet does not set",
}

// findingSections are the findings' summary by type and the top rows.
func (r Result) findingSections(top int) []section {
	summary := report.Table{Header: []string{"finding", "count", "meaning"}}
	for _, t := range FindingTypes {
		summary.Rows = append(summary.Rows, []string{string(t), fmt.Sprint(r.Summary.Findings[t]), findingMeanings[t]})
	}
	out := []section{{"Findings: configuration that does not reach containers", summary}}
	if len(r.Findings) == 0 {
		return out
	}
	rows := r.Findings[:min(top, len(r.Findings))]
	t := report.Table{Header: []string{"finding", "pod", "container", "node", "object", "detail", "what to do"}}
	for _, f := range rows {
		t.Rows = append(t.Rows, []string{string(f.Type), f.Pod, f.Container, f.Node, f.Object.String(), f.Detail, f.Action})
	}
	title := fmt.Sprintf("Findings (%d of %d, the most pressing first; the JSON lists them all)", len(rows), len(r.Findings))
	return append(out, section{title, t})
}

// delayCell shows an update delay as "median / longest".
func delayCell(d *model.Delay) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%s / %s", seconds(d.Median), seconds(d.Max))
}

func seconds(s float64) string {
	if s > 0 && s < 0.1 { // the driver's delays
		return fmt.Sprintf("%.0fms", 1000*s)
	}
	if s >= 100 {
		return fmt.Sprintf("%.0fs", s)
	}
	return fmt.Sprintf("%.1fs", s)
}

// delayLine says how long updates take to reach the cluster's volumes.
func (r Result) delayLine() string {
	d := r.Total.UpdateDelay
	if d == nil {
		return "No volume reads a ConfigMap or Secret: no update delay."
	}
	nodes := r.Total.UpdateDelayNodes
	names := strings.Join(nodes[:min(3, len(nodes))], ", ")
	if len(nodes) > 3 {
		names += fmt.Sprintf(" and %d more", len(nodes)-3)
	}
	never := "never the containers that mount it through subPath or read it into their environment (Findings)."
	if r.Driver != nil {
		never = "never the containers that read it into their environment, nor those that mount it through subPath but from a volume of nodeagent's CSI driver with updates: inPlace (Findings)."
	}
	return fmt.Sprintf("An update of a ConfigMap or Secret reaches the volumes that mount it in %s at the median, and at the latest in %s (on %s); %s",
		seconds(d.Median), seconds(d.Max), names, never)
}
