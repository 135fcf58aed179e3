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
	// inlineCode is a code span: a command or a flag to type (commandSpan),
	// or a figure in code font, read as prose.
	inlineCode  = regexp.MustCompile("`[^`\n]*`")
	commandSpan = regexp.MustCompile(`^(-|\$|\./|hack/|(make|go|kubectl|helm|nodeagent|kind|docker|curl|git|sh|bash|cd|kustomize|promtool|crictl|systemctl|taskset|env|time)\b)|=|: |^[\d.]+[A-Za-z%]*$`)
	// htmlComment is a comment of the page's source, not read.
	htmlComment = regexp.MustCompile(`(?s)<!--.*?-->`)
)

// digits and words are a figure's number: digits (with thousands' commas
// and a decimal part), or a number in words, which a space parts from its
// unit.
const (
	digits = `(\d[\d,]*(?:\.\d+)?)\s?`
	words  = `((?i:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|twenty|thirty|forty|fifty|sixty|ninety|a hundred|a thousand|a dozen|half an?))\s+`
)

// unit is what makes a number a measurement: time, size, a rate, a ratio,
// CPU, or a count of requests.
const unit = `(milliseconds?|microseconds?|nanoseconds?|ms|µs|ns|s|m|min|minutes?|seconds?|hours?|h|days?|KiB|MiB|GiB|KB|MB|GB|bytes|B|%|×|times|millicores|mcores|CPU[- ]seconds|CPU-s|` +
	`[A-Za-z]+/s|(?:quorum |cached |kubelet )?(?:GETs?|LISTs?)|gets?|watch(?:es)?|connections?|requests?|reads?|lists?|updates?|writes?|events?|per second|a second)`

var (
	// figure is a number and its unit, perhaps across a line break (the
	// text is read with its line breaks as spaces).
	figure = regexp.MustCompile(`(?:^|[^\w.\-/=:+#])(?:` + digits + `|` + words + `)` + unit + `(?:$|[^\w/])`)
	// estimate is a comparison by hand, a figure without digits: "twice
	// the memory", "several times as long", "a few tenths of a core".
	estimate = regexp.MustCompile(`(?i)(?:^|[^\w-])((?:twice|thrice|(?:several|many|a few|\w+) times|a (?:few )?tenths?|a (?:few )?hundredths?|\w+fold|an order of magnitude)\s+(?:the|as|of|what|more|less|longer|shorter|larger|smaller|faster|slower|fewer|bigger|higher|lower))\b`)
	// ratio is a decimal without a unit: "0.98 of the model".
	ratio = regexp.MustCompile(`(?:^|[^\w.\-/=:+])(\d+\.\d+)(?:$|[^\w.%/])`)
	// hedge before a figure says it was measured, whatever else does:
	// "about 20 s", "took 3 minutes".
	hedge = regexp.MustCompile(`(?i)(\babout|\baround|\broughly|\btook|\btakes|\bnearly|\balmost|[≈~])\s*$`)
	// httpStatuses are responses by their status code.
	httpStatuses = regexp.MustCompile(`^[1-5]\d\ds$`)
	// version before a decimal makes it a release: "Go 1.26", "v1.28".
	version = regexp.MustCompile(`(?i)(\bgo|\bv|\bversion|\brelease|\bkubernetes|\bkind)\s*$`)
	// setting before a whole number makes it a setting, not a result: "S =
	// 1 m", "every 5 s", "--sync-frequency 1m", "a TTL of 30 s".
	setting = regexp.MustCompile(`(?i)(=|\bevery|\bdefaults?(?: to| of| is|,)?|\b(?:set|sets|setting) (?:to|at)|\bcounts? as|\bcounted as|--[a-z-]+|\b(?:TTL|period|interval|timeout|lifetime|window|resync|backoff|limits?|requests?|budget|threshold|share|sync frequency|syncFrequency|retention|scrape interval)(?: of| is)?|\b(?:doubling|growing|rising|up) to|\bper|\bheld|\bfor|\bafter|\bbefore|\blast|=\s*[^;.()=]*?(?:\band|\bor|\bto|,)|[+−·×]|\bof\s+[A-Za-z]+\s*=\s*[^,;()]*,)\s*\(?\s*$`)
	// bound before a whole number makes it a bound a test or a promise
	// holds: "at most 1 s", "under 2 minutes", "≤ 600 MiB". "within" is not
	// one: results are written so ("agree within 2 %"), and a bound
	// written so is allowed by name in allowed.txt.
	// settingAfter after a whole number says what setting or bound it is:
	// "a 100 ms loop", "a 1 s bound", "the 10 % tolerance".
	settingAfter = regexp.MustCompile(`(?i)^\s*(?:[a-z-]+ )?(loop|period|interval|timeout|budget|bound|goal|target|per mode|a mode|per phase|each|cadence|limit|tolerance|margin|cap|default|setting|window|poll|polls|request|backoff|tick|ticks|grid|pass|passes|housekeeping|resync|lifetime|deadline|grace|wait|sleep|delay bound|apart|or less|at most|or more|at least)\b`)
	bound        = regexp.MustCompile(`(?i)(\bat (?:most|least)|\bbounds? (?:\w+ )?at|\b(?:longer|shorter|larger|smaller) than|\bunder|\bbelow|\bover|\babove|\bup to|\bno more than|\bmore than|\bless than|\bfewer than|\bbeyond|\bpast|≤|<|≥|>|\bgoal(?: of| is)?|\btarget(?: of| is)?|\bbound(?: of| is)?|\bcap(?: of)?)\s*[*_]*\s*$`)
)

