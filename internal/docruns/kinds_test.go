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

// An analyze run's report sits inside a page's section: no title, its
// sections at level 4; and only analyze records render so.
func TestAnalyzeReportRenders(t *testing.T) {
	records := map[string]*Record{
		"e2e":  {Name: "e2e", Command: "make e2e", Kind: "analyze", Report: json.RawMessage(`{"cluster":{"nodes":5,"pods":30}}`)},
		"demo": demoRecord()["demo"],
	}
	got, problems := Render("page.md", "<!-- run e2e run --><!-- /run -->\n<!-- run e2e report 10 --><!-- /run -->\n", records)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	if strings.Contains(got, "# nodeagent analyze") || !strings.Contains(got, "\n#### Predicted load") || !strings.Contains(got, "5 nodes, 30") {
		t.Errorf("rendered:\n%s", got)
	}
	if _, problems := Render("page.md", "<!-- run demo run --><!-- /run --><!-- run demo report 10 --><!-- /run -->", records); len(problems) == 0 {
		t.Error("a compare record rendered as an analyze report")
	}
}

// A reliability run's rows render as the e2e suite's table.
func TestReliabilityRowsRender(t *testing.T) {
	records := map[string]*Record{"faults": {Name: "faults", Command: "make e2e", Kind: "reliability",
		Report: json.RawMessage(`{"rows":[{"fault":"disk full","strategy":"watch","reads":4089,"bad_reads":0,"data_lost":"none","recovery_seconds":0.1,"requests":"n/a","test":"TestDiskFaults/disk_full"}]}`)}}
	got, problems := Render("page.md", "<!-- run faults run --><!-- /run -->\n<!-- run faults rows --><!-- /run -->\n", records)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	if !strings.Contains(got, "\n| Fault | Strategy |") || !strings.Contains(got, "| disk full | watch | 4089 | 0 | none | 100ms | n/a | `TestDiskFaults/disk_full` |\n<!-- /run -->") {
		t.Errorf("rendered:\n%s", got)
	}
}

// A compare run's latency, resources and summary render as Markdown
// tables of its phases, and a table run as the table its test wrote.
func TestCompareTablesAndTableRunsRender(t *testing.T) {
	records := map[string]*Record{
		"idle": {Name: "idle", Command: "make idle", Kind: "compare", Report: json.RawMessage(`{"scenario":{"nodes":1},"phases":[
			{"mode":"watch","measured_seconds":300,"agent_cpu_seconds":0.45,"agent_peak_rss_bytes":31457280,"agent_rss_bytes":29360128,"apiserver_configmap_get_qps":0.004,
			 "latency":{"updates":750,"samples":15000,"p50_seconds":0.007,"p99_seconds":0.055,"max_seconds":0.132,"model_p50_seconds":37.8,"model_p99_seconds":83.5,"bound_seconds":91.2,"unseen":0,"api_write_p99_seconds":0.009}}]}`)},
		"busy": {Name: "busy", Command: "make e2e", Took: "1m26s", Kind: "table", Report: json.RawMessage(`{"header":["","nodeagent","kubelet v1.36"],"rows":[["GETs","1,000","996"]]}`)},
	}
	page := "<!-- run idle run --><!-- /run --><!-- run busy run --><!-- /run -->\n" +
		"<!-- run idle resources --><!-- /run -->\n<!-- run idle summary --><!-- /run -->\n<!-- run idle latency --><!-- /run -->\n<!-- run busy rows --><!-- /run -->\n" +
		"nodeagent sent <!-- run busy value %s rows/0/1 --><!-- /run --> GETs in <!-- run busy took --><!-- /run -->.\n"
	got, problems := Render("page.md", page, records)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	for _, want := range []string{
		"| `watch` | 1.5 millicores | 28.0 / 30.0 MiB | 0.00 |\n",
		"| mode | apiserver GET/s | etcd get/s | model GET/s | measured/model |\n|---|---|---|---|---|\n| watch | 0.00 | 0.00 | 0.00 | - |\n",
		"| watch | 750 | 15000 | 7 ms | 55 ms | 132 ms | 37.8 s | 83.5 s | 91.2 s | 0 | 9 ms |\n",
		"| GETs | 1,000 | 996 |\n<!-- /run -->",
		"sent <!-- run busy value %s rows/0/1 -->1,000<!-- /run --> GETs in <!-- run busy took -->1m26s<!-- /run -->",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered:\n%s\nwant it to hold %q", got, want)
		}
	}
	if _, problems := Render("page.md", "<!-- run busy run --><!-- /run --><!-- run busy latency --><!-- /run -->", records); len(problems) == 0 {
		t.Error("a table record rendered as a compare run's latency")
	}
}

// go test's benchmark output becomes each benchmark's median and
// confidence interval, and a page quotes them as benchstat writes them.
func TestBenchRunRenders(t *testing.T) {
	out := "goos: linux\npkg: example.com/m/pkg/writer\n" +
		"BenchmarkWriteFirst/small-2   1000  5000 ns/op  4096 B/op  12 allocs/op\n" +
		"BenchmarkWriteFirst/small-2   1000  5100 ns/op  4096 B/op  12 allocs/op\n" +
		"BenchmarkWriteFirst/small-2   1000  4900 ns/op  4096 B/op  12 allocs/op\n" +
		"BenchmarkWriteFirst/small-2   1000  5000 ns/op  4096 B/op  12 allocs/op\n" +
		"BenchmarkWriteFirst/small-2   1000  5050 ns/op  4096 B/op  12 allocs/op\n" +
		"BenchmarkWriteFirst/small-2   1000  4950 ns/op  4096 B/op  12 allocs/op\n" +
		"pkg: example.com/m/pkg/cache\nBenchmarkLookup-2  50000000  14.6 ns/op\n"
	run, err := ParseBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Benchmarks) != 2 || run.Benchmarks[0].Name != "WriteFirst/small" || run.Benchmarks[0].Package != "example.com/m/pkg/writer" {
		t.Fatalf("benchmarks %+v", run.Benchmarks)
	}
	if s := run.Benchmarks[0].Units["sec/op"]; s.Samples != 6 || s.Median < 4.99e-6 || s.Median > 5.01e-6 || s.Low == nil || *s.Low >= s.Median || *s.High <= s.Median {
		t.Errorf("WriteFirst/small sec/op %+v, want the median 5 µs of 6 samples inside its interval", s)
	}
	report, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]*Record{"bench": {Name: "bench", Command: "make bench", Kind: "bench", Report: report}}
	got, problems := Render("page.md", "<!-- run bench run --><!-- /run -->\n<!-- run bench bench WriteFirst --><!-- /run -->\n", records)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	if !strings.Contains(got, "| `WriteFirst/small` | 5.00 µs ± 2 % | 4.00 KiB ± 0 % | 12 ± 0 % |\n<!-- /run -->") || strings.Contains(got, "Lookup") {
		t.Errorf("rendered:\n%s", got)
	}
	if _, problems := Render("page.md", "<!-- run bench run --><!-- /run --><!-- run bench bench Nothing --><!-- /run -->", records); len(problems) == 0 {
		t.Error("a prefix that names no benchmark rendered")
	}
	if _, err := ParseBench(strings.NewReader("PASS\n")); err == nil {
		t.Error("output without benchmarks parsed")
	}
}
