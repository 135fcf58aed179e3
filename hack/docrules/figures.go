package main

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	// runQuote is a quote of a recorded run, written by make docs.
	runQuote = regexp.MustCompile(`(?s)<!-- run .*?<!-- /run -->`)
	fenced   = regexp.MustCompile("(?s)```.*?```")
	// inlineCode holds commands, flags and values to type, not figures.
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	// figure is a number and a unit of time, rate, size or ratio.
	figure = regexp.MustCompile(`(?:^|[^\w.\-/=:])(\d[\d,]*(\.\d+)?)\s?(ms|µs|ns|s|m|min|minutes?|seconds?|hours?|h|KiB|MiB|GiB|KB|MB|GB|bytes|B|%|×|times|GET/s|get/s|QPS|millicores|mcores|cores)(?:$|[^\w/])`)
	// hedge before a figure says it was measured once: "about 20 s".
	hedge = regexp.MustCompile(`(?i)\b(about|around|roughly|took|nearly|almost)\s+$|[≈~]\s*$`)
	// tolerance before a percentage makes it a bound a test or a promise
	// holds, not a measurement: "within 10 %", "more than 10 %", "past 80 %".
	tolerance = regexp.MustCompile(`(?i)\b(within|than|past)\s+$`)
)

// handFigures are the figures of text outside recorded runs' quotes and
// code that look measured, and are not allowed.
func handFigures(file, text string, allowed map[string][]*allowance) []string {
	text = runQuote.ReplaceAllStringFunc(text, blankKeepingLines)
	text = fenced.ReplaceAllStringFunc(text, blankKeepingLines)
	var problems []string
	for i, line := range strings.Split(text, "\n") {
		prose := inlineCode.ReplaceAllString(line, "CODE")
		for _, m := range figure.FindAllStringSubmatchIndex(prose, -1) {
			number, unit := prose[m[2]:m[3]], prose[m[6]:m[7]]
			before := prose[:m[2]]
			measured := m[4] >= 0 || hedge.MatchString(before) || unit == "%" && !tolerance.MatchString(before)
			if !measured || allow(allowed[file], line) {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s:%d: %q looks measured: quote its recorded run (<!-- run NAME value ... -->) or leave the figure out; a derivation of the model goes in hack/docrules/allowed.txt",
				file, i+1, strings.TrimSpace(number+" "+unit)))
		}
	}
	return problems
}

// blankKeepingLines replaces s with its newlines alone, so that the lines
// after it keep their numbers.
func blankKeepingLines(s string) string {
	return strings.Repeat("\n", strings.Count(s, "\n"))
}
