//go:build e2e

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/convert/manifest"
)

// What nodeagent convert writes is what the apiserver accepts: every
// converted manifest of pkg/convert's testdata, applied with server-side
// dry run (admission and validation, nothing stored), every pod template
// kind among them.
func TestConvertedManifestsAreAccepted(t *testing.T) {
	ns := createNamespace(t, "convert")
	inputs, err := filepath.Glob(filepath.Join(repoRoot(t), "pkg/convert/manifest/testdata/*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, in := range inputs {
		// newer-*.yaml are written for an apiserver newer than this one:
		// their unknown fields are what this apiserver refuses.
		if strings.HasSuffix(in, ".converted.yaml") || strings.HasPrefix(filepath.Base(in), "newer-") {
			continue
		}
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		results, err := manifest.Convert(bytes.NewReader(data), &out, manifest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		converted := 0
		for _, r := range results {
			converted += r.Converted()
		}
		if converted == 0 {
			t.Fatalf("%s: nothing converted", in)
		}
		for _, obj := range applyManifestsWith(t, cp, out.Bytes(), applyOptions{DryRun: true, Namespace: ns}) {
			kinds[obj.GetKind()] = true
		}
	}
	for _, kind := range []string{"Deployment", "StatefulSet", "CronJob", "Pod"} {
		if !kinds[kind] {
			t.Errorf("no %s among the converted manifests applied: %v", kind, kinds)
		}
	}
}
