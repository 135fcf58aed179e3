package main

import "strings"

// allowance is one line of allowed.txt: a page and a piece of one of its
// lines whose figures are a derivation, not a measurement.
type allowance struct {
	file, phrase string
	used         bool
}

// parseAllowed reads allowed.txt: "FILE: PHRASE" lines, with # comments
// saying why above them.
func parseAllowed(text string) map[string][]*allowance {
	out := map[string][]*allowance{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		file, phrase, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		out[file] = append(out[file], &allowance{file: file, phrase: phrase})
	}
	return out
}

// unusedAllowances are the allowances of the pages checked that covered
// no line.
func unusedAllowances(allowed map[string][]*allowance, checked map[string]bool) []string {
	var out []string
	for file, list := range allowed {
		for _, a := range list {
			if checked[file] && !a.used {
				out = append(out, a.file+": "+a.phrase)
			}
		}
	}
	return out
}
