package docruns

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Problem is one thing wrong with a page's quotes of runs.
type Problem struct {
	File string
	Line int
	What string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.What) }

var (
	openPattern = regexp.MustCompile(`<!-- run ((?:[^-]|-[^-])*?) -->`)
	closeMarker = "<!-- /run -->"
)

// marker is one quote of a run on a page: the bytes of its content, and
// what it asks for.
type marker struct {
	line       int
	start, end int // the content, between the two markers
	run, what  string
	args       []string
}

// markers finds a page's quotes. Markers inside fenced code blocks are
// examples, not quotes.
func markers(file string, text string) ([]marker, []Problem) {
	var out []marker
	var problems []Problem
	fences := fencedRanges(text)
	for _, loc := range openPattern.FindAllStringSubmatchIndex(text, -1) {
		if inRanges(fences, loc[0]) {
			continue
		}
		line := 1 + strings.Count(text[:loc[0]], "\n")
		fields, err := tokens(text[loc[2]:loc[3]])
		if err != nil || len(fields) < 2 {
			problems = append(problems, Problem{file, line, fmt.Sprintf("marker %q: want <!-- run NAME WHAT [ARGS] -->", text[loc[0]:loc[1]])})
			continue
		}
		end := strings.Index(text[loc[1]:], closeMarker)
		if end < 0 {
			problems = append(problems, Problem{file, line, "marker not closed by " + closeMarker})
			continue
		}
		out = append(out, marker{line: line, start: loc[1], end: loc[1] + end, run: fields[0], what: fields[1], args: fields[2:]})
	}
	return out, problems
}

// tokens splits a marker's words; a word in double quotes may hold spaces.
func tokens(s string) ([]string, error) {
	var out []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		if s[0] != '"' {
			word, rest, _ := strings.Cut(s, " ")
			out, s = append(out, word), rest
			continue
		}
		end := strings.Index(s[1:], `"`)
		if end < 0 {
			return nil, fmt.Errorf("unclosed quote in %q", s)
		}
		word, err := strconv.Unquote(s[:end+2])
		if err != nil {
			return nil, err
		}
		out, s = append(out, word), s[end+2:]
	}
	return out, nil
}

// fencedRanges are the byte ranges of a page's fenced code blocks.
func fencedRanges(text string) [][2]int {
	var ranges [][2]int
	open, offset := -1, 0
	for _, line := range strings.SplitAfter(text, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			if open < 0 {
				open = offset
			} else {
				ranges, open = append(ranges, [2]int{open, offset + len(line)}), -1
			}
		}
		offset += len(line)
	}
	return ranges
}

func inRanges(ranges [][2]int, at int) bool {
	for _, r := range ranges {
		if at >= r[0] && at < r[1] {
			return true
		}
	}
	return false
}

// Render returns the page with every quote written from its record, and
// what is wrong with its quotes: an unknown run or figure, or a run the
// page quotes without naming it (a `run` quote of it, or a link to its
// record).
func Render(file, text string, records map[string]*Record) (string, []Problem) {
	found, problems := markers(file, text)
	var b strings.Builder
	last := 0
	named := map[string]bool{}
	for _, m := range found {
		if m.what == "run" || strings.Contains(text, "runs/"+m.run+".json") {
			named[m.run] = true
		}
	}
	for _, m := range found {
		r, ok := records[m.run]
		if !ok {
			problems = append(problems, Problem{file, m.line, fmt.Sprintf("no record of run %q in docs/runs", m.run)})
			continue
		}
		content, err := render(r, m.what, m.args)
		if err != nil {
			problems = append(problems, Problem{file, m.line, err.Error()})
			continue
		}
		if !named[m.run] {
			problems = append(problems, Problem{file, m.line, fmt.Sprintf("quotes run %s without naming it: add <!-- run %s run --><!-- /run --> or a link to its record", m.run, m.run)})
		}
		b.WriteString(text[last:m.start])
		b.WriteString(content)
		last = m.end
	}
	b.WriteString(text[last:])
	return b.String(), problems
}

// Check says where a page's quotes differ from their records: a figure
// edited by hand, or a record re-run without `make docs`.
func Check(file, text string, records map[string]*Record) []Problem {
	rendered, problems := Render(file, text, records)
	if len(problems) > 0 || rendered == text {
		return problems
	}
	want, _ := markers(file, rendered)
	got, _ := markers(file, text)
	for i := range got {
		if i < len(want) && text[got[i].start:got[i].end] != rendered[want[i].start:want[i].end] {
			problems = append(problems, Problem{file, got[i].line, fmt.Sprintf("%s %s %s: the page says %q, the record %q; edited by hand? `make docs` writes it from docs/runs/%s.json",
				got[i].run, got[i].what, strings.Join(got[i].args, " "), clip(text[got[i].start:got[i].end]), clip(rendered[want[i].start:want[i].end]), got[i].run)})
		}
	}
	return problems
}

// clip shortens a quote for a message.
func clip(s string) string {
	if s = strings.TrimSpace(s); len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
