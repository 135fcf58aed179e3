// Package doclinks finds the relative links of Markdown files that lead
// nowhere: a file that does not exist, or an anchor that no heading of the
// target makes. Anchors are GitHub's: a heading's text, lower-cased, with
// everything but letters, digits, spaces, hyphens and underscores removed
// and spaces turned into hyphens; a repeated heading gets -1, -2, ...
// Links inside fenced code blocks and inline code are not links; absolute
// URLs are not checked (no network here), but for the project's own
// (ProjectURL...), which are checked as the file and anchor in this
// checkout they name, in any file given: a Prometheus rule's runbook_url
// or a Go string that points into docs/ breaks as a Markdown link does.
package doclinks

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Broken is one link that leads nowhere.
type Broken struct {
	File   string // the Markdown file, as given
	Line   int
	Target string // the link as written
	Reason string
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Target, b.Reason)
}

// ProjectURL is where the project's files are read on the web; a URL under
// it names a file of this checkout.
const ProjectURL = "https://github.com/nodeagent-io/nodeagent/blob/main/"

var (
	projectURLPattern = regexp.MustCompile(regexp.QuoteMeta(ProjectURL) + `[^\s"'<>()\x60]+`)
	linkPattern       = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	inlineCodePattern = regexp.MustCompile("`[^`]*`")
	headingPattern    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// Slug is the anchor GitHub makes of a heading's text.
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// document is what one Markdown file offers and asks: its anchors, and its
// links with their lines.
type document struct {
	anchors map[string]bool
	links   []link
}

type link struct {
	line   int
	target string
}

// parse reads a Markdown file's headings and links, and, in any file, the
// project's URLs.
func parse(data []byte, markdown bool) document {
	doc := document{anchors: map[string]bool{}}
	seen := map[string]int{}
	fenced := false
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		for _, url := range projectURLPattern.FindAllString(line, -1) {
			doc.links = append(doc.links, link{line: n, target: url})
		}
		if !markdown {
			continue
		}
		if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := headingPattern.FindStringSubmatch(line); m != nil {
			slug := Slug(m[1])
			if k := seen[slug]; k > 0 {
				doc.anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				doc.anchors[slug] = true
			}
			seen[slug]++
		}
		for _, m := range linkPattern.FindAllStringSubmatch(inlineCodePattern.ReplaceAllString(line, ""), -1) {
			if !strings.HasPrefix(m[1], ProjectURL) { // already taken
				doc.links = append(doc.links, link{line: n, target: m[1]})
			}
		}
	}
	return doc
}

// Check reads the files and returns the links that lead nowhere: the
// relative links of the Markdown files among them, and the project's URLs
// in any of them, which name files relative to root.
func Check(root string, files []string) ([]Broken, error) {
	docs := map[string]document{}
	read := func(path string) (document, error) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return document{}, err
		}
		if d, ok := docs[abs]; ok {
			return d, nil
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return document{}, err
		}
		docs[abs] = parse(data, strings.HasSuffix(abs, ".md"))
		return docs[abs], nil
	}
	var broken []Broken
	for _, file := range files {
		doc, err := read(file)
		if err != nil {
			return nil, err
		}
		for _, l := range doc.links {
			path, anchor, _ := strings.Cut(l.target, "#")
			base := filepath.Dir(file)
			if rest, ok := strings.CutPrefix(path, ProjectURL); ok {
				path, base = rest, root
			} else if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			target := file
			if path != "" {
				target = filepath.Join(base, path)
				if _, err := os.Stat(target); err != nil {
					broken = append(broken, Broken{file, l.line, l.target, "no such file"})
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			d, err := read(target)
			if err != nil {
				return nil, err
			}
			if !d.anchors[anchor] {
				broken = append(broken, Broken{file, l.line, l.target, "no heading makes this anchor"})
			}
		}
	}
	return broken, nil
}
