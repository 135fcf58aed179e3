// Command docrules checks two rules of the docs that links and quotes do
// not cover (make verify runs it on README.md, docs/ and the scripts):
//
//   - No figure by hand: a number with a unit of time, rate, size or ratio
//     that looks measured (a decimal, a percentage, or one hedged with
//     "about") is a quote of a recorded run (<!-- run ... --> markers,
//     internal/docruns) or goes. Settings, limits and tolerances are
//     whole numbers and pass; derivations of the model that need a
//     decimal are listed in allowed.txt, each with the line it allows.
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
		if strings.HasSuffix(file, ".md") {
			problems = append(problems, handFigures(file, text, allowed)...)
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
