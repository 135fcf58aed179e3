package manifest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/nodeagent-io/nodeagent/pkg/convert"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

var update = flag.Bool("update", false, "rewrite testdata/*.converted.yaml and *.summary.txt")

// Each input in testdata converts to its .converted.yaml, byte for byte
// (comments, key order, quoting and every object that is not a pod template
// as they were), with its .summary.txt on standard error.
func TestConvertKeepsEverythingElse(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.yaml")
	for _, in := range inputs {
		if strings.HasSuffix(in, ".converted.yaml") {
			continue
		}
		t.Run(filepath.Base(in), func(t *testing.T) {
			out, summary := convertFile(t, in, Options{})
			base := strings.TrimSuffix(in, ".yaml")
			golden(t, base+".converted.yaml", out)
			golden(t, base+".summary.txt", summary)
		})
	}
}

func convertFile(t *testing.T, path string, opts Options) (string, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out, summary bytes.Buffer
	results, err := Convert(bytes.NewReader(data), &out, opts)
	if err != nil {
		t.Fatal(err)
	}
	Summary(&summary, results)
	return out.String(), summary.String()
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// Every converted volume is one the driver serves, reading what the volume
// it replaces read (a Secret too with --secrets), and no container is
// left with a subPath that never changes (analyze's subPathNeverUpdated).
func TestConvertedPodsAreTheDriversVolumes(t *testing.T) {
	for _, secrets := range []bool{false, true} {
		t.Run(fmt.Sprintf("secrets=%v", secrets), func(t *testing.T) { checkDriversVolumes(t, secrets) })
	}
}

func checkDriversVolumes(t *testing.T, secrets bool) {
	out, _ := convertFile(t, "testdata/web.yaml", Options{Secrets: secrets})
	doc, _, _ := strings.Cut(out, "\n---\n")
	var deployment struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(doc), &deployment); err != nil {
		t.Fatal(err)
	}
	refs := podrefs.Of(&corev1.Pod{Spec: deployment.Spec.Template.Spec})
	want := []string{"ConfigMap/web-nginx", "ConfigMap/web-site"}
	if secrets {
		want = append(want, "Secret/web-tls")
	}
	served := refs.DriverVolumes
	if len(served) != len(want) || !served[0].InPlace || served[1].InPlace {
		t.Fatalf("the driver serves %+v; want conf (inPlace), site and, with --secrets, certs", served)
	}
	for i, v := range served {
		if len(v.Reads) != 1 || string(v.Reads[0].Kind)+"/"+v.Reads[0].Name != want[i] {
			t.Errorf("volume %s reads %+v, want %s", v.Name, v.Reads, want[i])
		}
	}
	for _, c := range refs.Containers {
		if len(c.SubPaths) > 0 {
			t.Errorf("container %s keeps subPaths that never change: %+v", c.Name, c.SubPaths)
		}
	}
	for _, v := range deployment.Spec.Template.Spec.Volumes {
		if v.CSI != nil && (v.CSI.ReadOnly == nil || !*v.CSI.ReadOnly) {
			t.Errorf("volume %s is not readOnly", v.Name)
		}
	}
}

// --volume and --workload choose; what they leave out is said.
func TestOptionsChoose(t *testing.T) {
	for _, tc := range []struct {
		opts      Options
		want      string
		notChosen int
	}{
		{Options{Volumes: []string{"site"}}, "converted 1 volume in 1 object; left 2", 1},
		{Options{Workloads: []string{"deployment/web"}}, "converted 2 volumes in 1 object; left 1", 0},
		{Options{Workloads: []string{"Deployment/other"}}, "converted 0 volumes in 0 objects; left 3", 2},
		{Options{Workloads: []string{"web"}, Volumes: []string{"conf", "certs"}}, "converted 1 volume in 1 object; left 2", 1},
	} {
		_, summary := convertFile(t, "testdata/web.yaml", tc.opts)
		if !strings.Contains(summary, tc.want) || strings.Count(summary, "not chosen") != tc.notChosen {
			t.Errorf("%+v:\n%swant %q and %d volumes not chosen", tc.opts, summary, tc.want, tc.notChosen)
		}
	}
}

// Input that is not YAML is an error, not output.
func TestBadInput(t *testing.T) {
	var out bytes.Buffer
	if _, err := Convert(strings.NewReader("kind: [unclosed"), &out, Options{}); err == nil || out.Len() > 0 {
		t.Errorf("err %v, output %q", err, out.String())
	}
}

// PodSpec, the conversion of a decoded pod (Plan's decisions applied), gives the volumes the
// YAML conversion writes.
func TestPodSpecAgreesWithTheYAMLConversion(t *testing.T) {
	var before, after struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	in, err := os.ReadFile("testdata/web.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := convertFile(t, "testdata/web.yaml", Options{})
	inDoc, _, _ := strings.Cut(string(in), "\n---\n")
	outDoc, _, _ := strings.Cut(out, "\n---\n")
	if err := yaml.Unmarshal([]byte(inDoc), &before); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(outDoc), &after); err != nil {
		t.Fatal(err)
	}
	spec := before.Spec.Template.Spec
	results := convert.PodSpec(&spec, nil)
	if len(results) != 3 || !results[0].Converted || !results[1].Converted || results[2].Converted {
		t.Errorf("results %+v", results)
	}
	if !equality.Semantic.DeepEqual(spec.Volumes, after.Spec.Template.Spec.Volumes) {
		t.Errorf("PodSpec gives\n%+v\nthe YAML conversion\n%+v", spec.Volumes, after.Spec.Template.Spec.Volumes)
	}
}

// --revert undoes a conversion: every input converted and then reverted
// decodes to the objects it started as (the driver's inPlace aside, which a
// configMap volume has no word for), and the summary says what went back.
func TestRevertUndoesConvert(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.yaml")
	for _, in := range inputs {
		if strings.HasSuffix(in, ".converted.yaml") {
			continue
		}
		t.Run(filepath.Base(in), func(t *testing.T) {
			original, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			converted, _ := convertFile(t, in, Options{})
			var reverted, summary bytes.Buffer
			results, err := Convert(strings.NewReader(converted), &reverted, Options{Revert: true})
			if err != nil {
				t.Fatal(err)
			}
			Summary(&summary, results)
			want, got := decodeDocuments(t, string(original)), decodeDocuments(t, reverted.String())
			if !equality.Semantic.DeepEqual(want, got) {
				t.Errorf("converted and reverted:\n%s\nwant the objects of\n%s", reverted.String(), original)
			}
			if (strings.Contains(converted, podrefs.DriverName)) != strings.Contains(summary.String(), "a configMap volume again") {
				t.Errorf("summary:\n%s", summary.String())
			}
		})
	}
}

// decodeDocuments decodes each YAML document of s, comments dropped.
func decodeDocuments(t *testing.T, s string) []any {
	t.Helper()
	var out []any
	for _, doc := range strings.Split(s, "\n---\n") {
		var v any
		if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		if v != nil {
			out = append(out, v)
		}
	}
	return out
}
