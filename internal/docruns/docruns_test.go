package docruns

import (
	"encoding/json"
	"strings"
	"testing"
)

func demoRecord() map[string]*Record {
	report := `{"scenario":{"nodes":20},"phases":[
		{"mode":"every-sync","apiserver_configmap_get_qps":45.64,"expected_apiserver_configmap_get_qps":45.58,
		 "audit":{"classes":[{"class":"kube-root-ca.crt","get_qps":16.129}]}},
		{"mode":"first-reference","apiserver_configmap_get_qps":7.96,"expected_apiserver_configmap_get_qps":7.99}]}`
	return map[string]*Record{"demo": {
		Name: "demo", Command: "make demo", Args: []string{"compare", "--output-dir", "_output/compare"},
		Commit: "abc1234", Date: "2026-11-26", Machine: "2 cores", Kind: "compare", Report: json.RawMessage(report),
	}}
}

const page = "Run: <!-- run demo run --><!-- /run -->.\n" +
	"every-sync sent <!-- run demo value %.2f phases/every-sync/apiserver_configmap_get_qps -->OLD<!-- /run --> GET/s, " +
	"<!-- run demo ratio %.2f phases/every-sync/apiserver_configmap_get_qps phases/every-sync/expected_apiserver_configmap_get_qps --><!-- /run --> of the model; " +
	`kube-root-ca.crt <!-- run demo value %.1f "phases/every-sync/audit/classes/kube-root-ca.crt/get_qps" --><!-- /run -->.` + "\n" +
	"```\n<!-- run demo value %.2f no/such/path --><!-- /run -->\n```\n"

// Render writes each quote from the record, by path and selector, and
// leaves the markers in a code block alone.
func TestRender(t *testing.T) {
	got, problems := Render("page.md", page, demoRecord())
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	for _, want := range []string{
		"Run: <!-- run demo run -->`make demo` at commit abc1234, 2026-11-26, 2 cores (record: docs/runs/demo.json)<!-- /run -->.",
		"sent <!-- run demo value %.2f phases/every-sync/apiserver_configmap_get_qps -->45.64<!-- /run --> GET/s",
		"-->1.00<!-- /run --> of the model",
		"-->16.1<!-- /run -->.",
		"```\n<!-- run demo value %.2f no/such/path --><!-- /run -->\n```",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered page lacks %q:\n%s", want, got)
		}
	}
	if again, _ := Render("page.md", got, demoRecord()); again != got {
		t.Error("rendering twice changed the page")
	}
}

// make verify fails on a figure edited by hand, an unknown run or figure,
// and a run quoted without being named.
func TestCheckFailsOnDrift(t *testing.T) {
	records := demoRecord()
	good, _ := Render("page.md", page, records)
	if problems := Check("page.md", good, records); len(problems) > 0 {
		t.Fatalf("a rendered page: %v", problems)
	}
	for name, tc := range map[string]struct{ page, want string }{
		"edited by hand": {strings.Replace(good, "-->45.64<", "-->45.80<", 1), `the page says "45.80", the record "45.64"`},
		"unknown run":    {good + "<!-- run gone run --><!-- /run -->", `no record of run "gone"`},
		"unknown figure": {good + "<!-- run demo value %.2f phases/watch/x --><!-- /run -->", `no "phases/watch/x"`},
		"not named":      {"<!-- run demo value %.2f phases/0/apiserver_configmap_get_qps -->45.64<!-- /run -->", "without naming it"},
		"not closed":     {good + "<!-- run demo run -->", "not closed"},
	} {
		problems := Check("page.md", tc.page, records)
		if len(problems) == 0 || !strings.Contains(problems[len(problems)-1].What, tc.want) {
			t.Errorf("%s: problems %v, want one saying %q", name, problems, tc.want)
		}
	}
}

// A record whose command names a flag its subcommand no longer has fails.
func TestCheckCommandsFindsRemovedFlags(t *testing.T) {
	help := func(sub string) (string, error) {
		return "Usage: nodeagent " + sub + " [flags]\n      --nodes int   Simulated nodes.\n  -o, --output-dir string   Where.\n", nil
	}
	records := demoRecord()
	if problems := CheckCommands(records, help); len(problems) > 0 {
		t.Fatalf("current flags: %v", problems)
	}
	records["demo"].Args = append(records["demo"].Args, "--agent-binary=/bin/x")
	problems := CheckCommands(records, help)
	if len(problems) != 1 || !strings.Contains(problems[0].What, "--agent-binary") {
		t.Errorf("a removed flag: %v, want one problem naming --agent-binary", problems)
	}
}
