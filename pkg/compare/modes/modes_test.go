package modes

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The reference kubelets' releases that the modes name and the model's
// table reads are the ones hack/refkubelet builds: its module files pin
// k8s.io/kubernetes, and make refkubelet names each binary after it.
func TestReferenceKubeletsAreThoseBuilt(t *testing.T) {
	pinned := regexp.MustCompile(`(?m)^(?:require)?\s*k8s\.io/kubernetes v(\d+\.\d+\.\d+)\s*$`)
	built := map[string]bool{}
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "hack", "refkubelet", "*.mod"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no module files in hack/refkubelet (%v)", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := pinned.FindSubmatch(data)
		if m == nil {
			t.Fatalf("%s pins no k8s.io/kubernetes", f)
		}
		built[string(m[1])] = true
	}
	named := map[string]bool{}
	for _, s := range modeSpecs {
		if s.kubelet != nil && s.retiredBy == "" {
			named[s.kubelet.Release.String()] = true
		}
	}
	for v := range named {
		if !built[v] {
			t.Errorf("a mode runs the kubelet v%s, which hack/refkubelet does not build (it builds %v)", v, built)
		}
	}
	for v := range built {
		if !named[v] {
			t.Errorf("hack/refkubelet builds the kubelet v%s, which no mode runs (they run %v)", v, named)
		}
	}
}
