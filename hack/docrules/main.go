// Command docrules checks two rules of the docs that links and quotes do
// not cover (make verify runs it on README.md, docs/ and the scripts):
//
//   - No figure by hand (figures.go): a number with a unit of time, rate,
//     size, ratio, CPU or requests, in digits or in words, or a decimal
//     alone, in the pages' prose, their code spans that are not commands,
//     and the Makefile's help, is a quote of a recorded run (<!-- run ...
//     --> markers, internal/docruns) or goes. A whole number that a
//     setting or bound word introduces ("every 5 s", "S = 1 m", "at most
//     1 GiB") passes. A comparison in words ("twice the memory", "several
//     times as long", "a few tenths of a core") is a figure too. Any
//     other exception (a derivation of the model, a bound written
//     "within") is a phrase in allowed.txt under a comment that says why,
//     and allows the figures inside that phrase alone.
//
//   - No overlay without an image: deploy/'s overlays name an image tag no
//     registry holds (docs/deploy.md), so a page or script that applies or
//     builds one directly, or a kustomization in a page that names one
//     without setting the image, is refused.
//
//     go run ./hack/docrules FILE...
package main

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

//go:embed allowed.txt
var allowedText string

func main() {
	allowed := parseAllowed(allowedText)
	var problems []string
	checked := map[string]bool{}
	for _, file := range os.Args[1:] {
		checked[file] = true
		data, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintln(os.Stderr, "docrules:", err)
			os.Exit(1)
		}
		text := string(data)
		switch {
		case strings.HasSuffix(file, ".md"):
			problems = append(problems, handFigures(file, text, allowed)...)
		case filepath.Base(file) == "Makefile":
			problems = append(problems, handFigures(file, makefileHelp(text), allowed)...)
		}
		problems = append(problems, directOverlays(file, text)...)
	}
	for _, p := range unusedAllowances(allowed, checked) {
		problems = append(problems, "hack/docrules/allowed.txt: "+p+": allows nothing any more; remove it")
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "docrules: %d problems\n", len(problems))
		os.Exit(1)
	}
}

// helpText is a target's help in a Makefile: what make help prints.
var helpText = regexp.MustCompile(`^[A-Za-z0-9_.%/ -]+:[^=]*?##\s?(.*)$`)

// makefileHelp is a Makefile's text with only its targets' help left,
// every other line blank, so that the figures keep their line numbers.
func makefileHelp(text string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if m := helpText.FindStringSubmatch(line); m != nil {
			lines[i] = m[1]
		} else {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}