// handFigures are the figures of text outside recorded runs' quotes and
// commands that look measured, and are not allowed: every decimal, ratio
// and percentage, and every whole number with a unit that no setting or
// bound word before it explains.
func handFigures(file, text string, allowed map[string][]*allowance) []string {
	text = runQuote.ReplaceAllStringFunc(text, blankKeepingLines)
	text = fenced.ReplaceAllStringFunc(text, blankKeepingLines)
	text = htmlComment.ReplaceAllStringFunc(text, blankKeepingLines)
	prose := inlineCode.ReplaceAllStringFunc(text, func(span string) string {
		if commandSpan.MatchString(strings.Trim(span, "`")) {
			return strings.Repeat("x", len(span))
		}
		return " " + span[1:len(span)-1] + " "
	})
	flat, lineOf := flatten(prose)
	var problems []string
	for _, f := range measuredFigures(flat) {
		line := lineOf[f.start]
		if allowedFigure(allowed[file], flat, f) {
			continue
		}
		problems = append(problems, fmt.Sprintf("%s:%d: %q looks measured: quote its recorded run (<!-- run NAME value ... -->), say it is a setting or a bound (\"every\", \"at most\", ...), or leave it out; a derivation of the model goes in hack/docrules/allowed.txt",
			file, line+1, strings.Join(strings.Fields(flat[f.start:f.end]), " ")))
	}
	return problems
}

// flatten is text with every run of white space, line breaks included, a
// single space, and the line of each of its bytes: a figure or a phrase
// reads the same wherever the lines break.
func flatten(text string) (string, []int) {
	var b strings.Builder
	var lineOf []int
	line, space := 0, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\n' || c == ' ' || c == '\t' {
			if c == '\n' {
				line++
			}
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
			lineOf = append(lineOf, line)
		}
		space = false
		b.WriteByte(c)
		lineOf = append(lineOf, line)
	}
	return b.String(), lineOf
}

// span is one figure's place in the text.
type span struct{ start, end int }

// measuredFigures are the figures of flat that look measured.
func measuredFigures(flat string) []span {
	var out []span
	for _, m := range figure.FindAllStringSubmatchIndex(flat, -1) {
		start, end := m[2], m[3]
		if start < 0 {
			start, end = m[4], m[5]
		}
		unitText := flat[m[6]:m[7]]
		before := flat[max(0, start-40):start]
		whole, percent := !strings.Contains(flat[start:end], "."), unitText == "%"
		after := flat[m[7]:min(len(flat), m[7]+30)]
		if strings.HasPrefix(flat[end:], "·") || strings.HasSuffix(before, "·") || unitText == "×" && startsWithDigit(after) {
			continue // a coefficient of a formula, "1.5·S", or a product, "20 × 10 pods"
		}
		if httpStatuses.MatchString(flat[start:m[7]]) {
			continue // "429s": responses, not seconds
		}
		if whole && !hedge.MatchString(before) && (!percent && (setting.MatchString(before) || settingAfter.MatchString(after)) || bound.MatchString(before)) {
			continue
		}
		out = append(out, span{start, m[7]})
	}
	for _, m := range estimate.FindAllStringSubmatchIndex(flat, -1) {
		if !isEstimate(flat[m[2]:m[3]]) {
			continue
		}
		out = append(out, span{m[2], m[3]})
	}
	for _, m := range ratio.FindAllStringSubmatchIndex(flat, -1) {
		formula := strings.HasPrefix(flat[m[3]:], "·") || strings.HasSuffix(flat[:m[2]], "·")
		if !covered(out, m[2]) && !formula && !version.MatchString(flat[max(0, m[2]-12):m[2]]) {
			out = append(out, span{m[2], m[3]})
		}
	}
	return out
}

func covered(spans []span, at int) bool {
	for _, s := range spans {
		if at >= s.start && at < s.end {
			return true
		}
	}
	return false
}

// allowedFigure says whether an allowance's phrase holds figure f in the
// page's text (read with its line breaks as spaces): only the figures
// inside the phrase, not the rest of its line or paragraph.
func allowedFigure(allowances []*allowance, flat string, f span) bool {
	for _, a := range allowances {
		for from := max(0, f.end-len(a.phrase)); from <= f.start; {
			i := strings.Index(flat[from:min(len(flat), f.start+len(a.phrase))], a.phrase)
			if i < 0 {
				break
			}
			if start := from + i; f.start >= start && f.end <= start+len(a.phrase) {
				a.used = true
				return true
			}
			from += i + 1
		}
	}
	return false
}

// blankKeepingLines replaces s with its newlines alone, so that the lines
// after it keep their numbers.
func blankKeepingLines(s string) string {
	return strings.Repeat("\n", strings.Count(s, "\n"))
}

func startsWithDigit(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// isEstimate says whether a match of estimate compares by hand: "N times"
// only with a number word, several, many or a few ("three times as long",
// not "at times as").
func isEstimate(match string) bool {
	words := strings.Fields(strings.ToLower(match))
	if words[1] != "times" {
		return true
	}
	switch words[0] {
	case "several", "many", "few", "two", "three", "four", "five", "six", "ten", "hundred", "thousand":
		return true
	}
	return false
}
