package docruns

import (
	"encoding/json"
	"strings"
	"testing"
)

// A timings file as hack/stages.sh writes it becomes stages, and a page
// quotes them as durations and as a sentence.
func TestTimingsRecordRenders(t *testing.T) {
	stages, err := ParseTimings(strings.NewReader("controlplane              227s\nrefkubelet  365s\nrelease-check (background)    723s\ntotal   2838s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 4 || stages[2] != (Stage{"release-check (background)", 723}) {
		t.Fatalf("stages %+v", stages)
	}
	report, _ := json.Marshal(map[string][]Stage{"make_test": stages})
	records := map[string]*Record{"cold": {Name: "cold", Command: "make test", Commit: "abc1234", Date: "2026-11-25", Kind: "timings", Report: report}}
	page := "<!-- run cold run --><!-- /run -->: <!-- run cold duration make_test/total/seconds --><!-- /run --> in all " +
		`(<!-- run cold stages make_test total "release-check (background)" --><!-- /run -->).`
	got, problems := Render("page.md", page, records)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	want := "-->47 m 18 s<!-- /run --> in all (<!-- run cold stages make_test total \"release-check (background)\" -->controlplane 3 m 47 s, refkubelet 6 m 5 s<!-- /run -->)."
	if !strings.Contains(got, want) {
		t.Errorf("rendered %q, want it to hold %q", got, want)
	}
	if _, err := ParseTimings(strings.NewReader("controlplane soon\n")); err == nil {
		t.Error("a line without seconds parsed")
	}
}
