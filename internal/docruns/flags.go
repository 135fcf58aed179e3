package docruns

import (
	"fmt"
	"regexp"
	"strings"
)

// HelpFunc returns a nodeagent subcommand's --help text.
type HelpFunc func(subcommand string) (string, error)

var helpFlagPattern = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([\w-]+)`)

// CheckCommands says which records' commands name a flag their
// subcommand no longer has, so that no page tells a reader to run what
// would fail.
func CheckCommands(records map[string]*Record, help HelpFunc) []Problem {
	var problems []Problem
	flags := map[string]map[string]bool{}
	for _, name := range Names(records) {
		r := records[name]
		if len(r.Args) == 0 {
			continue
		}
		sub := r.Args[0]
		if flags[sub] == nil {
			text, err := help(sub)
			if err != nil {
				problems = append(problems, Problem{"docs/runs/" + name + ".json", 1, fmt.Sprintf("nodeagent %s --help: %v", sub, err)})
				continue
			}
			flags[sub] = map[string]bool{}
			for _, m := range helpFlagPattern.FindAllStringSubmatch(text, -1) {
				flags[sub][m[1]] = true
			}
		}
		for _, arg := range r.Args[1:] {
			flag, ok := strings.CutPrefix(arg, "--")
			if !ok {
				continue
			}
			flag, _, _ = strings.Cut(flag, "=")
			if !flags[sub][flag] {
				problems = append(problems, Problem{"docs/runs/" + name + ".json", 1,
					fmt.Sprintf("its command `nodeagent %s` has --%s, which `nodeagent %s` no longer has: re-run it with today's flags", strings.Join(r.Args, " "), flag, sub)})
			}
		}
	}
	return problems
}
