package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A measured-looking figure outside quotes and commands is flagged;
// settings, bounds, quotes, commands and allowed derivations are not.
func TestHandFiguresAndWhatPasses(t *testing.T) {
	page := strings.Join([]string{
		"It took about 20 s and 1.5 MiB, 12 % of it idle.", // line 1: three figures
		"Every 5 s, with a TTL of 25 s, at most 10 % and more than 3 %.",
		"<!-- run demo value %.1f x -->16.8<!-- /run --> s, `--sync-frequency=2.5s`, `30s`",
		"```", "took 3.5 s", "```",
		"E[X] = 1.25·S + 0.5 s on 20 × 10 pods, 429s from the apiserver, Go 1.26",
	}, "\n")
	allowed := parseAllowed("# why\np.md: E[X] = 1.25·S + 0.5 s\n")
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

// Each kind of hand-written figure that passed the rule before, added to
// a copy of a real page (which passes as it is), is caught, on its line.
func TestHandFiguresCatchEachKind(t *testing.T) {
	const file = "docs/csi.md"
	data, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if problems := handFigures(file, page, parseAllowed(allowedText)); len(problems) > 0 {
		t.Fatalf("the page itself: %q", problems)
	}
	for kind, example := range map[string]string{
		"a whole number with a unit":           "The driver answered in 144 ms.",
		"a count of requests":                  "The outage opened 144 connections.",
		"a rate in words":                      "The agents sent 12 GETs per second.",
		"a ratio without a unit":               "First-reference came out at 0.915 of the model.",
		"a figure in words":                    "The first build takes ten to thirteen minutes.",
		"a figure across a line break":         "Before the fix etcd served 8\nGETs a second.",
		"a result written as a tolerance":      "The two agree within 2 %.",
		"a figure in a code span":              "The modes that send none show `0.02 etcd get/s`.",
		"a figure beside an allowed phrase":    "Every read overlapping some rewrite (contents of 200 B and 64 KiB, read in 35 ms).",
		"a hedged whole number with a setting": "The run takes about 20 minutes per mode, measured.",
		"a unit spelled out":                   "The update was in the container in 7 milliseconds.",
		"a comparison in words":                "The driver took twice the memory of the agent.",
		"a multiple in words":                  "The suite built in several times as long.",
		"a fraction in words":                  "It used a few tenths of a core.",
	} {
		problems := handFigures(file, page+"\n"+example+"\n", parseAllowed(allowedText))
		line := strings.Count(page, "\n") + 2
		if len(problems) != 1 || !strings.HasPrefix(problems[0], fmt.Sprintf("%s:%d: ", file, line)) {
			t.Errorf("%s (%q): problems %q, want one on line %d", kind, example, problems, line)
		}
	}
}

// The Makefile's help is read as a page is; its recipes are not.
func TestMakefileHelpFigures(t *testing.T) {
	makefile := "demo: build ## Compare before and after (about 4 minutes).\n\tsleep 4.5\nfuzz: ## Fuzz (default 10000x).\n"
	problems := handFigures("Makefile", makefileHelp(makefile), nil)
	if len(problems) != 1 || !strings.HasPrefix(problems[0], "Makefile:1: ") {
		t.Errorf("problems %q, want the demo's minutes on line 1", problems)
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
