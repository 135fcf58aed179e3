package main

import (
	"strings"
	"testing"
)

// A measured-looking figure outside quotes and code is flagged; settings,
// tolerances, quotes, code and allowed derivations are not.
func TestHandFigures(t *testing.T) {
	page := strings.Join([]string{
		"It took about 20 s and 1.5 MiB, 12 % of it idle.", // line 1: three figures
		"Every 5 s, with a TTL of 25 s, within 10 % and more than 3 %.",
		"<!-- run demo value %.1f x -->16.8<!-- /run --> s, `--sync-frequency=2.5s`",
		"```", "took 3.5 s", "```",
		"E[X] = 1.25·S + 0.5 s",
	}, "\n")
	allowed := parseAllowed("# why\np.md: E[X] = 1.25·S\n")
	problems := handFigures("p.md", page, allowed)
	if len(problems) != 3 {
		t.Fatalf("problems %q, want the three figures of line 1", problems)
	}
	for _, p := range problems {
		if !strings.HasPrefix(p, "p.md:1: ") {
			t.Errorf("%s: want line 1", p)
		}
	}
	if unused := unusedAllowances(allowed, map[string]bool{"p.md": true}); len(unused) != 0 {
		t.Errorf("unused allowances %q", unused)
	}
	if unused := unusedAllowances(parseAllowed("p.md: gone\n"), map[string]bool{"p.md": true}); len(unused) != 1 {
		t.Errorf("an allowance that allows nothing was not reported: %q", unused)
	}
}

// Applying an overlay as it is, or a kustomization of one without an
// image, is flagged; make push's kustomizations and the chart are not.
func TestDirectOverlays(t *testing.T) {
	for page, want := range map[string]int{
		"kubectl apply -k deploy/overlays/after\n":                                       1,
		"kustomize build deploy/analyze-serve | kubectl apply -f -\n":                    1,
		"kubectl apply -k _output/deploy/after\n":                                        0,
		"kubectl apply -k deploy/analyze\n":                                              0,
		"```yaml\nresources:\n- ../deploy/overlays/before\n```\n":                        1,
		"```yaml\nresources:\n- ../deploy/overlays/before\nimages:\n- newTag: v1\n```\n": 0,
	} {
		if got := directOverlays("p.md", page); len(got) != want {
			t.Errorf("%q: problems %q, want %d", page, got, want)
		}
	}
}
