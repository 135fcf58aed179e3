package doclinks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Growing to 1,000 nodes":               "growing-to-1000-nodes",
		"Alert: ConfigMapQuorumGetRateHigh":    "alert-configmapquorumgetratehigh",
		"The `kubelet-*` modes (v1.28, v1.36)": "the-kubelet--modes-v128-v136",
		"Is my cluster affected?":              "is-my-cluster-affected",
		"snake_case and hyphen-ated":           "snake_case-and-hyphen-ated",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("docs/b.md", "# Title\n\n## Idle cost\n\n## Idle cost\n")
	write("docs/images/c.svg", "<svg/>")
	a := write("a.md", strings.Join([]string{
		"# A",
		"[fine](docs/b.md) [fine](docs/b.md#idle-cost) [repeated](docs/b.md#idle-cost-1) ![img](docs/images/c.svg)",
		"[here](#a) [web](https://example.com/x#y)",
		"[missing file](docs/none.md)",
		"[missing anchor](docs/b.md#idle)",
		"[own missing anchor](#b)",
		"`[in code](nowhere.md)`",
		"```",
		"[in a block](nowhere.md)",
		"```",
	}, "\n"))
	rules := write("deploy/rules.yaml", strings.Join([]string{
		"runbook_url: " + ProjectURL + "docs/b.md#idle-cost",
		"runbook_url: " + ProjectURL + "docs/b.md#no-such-heading",
		"see: " + ProjectURL + "docs/gone.md",
	}, "\n"))
	broken, err := Check(dir, []string{a, rules})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.Target)
	}
	if want := "docs/none.md docs/b.md#idle #b " + ProjectURL + "docs/b.md#no-such-heading " + ProjectURL + "docs/gone.md"; strings.Join(got, " ") != want {
		t.Errorf("broken %v, want %s", broken, want)
	}
	if len(broken) > 0 && broken[0].Line != 4 {
		t.Errorf("line %d, want 4", broken[0].Line)
	}
}
